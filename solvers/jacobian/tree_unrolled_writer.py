"""The straight-line blocks of jacobian.tree_unrolled's kernel for one tree layout: forward
kinematics, J J^T in closed form, its Cholesky factorisation and the step, written out entry by
entry as Python source (tree_unrolled's module docstring says how the sums are laid out)."""

from __future__ import annotations

# The rotation matrix of a quaternion (row-major) from forward's products of its entries.
_MATRIX = (
    "1.0 - yy_ - zz_", "xy_ - wz_", "xz_ + wy_",
    "xy_ + wz_", "1.0 - xx_ - zz_", "yz_ - wx_",
    "xz_ - wy_", "yz_ + wx_", "1.0 - xx_ - yy_",
)  # fmt: skip


class Writer:
    """The straight-line blocks of one layout's kernel (names: C/N the world quaternions (current/
    trial), h heads, p ends, E errors, S squared distances (of the last pose computed); Q the start,
    B the rests (the locals returned in N's names); O offsets, L links, T targets; R{e}_{i} end e from head i,
    A J J^T (upper triangle), K its factor, V its inverse diagonal, X the solution, w the steps
    (then the turns G with g))."""

    def __init__(self, parents: list[int], bones: list[int], owners: list[list[int]]) -> None:
        self.parents, self.bones, self.owners = parents, bones, owners
        self.m, self.count, self.rows = len(parents), len(bones), 3 * len(bones)

    @staticmethod
    def _lines(lines: list[str], depth: int) -> str:
        pad = "    " * depth
        return "\n".join(pad + line for line in lines)

    def unpack(self) -> str:
        """The arguments as names: the start locals Q, the rests B, offsets O, links L, targets T."""
        m, count = self.m, self.count
        start = [f"Q{i}_{k}" for i in range(m) for k in range(4)]
        measures = [f"B{i}_{k}" for i in range(m) for k in range(4)] + [f"O{i}_{k}" for i in range(m) for k in range(3)]
        measures += [f"L{e}_{k}" for e in range(count) for k in range(3)]
        targets = [f"T{e}_{k}" for e in range(count) for k in range(3)]
        given = ((start, "Q"), (measures, "O"), (targets, "T"))
        return self._lines([f"{', '.join(names)}, = {arg}" for names, arg in given], 1)

    @staticmethod
    def _product(to: list[str], a: list[str], b: list[str]) -> list[str]:
        """`to` = the Hamilton product a b (names of w, x, y, z)."""
        return [
            f"{to[0]} = {a[0]} * {b[0]} - {a[1]} * {b[1]} - {a[2]} * {b[2]} - {a[3]} * {b[3]}",
            f"{to[1]} = {a[0]} * {b[1]} + {a[1]} * {b[0]} + {a[2]} * {b[3]} - {a[3]} * {b[2]}",
            f"{to[2]} = {a[0]} * {b[2]} - {a[1]} * {b[3]} + {a[2]} * {b[0]} + {a[3]} * {b[1]}",
            f"{to[3]} = {a[0]} * {b[3]} + {a[1]} * {b[2]} - {a[2]} * {b[1]} + {a[3]} * {b[0]}",
        ]

    def unknowns_in(self, depth: int) -> str:
        """The unknowns C_i = C_parent rest_i L_i of the start locals: each bone's world quaternion
        (unnormalised between steps; a root's rest holds the base frame)."""
        out = []
        for i, p in enumerate(self.parents):
            names = [[f"{q}{i}_{k}" for k in range(4)] for q in ("C" if p < 0 else "N", "B", "Q")]
            out += self._product(*names)
            if p >= 0:
                out += self._product(*([f"{q}{j}_{k}" for k in range(4)] for q, j in (("C", i), ("C", p), ("N", i))))
        return self._lines(out, depth)

    @staticmethod
    def _conjugate_product(to: list[str], a: list[str], b: list[str]) -> list[str]:
        """`to` = a^* b, the Hamilton product with a's conjugate (its signs written in)."""
        return [
            f"{to[0]} = {a[0]} * {b[0]} + {a[1]} * {b[1]} + {a[2]} * {b[2]} + {a[3]} * {b[3]}",
            f"{to[1]} = {a[0]} * {b[1]} - {a[1]} * {b[0]} - {a[2]} * {b[3]} + {a[3]} * {b[2]}",
            f"{to[2]} = {a[0]} * {b[2]} + {a[1]} * {b[3]} - {a[2]} * {b[0]} - {a[3]} * {b[1]}",
            f"{to[3]} = {a[0]} * {b[3]} - {a[1]} * {b[2]} + {a[2]} * {b[1]} - {a[3]} * {b[0]}",
        ]

    def unknowns_out(self, depth: int) -> str:
        """The locals rest_i^-1 C_parent^-1 C_i, normalised, in N's names (the rests are unit quaternions;
        the world quaternions' lengths divide out)."""
        out = []
        for i, p in enumerate(self.parents):
            z, b, c = ([f"{q}{i}_{k}" for k in range(4)] for q in "NBC")
            if p >= 0:
                w = [f"g{i}", *(f"w{i}_{k}" for k in range(3))]
                out += self._conjugate_product(w, [f"C{p}_{k}" for k in range(4)], c)
                c = w
            out += self._conjugate_product(z, b, c)
            out.append(f"n_ = sqrt({z[0]} * {z[0]} + {z[1]} * {z[1]} + {z[2]} * {z[2]} + {z[3]} * {z[3]})")
            out.append(f"{', '.join(z)} = {z[0]} / n_, {z[1]} / n_, {z[2]} / n_, {z[3]} / n_")
        return self._lines(out, depth)

    def forward(self, q: str, depth: int) -> str:
        """Heads h, ends p, errors E and squared distances S of the world quaternions named `q`.
        Each bone's frame (the matrix of its quaternion) lives only while its children's heads and
        its effectors' ends are taken from it (the step needs no frame: it turns the quaternions)."""
        out = []
        children = [[c for c, p in enumerate(self.parents) if p == i] for i in range(self.m)]
        for i, p in enumerate(self.parents):
            ww, wx, wy, wz = (f"{q}{i}_{k}" for k in range(4))
            if p < 0:  # a root's head: its offset in the skeleton's space
                out.append(f"h{i}_0, h{i}_1, h{i}_2 = O{i}_0, O{i}_1, O{i}_2")
            out += [
                f"t_ = 2.0 / ({ww} * {ww} + {wx} * {wx} + {wy} * {wy} + {wz} * {wz})",
                f"tx_, ty_, tz_ = t_ * {wx}, t_ * {wy}, t_ * {wz}",
                f"xx_, yy_, zz_ = tx_ * {wx}, ty_ * {wy}, tz_ * {wz}",
                f"xy_, xz_, yz_ = tx_ * {wy}, tx_ * {wz}, ty_ * {wz}",
                f"wx_, wy_, wz_ = tx_ * {ww}, ty_ * {ww}, tz_ * {ww}",
            ]
            ends = [e for e, b in enumerate(self.bones) if b == i]
            if len(children[i]) + len(ends) == 1:  # each entry read once: written in place (the same sums)
                frame = [f"({entry})" for entry in _MATRIX]
            else:
                frame = [f"f_{k}" for k in range(9)]
                out += [f"{', '.join(frame[r : r + 3])} = {', '.join(_MATRIX[r : r + 3])}" for r in (0, 3, 6)]
            for c in children[i]:
                out += self._moved(f"h{c}", f"h{i}", frame, [f"O{c}_{k}" for k in range(3)])
            for e in ends:
                out += self._moved(f"p{e}", f"h{i}", frame, [f"L{e}_{k}" for k in range(3)])
                out.append(f"E{e}_0, E{e}_1, E{e}_2 = T{e}_0 - p{e}_0, T{e}_1 - p{e}_1, T{e}_2 - p{e}_2")
                out.append(f"S{e} = E{e}_0 * E{e}_0 + E{e}_1 * E{e}_1 + E{e}_2 * E{e}_2")
        return self._lines(out, depth)

    @staticmethod
    def _moved(to: str, head: str, frame: list[str], vector: list[str]) -> list[str]:
        """`to` = `head` + `frame` @ `vector`, per axis (`frame`: the matrix's 9 entries, row-major)."""
        return [
            f"{to}_{r} = {head}_{r} + {frame[3 * r]} * {vector[0]} + {frame[3 * r + 1]} * {vector[1]}"
            f" + {frame[3 * r + 2]} * {vector[2]}"
            for r in range(3)
        ]

    def normal(self, depth: int) -> str:
        """A (upper triangle), `trace`, and `removable` (|J^T e|^2 x rows / trace) at the current pose."""
        out = []
        for i, effectors in enumerate(self.owners):
            for e in effectors:
                out.append(f"R{e}_{i}_0, R{e}_{i}_1, R{e}_{i}_2 = p{e}_0 - h{i}_0, p{e}_1 - h{i}_1, p{e}_2 - h{i}_2")
        for e in range(self.count):
            for f in range(e, self.count):
                common = [i for i, owned in enumerate(self.owners) if e in owned and f in owned]
                if not common:
                    out += [f"A{3 * e + r}_{3 * f + c} = 0.0" for r in range(3) for c in range(3)]
                    continue
                # A_rr = sum_i (r_e . r_f - r_f,r r_e,r): the other two axes' products, summed per axis once
                for k in range(3):
                    out.append(f"d{k}_ = {' + '.join(f'R{e}_{i}_{k} * R{f}_{i}_{k}' for i in common)}")
                for r in range(3):
                    for c in range(3):
                        if e == f and c < r:
                            continue
                        if r == c:
                            out.append(f"A{3 * e + r}_{3 * f + c} = d{(r + 1) % 3}_ + d{(r + 2) % 3}_")
                            continue
                        outer = " + ".join(f"R{f}_{i}_{r} * R{e}_{i}_{c}" for i in common)
                        out.append(f"A{3 * e + r}_{3 * f + c} = -({outer})")
        rows = self.rows
        out.append(f"trace = {' + '.join(f'A{r}_{r}' for r in range(rows))}")
        error = [f"E{r // 3}_{r % 3}" for r in range(rows)]
        # e^T A e = sum_r e_r (A_rr e_r + sum_{c > r} A_rc 2 e_c)
        twice = [f"2.0 * {error[c]}" for c in range(rows)]
        terms = []
        for r in range(rows):
            inner = " + ".join([f"A{r}_{r} * {error[r]}"] + [f"A{r}_{c} * g{c}_" for c in range(r + 1, rows)])
            terms.append(f"{error[r]} * ({inner})")
        # (only while the error damps the step: error_damping x removable is 0 after)
        out.append("if error_damping:")
        out += [f"    g{c}_ = {twice[c]}" for c in range(1, rows)]
        out.append(f"    removable = ({' + '.join(terms)}) * {rows} / max(trace, 1e-300)")
        out.append("else:")
        out.append("    removable = 0.0")
        return self._lines(out, depth)

    def solve(self, depth: int) -> str:
        """X with (A + damping I) X = E: Cholesky, K lower, V the inverse diagonal."""
        out, n = [], self.rows
        for j in range(n):
            for i in range(j, n):
                terms = "".join(f" - K{i}_{k} * K{j}_{k}" for k in range(j))
                if i == j:
                    out.append(f"V{j} = 1.0 / sqrt(A{j}_{j} + damping{terms})")
                else:
                    out.append(f"K{i}_{j} = (A{j}_{i}{terms}) * V{j}")
        for i in range(n):
            terms = "".join(f" - K{i}_{k} * X{k}" for k in range(i))
            # (Y of K Y = E / 2, in X's names: X comes halved, the step's half turn (tree_plain's
            # (1, d/2)) exactly, a power of two)
            out.append(f"X{i} = (0.5 * E{i // 3}_{i % 3}{terms}) * V{i}")
        for i in range(n - 1, -1, -1):
            terms = "".join(f" - K{k}_{i} * X{k}" for k in range(i + 1, n))
            out.append(f"X{i} = (X{i}{terms}) * V{i}")
        return self._lines(out, depth)

    def step(self, depth: int) -> str:
        """w_i = J^T X joint by joint (world axes; X halved: half the step), l_i its squared length,
        `total` their sum."""
        out = []
        for i, effectors in enumerate(self.owners):
            x = " + ".join(f"R{e}_{i}_1 * X{3 * e + 2} - R{e}_{i}_2 * X{3 * e + 1}" for e in effectors)
            y = " + ".join(f"R{e}_{i}_2 * X{3 * e} - R{e}_{i}_0 * X{3 * e + 2}" for e in effectors)
            z = " + ".join(f"R{e}_{i}_0 * X{3 * e + 1} - R{e}_{i}_1 * X{3 * e}" for e in effectors)
            out += [
                f"w{i}_0 = {x}",
                f"w{i}_1 = {y}",
                f"w{i}_2 = {z}",
                f"l{i}_ = w{i}_0 * w{i}_0 + w{i}_1 * w{i}_1 + w{i}_2 * w{i}_2",
            ]
        out.append(f"total = {' + '.join(f'l{i}_' for i in range(self.m))}")
        return self._lines(out, depth)

    def largest_turn(self) -> str:
        """The largest l_i (one value: a one-bone layout)."""
        turns = ", ".join(f"l{i}_" for i in range(self.m))
        return turns if self.m == 1 else f"max({turns})"

    def shorten(self, depth: int) -> str:
        """Every w_i times `scale` (a step shortened to the radius)."""
        out = []
        for i in range(self.m):
            out.append(f"w{i}_0, w{i}_1, w{i}_2 = w{i}_0 * scale, w{i}_1 * scale, w{i}_2 * scale")
        return self._lines(out, depth)

    def trial(self, depth: int) -> str:
        """N_i = G_i C_i: each bone's world quaternion turned by G_i = G_parent (1, w_i), w_i half the
        world step (shortened to the radius). That is tree_plain's turn of the local quaternion,
        C_i (1, d_i/2) with d_i = F_i^T 2 w_i in the bone's own axes, since C_i (1, d_i/2) C_i^-1 =
        (1, w_i) up to C_i's length, below the parent's turned world quaternion."""
        out = []
        for i, p in enumerate(self.parents):
            # G_i in g_i and w_i's names (w_i is read only here)
            g, c, n = [f"g{i}", *(f"w{i}_{k}" for k in range(3))], *([f"{q}{i}_{k}" for k in range(4)] for q in "CN")
            if p >= 0:  # G_i = G_p (1, v_i)
                a, v = [f"g{p}", *(f"w{p}_{k}" for k in range(3))], g[1:]
                # a root's G_p = (1, v_p): its 1.0 written in, and 1.0 * x as x (the same bits)
                scaled = [f"{a[0]} * {x}" for x in v] if self.parents[p] >= 0 else v
                first = a[0] if self.parents[p] >= 0 else "1.0"
                out += [
                    f"{g[0]}, {g[1]}, {g[2]}, {g[3]} = ("
                    f"{first} - {a[1]} * {v[0]} - {a[2]} * {v[1]} - {a[3]} * {v[2]}, "
                    f"{a[1]} + {scaled[0]} + {a[2]} * {v[2]} - {a[3]} * {v[1]}, "
                    f"{a[2]} + {scaled[1]} + {a[3]} * {v[0]} - {a[1]} * {v[2]}, "
                    f"{a[3]} + {scaled[2]} + {a[1]} * {v[1]} - {a[2]} * {v[0]})",
                ]
                out += self._product(n, g, c)
            else:  # G_i = (1, v_i)
                v = g[1:]
                out += [
                    f"{n[0]} = {c[0]} - {v[0]} * {c[1]} - {v[1]} * {c[2]} - {v[2]} * {c[3]}",
                    f"{n[1]} = {c[1]} + {c[0]} * {v[0]} + {v[1]} * {c[3]} - {v[2]} * {c[2]}",
                    f"{n[2]} = {c[2]} + {c[0]} * {v[1]} + {v[2]} * {c[1]} - {v[0]} * {c[3]}",
                    f"{n[3]} = {c[3]} + {c[0]} * {v[2]} + {v[0]} * {c[2]} - {v[1]} * {c[1]}",
                ]
        return self._lines(out, depth)

    def accept(self, depth: int) -> str:
        """The trial's unknowns become the current ones (its frames, heads, ends and errors are in
        the current names already)."""
        pairs = [(f"C{i}_{k}", f"N{i}_{k}") for i in range(self.m) for k in range(4)]
        out = []
        for start in range(0, len(pairs), 24):
            chunk = pairs[start : start + 24]
            out.append(f"{', '.join(a for a, _ in chunk)} = {', '.join(b for _, b in chunk)}")
        return self._lines(out, depth)

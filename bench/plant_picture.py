"""The README's picture of a bake that honours contacts: the feet's paths seen from above and their
heights over time, before (light) and after (dark), drawn with numpy into a small PNG (no plotting
library: matplotlib is not a dependency of the extension or its venvs)."""

from __future__ import annotations

import struct
import zlib

import numpy as np

WIDTH, HEIGHT, MARGIN = 960, 300, 16
COLOURS = {  # (before, after) per foot
    0: ((150, 180, 235), (20, 60, 170)),
    1: ((240, 170, 140), (190, 50, 20)),
}
GROUND = (90, 90, 90)
LATERAL = 4.0


def write_png(path: str, pixels: np.ndarray) -> None:
    """An (h, w, 3) uint8 image as an RGB PNG."""
    h, w, _ = pixels.shape
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(
            b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
        )


def _line(image: np.ndarray, box, xs: np.ndarray, ys: np.ndarray, bounds, colour, thick: int = 1) -> None:
    """Polyline through (xs, ys) in data units, mapped into `box` (x0, y0, x1, y1 pixels) by
    `bounds` (xmin, xmax, ymin, ymax), y up."""
    x0, y0, x1, y1 = box
    xmin, xmax, ymin, ymax = bounds
    px = x0 + (xs - xmin) / (xmax - xmin) * (x1 - x0)
    py = y1 - (ys - ymin) / (ymax - ymin) * (y1 - y0)
    steps = int(np.ceil(np.max(np.hypot(np.diff(px), np.diff(py)), initial=0.0))) + 1
    t = np.linspace(0.0, len(px) - 1, (len(px) - 1) * steps + 1)
    fx, fy = np.interp(t, np.arange(len(px)), px), np.interp(t, np.arange(len(py)), py)
    for dx in range(-(thick // 2), thick - thick // 2):
        for dy in range(-(thick // 2), thick - thick // 2):
            cx = np.clip(np.round(fx).astype(int) + dx, x0, x1 - 1)
            cy = np.clip(np.round(fy).astype(int) + dy, y0, y1 - 1)
            image[cy, cx] = colour


def draw(path: str, before, after, floor: float, fps: float) -> None:
    """`before`, `after`: per foot rig.contacts.FootTrack (world; z up); `floor` the ground's height."""
    image = np.full((HEIGHT, WIDTH, 3), 255, dtype=np.uint8)
    half = WIDTH // 2
    top = (MARGIN, MARGIN, half - MARGIN, HEIGHT - MARGIN)
    side = (half + MARGIN, MARGIN, WIDTH - MARGIN, HEIGHT - MARGIN)
    points = np.concatenate([t.toe for t in (*before, *after)])
    lo, hi = points[:, :2].min(axis=0), points[:, :2].max(axis=0)
    centre, span = (lo + hi) / 2.0, float(max(hi - lo)) * 0.55 + 1e-6
    aspect = (top[2] - top[0]) / (top[3] - top[1])
    # From above: the longer horizontal extent across the box.
    along = int(np.argmax(hi - lo))
    across = 1 - along
    # Across the walk at LATERAL times the scale along it: the feet's sideways drift shows.
    bounds_top = (
        centre[along] - span,
        centre[along] + span,
        centre[across] - span / aspect / LATERAL,
        centre[across] + span / aspect / LATERAL,
    )
    heights = [t.toe[:, 2] - floor for t in (*before, *after)]
    top_height = max(float(np.max(h)) for h in heights)
    frames = len(before[0].toe)
    bounds_side = (0.0, (frames - 1) / fps, min(-0.01, min(float(np.min(h)) for h in heights)), top_height * 1.05)
    seconds = np.arange(frames) / fps
    _line(image, side, np.array([0.0, seconds[-1]]), np.zeros(2), bounds_side, GROUND)
    for stage, tracks in enumerate((before, after)):
        for foot, track in enumerate(tracks):
            colour = COLOURS[foot % 2][stage]
            thick = 1 if stage == 0 else 2
            _line(image, top, track.toe[:, along], track.toe[:, across], bounds_top, colour, thick)
            _line(image, side, seconds, track.toe[:, 2] - floor, bounds_side, colour, thick)
    image[:, half] = (200, 200, 200)
    write_png(path, image)

"""The outcome corpus (issue 19, item 6): what the extension produced in every Blender-tier test,
recorded so that a refactor can be shown to reproduce it bit for bit (tools/compare_corpus.py).

Active only when CHAIN_IK_CORPUS names an output folder (conftest.py registers it then; without
the variable this module is not even imported). One JSON line per record, one file per test
module (`<module>.jsonl`), keyed by test node id, kind and order within the test:

- "operator": every call of a chain_ik operator (execute, invoke, modal; the outermost only),
  with the properties the caller set, the returned set, every report in order, and the state after.
- "app": every call of a public app-level solve/bake function (`<package>.app.*`, name containing
  "solve" or "bake") made directly from a test file, with its return value and the state after.
- "live": after a depsgraph update outside those calls, each armature with a live chain whose state
  changed since the last record (Live's solve, or the test's own edit). No frame-change handler:
  the extension reads that list (see _HANDLERS); a solve on a frame change shows at the next update.
- "cli": every run of cli.py through subprocess.run: arguments, exit status, output, its --json
  summary and the state of the file it saved (--output, read by outcome_state.py in a subprocess).
- "end": the state when the test function returned, and how it ended.

The state is outcome_state.state(); an armature's or action's state equal to the previous record's
of the same test is written "unchanged". Time figures are left out or written "<t>" (see
outcome_state). How it watches, without mocking anything: the operator classes' execute/invoke/
modal are wrapped (the original runs unchanged) and their `report` is read through a
`__getattribute__` that passes each call on to Blender's own; app functions are wrapped in their
modules; subprocess.run is wrapped; a persistent handler is appended after Live's.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import json
import subprocess
import sys
from pathlib import Path

import bpy
import outcome_state
import pytest
from outcome_state import is_time_name

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parents[1]
PACKAGE = "chain_ik"
ENV = "CHAIN_IK_CORPUS"
_recorder: Recorder | None = None


class Recorder:
    """Records into `out`; a pytest plugin (the hooks below) once `activate` registers it."""

    def __init__(self, out: Path, config) -> None:
        self.out = out
        self.config = config
        self._replacements: tuple[tuple[str, str], ...] | None = None
        self.files: dict[str, object] = {}
        self.counts: dict[str, int] = {}
        self.test: str | None = None
        self.depth = 0  # inside a recorded call: nothing else records
        self.reports: list = []
        self._begin(None)

    def _begin(self, test: str | None) -> None:
        self.test = test
        self.seq: dict[str, int] = {}
        self.order = 0
        self.last: dict[tuple[str, str], object] = {}  # (section, name) -> last full state written

    # -- records
    @property
    def replacements(self) -> tuple[tuple[str, str], ...]:
        """This run's paths, named: pytest's temporary folder (numbered per run), the checkout, Python."""
        if self._replacements is None:
            basetemp = str(self.config._tmp_path_factory.getbasetemp())  # set up after configure
            self._replacements = ((basetemp, "<tmp>"), (str(REPO), "<repo>"), (sys.executable, "<python>"))
        return self._replacements

    def text(self, value: str) -> str:
        return outcome_state.normal_text(value, self.replacements)

    def record(self, kind: str, name: str, **fields) -> None:
        if self.test is None:
            return
        try:
            fields["state"] = self._deduplicated(outcome_state.state())
        except Exception as exc:  # noqa: BLE001 - the recorder must never break a test
            fields["state"] = {"recorder_error": f"{type(exc).__name__}: {exc}"}
        seq = self.seq.get(kind, 0)
        self.seq[kind] = seq + 1
        self.order += 1
        line = {"test": self.test, "kind": kind, "seq": seq, "order": self.order, "name": name, **fields}
        module = Path(self.test.split("::")[0]).stem
        handle = self.files.get(module)
        if handle is None:
            handle = self.files[module] = open(self.out / f"{module}.jsonl", "w", encoding="utf-8")  # noqa: SIM115
        handle.write(json.dumps(line, separators=(",", ":"), default=lambda v: f"<{type(v).__name__}>") + "\n")
        handle.flush()
        self.counts[module] = self.counts.get(module, 0) + 1

    def _deduplicated(self, state: dict) -> dict:
        for section in ("armatures", "actions"):
            for key in [k for k in self.last if k[0] == section and k[1] not in state[section]]:
                del self.last[key]  # removed: if it comes back, it is written in full
            for name, value in state[section].items():
                key = (section, name)
                if self.last.get(key) == value:
                    state[section][name] = "unchanged"
                else:
                    self.last[key] = value
        return state

    def summary(self, value, depth: int = 4):
        """A returned value as JSON: dataclasses and objects by their public fields, arrays as lists,
        Blender data by its path; time figures as "<t>". Reads stored fields only (no properties; a lazy
        field by the property its metadata "read_as" names, realised)."""
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bpy.types.bpy_struct):
            return self.text(repr(value))
        if isinstance(value, enum.Enum):
            return value.name
        if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy, without importing it
            return value.tolist()
        if depth <= 0:
            return f"<{type(value).__name__}>"
        if isinstance(value, dict):
            return {str(k): "<t>" if is_time_name(str(k)) else self.summary(v, depth - 1) for k, v in value.items()}
        if isinstance(value, (list, tuple)) or type(value).__module__ == "mathutils":
            return [self.summary(v, depth - 1) for v in value]
        if isinstance(value, (set, frozenset)):
            return sorted((self.summary(v, depth - 1) for v in value), key=repr)
        if dataclasses.is_dataclass(value):  # a lazy field by what reads it (metadata "read_as")
            names = [f.metadata.get("read_as", f.name) for f in dataclasses.fields(value)]
        else:
            names = list(getattr(value, "__dict__", {})) or list(getattr(type(value), "__slots__", ()))
        fields = {"__type__": type(value).__name__}
        for name in names:
            if name.startswith("_") or not hasattr(value, name):
                continue
            fields[name] = "<t>" if is_time_name(name) else self.summary(getattr(value, name), depth - 1)
        return fields

    # -- operators
    def operator_call(self, op, method: str, call):
        outermost = self.depth == 0
        if outermost:
            self.reports = []
        self.depth += 1
        try:
            result = call()
        except BaseException as exc:
            self.depth -= 1
            if outermost:
                self._operator_record(op, method, error=f"{type(exc).__name__}: {self.text(str(exc))}")
            raise
        self.depth -= 1
        if outermost:
            self._operator_record(op, method, returned=sorted(result))
        return result

    def _operator_record(self, op, method: str, **outcome) -> None:
        props = op.properties
        given = {
            p.identifier: outcome_state.plain(getattr(props, p.identifier))
            for p in props.bl_rna.properties
            if p.identifier != "rna_type" and props.is_property_set(p.identifier)
        }
        reports = [[sorted(kind), self.text(message)] for kind, message in self.reports]
        self.record("operator", type(op).bl_idname, call=method, properties=given, **outcome, reports=reports)

    # -- app functions
    def app_call(self, name: str, fn, args, kwargs):
        caller = sys._getframe(2).f_code.co_filename
        if self.depth or self.test is None or not caller.startswith(str(TESTS)):
            return fn(*args, **kwargs)
        self.depth += 1
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            self.depth -= 1
            self.record("app", name, error=f"{type(exc).__name__}: {self.text(str(exc))}")
            raise
        self.depth -= 1
        self.record("app", name, returned=self.summary(result))
        return result

    # -- Live
    def after_update(self) -> None:
        if self.depth or self.test is None:
            return
        nested = None
        for obj in bpy.data.objects:
            settings = getattr(obj, "chain_ik", None) if obj.type == "ARMATURE" else None
            if settings is None or not any(c.live for c in settings.chains):
                continue
            if nested is None:
                nested = _inside_another_handler()
            if nested:
                return  # an update a handler runs itself: the outer one, once that handler is done, records
            if self.last.get(("armatures", obj.name)) != outcome_state.armature_state(obj):
                self.record("live", obj.name)

    # -- cli.py
    def cli_run(self, args, run: subprocess.CompletedProcess) -> None:
        argv = [str(a) for a in args]
        fields = {
            "argv": [self.text(a) for a in argv[2:]],
            "returncode": run.returncode,
            "stdout": self.text(_decoded(run.stdout)),
            "stderr": self.text(_decoded(run.stderr)),
        }
        summary = _option(argv, "--json")
        if summary and Path(summary).is_file():
            try:
                fields["json"] = self.summary(json.loads(Path(summary).read_text()), depth=8)
            except ValueError as exc:
                fields["json"] = f"unreadable: {exc}"
        saved = _option(argv, "--output")
        if run.returncode == 0 and saved and Path(saved).is_file():
            fields["saved"] = saved_state(saved)
        self.record("cli", "cli.py", **fields)

    # -- pytest hooks
    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self._begin(nodeid)
        _handler_last()

    def pytest_runtest_call(self, item):
        _handler_last()  # after the fixtures: Live's handler may have been added by `ext`

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.when == "call" and self.test == item.nodeid:
            self.record("end", "", result=outcome.get_result().outcome)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        self._begin(None)

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        for handle in self.files.values():
            handle.close()
        manifest = {
            "bpy": bpy.app.version_string,
            "python": sys.version.split()[0],
            "commit": _git("rev-parse", "HEAD"),
            "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
            "exit_status": int(exitstatus),
            "records": dict(sorted(self.counts.items())),
        }
        (self.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


def _decoded(data) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def _option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv[:-1]):
        if arg == name:
            return argv[i + 1]
    for arg in argv:
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _git(*args: str) -> str:
    run = _real_run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    return run.stdout.strip()


def saved_state(path: str) -> dict | str:
    """The state of a saved .blend, read by outcome_state.py in its own process (opening the
    file here would replace the test's scene)."""
    run = _real_run([sys.executable, str(TESTS / "outcome_state.py"), path], capture_output=True, text=True)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode != 0 or not lines:
        return f"unreadable (status {run.returncode}): {run.stderr[-500:]}"
    return json.loads(lines[-1])


# -- wiring --------------------------------------------------------------------------------------
_real_run = subprocess.run


def _wrapped_run(*popenargs, **kwargs):
    run = _real_run(*popenargs, **kwargs)
    args = popenargs[0] if popenargs else kwargs.get("args")
    if _recorder is not None and isinstance(args, (list, tuple)) and len(args) > 1:
        if Path(str(args[1])).resolve() == REPO / "cli.py":
            _recorder.cli_run(args, run)
    return run


@bpy.app.handlers.persistent
def corpus_after_update(*_args) -> None:
    if _recorder is not None:
        _recorder.after_update()


# depsgraph_update_post only: the extension reads frame_change_pre/post (any handler there but
# Live's rules out sampling a bake's targets), so a handler of ours there would change what it does.
# A frame change that Live solves on is recorded at the next update that evaluates the written pose.
_HANDLERS = (bpy.app.handlers.depsgraph_update_post,)


def _inside_another_handler() -> bool:
    """Whether this update runs inside another handler's call (Live's, updating the pose it wrote)."""
    codes = {getattr(h, "__code__", None) for hs in _HANDLERS for h in hs if h is not corpus_after_update}
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def _handler_last() -> None:
    """Ours after every other handler (Live's above all): it sees the pose Live wrote."""
    for handlers in _HANDLERS:
        while corpus_after_update in handlers:
            handlers.remove(corpus_after_update)
        handlers.append(corpus_after_update)


def _operator_classes() -> list[type]:
    found, todo = [], list(bpy.types.Operator.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith(PACKAGE + "."):
            found.append(cls)
    return found


def _wrap_operator(cls: type) -> None:
    def make(method: str, original):
        if method == "execute":

            def execute(self, context):
                return _recorder.operator_call(self, method, lambda: original(self, context))

            wrapper = execute
        else:

            def event_method(self, context, event):
                return _recorder.operator_call(self, method, lambda: original(self, context, event))

            wrapper = event_method
        wrapper.__name__ = method
        wrapper.__wrapped__ = original
        wrapper.corpus = True
        return wrapper

    for method in ("execute", "invoke", "modal"):
        original = getattr(cls, method, None)
        if inspect.isfunction(original) and not hasattr(original, "corpus"):
            setattr(cls, method, make(method, original))
    if getattr(cls.__getattribute__, "corpus", False):
        return  # inherited from a chain_ik operator already read

    def __getattribute__(self, name):  # noqa: N807 - the hook Python calls
        value = super(cls, self).__getattribute__(name)  # Blender's own (bpy_struct)
        if name != "report":
            return value

        def report(kind, message):
            _recorder.reports.append((kind, message))
            return value(kind, message)

        return report

    __getattribute__.corpus = True
    cls.__getattribute__ = __getattribute__


def _wrap_app_functions() -> None:
    prefix = PACKAGE + ".app."
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith(prefix) or module is None:
            continue
        for attr, fn in list(vars(module).items()):
            if attr.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module_name:
                continue
            if ("solve" in attr or "bake" in attr) and not hasattr(fn, "corpus"):  # not yet wrapped
                name = f"{module_name[len(PACKAGE) + 1 :]}.{attr}"
                setattr(module, attr, _app_wrapper(name, fn))


def _app_wrapper(name: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _recorder.app_call(name, fn, args, kwargs)

    wrapper.corpus = True
    return wrapper


def activate(config, out: Path, load_extension) -> Recorder:
    """Record into `out` for this session: once the extension registers, watch it (see above)."""
    global _recorder
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.jsonl"):
        old.unlink()  # a corpus is one run: nothing of an earlier one mixes in
    _recorder = Recorder(out, config)
    package = load_extension()
    register = package.register

    @functools.wraps(register)
    def register_and_watch() -> None:
        register()  # imports the bpy-facing modules: only now are the operators and app/ there
        for cls in _operator_classes():
            _wrap_operator(cls)
        _wrap_app_functions()

    package.register = register_and_watch
    subprocess.run = _wrapped_run
    _handler_last()
    config.pluginmanager.register(_recorder, "outcome_corpus")
    return _recorder

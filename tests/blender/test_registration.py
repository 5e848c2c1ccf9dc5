"""register()/unregister() are symmetric: nothing left behind, and enabling again works."""

from __future__ import annotations

import bpy


def _state(ext):
    from chain_ik import registration
    from chain_ik.app import live

    classes = {cls.__name__: cls.is_registered for cls in registration.CLASSES}
    handlers = [h for hs, _ in live.HANDLERS for h in hs]
    return {
        "classes": classes,
        "owner": hasattr(bpy.types.Object, "chain_ik"),
        "handlers": sum(any(live._is_ours(h, fn.__name__) for _, fn in live.HANDLERS) for h in handlers),
        "operators": [name for name in dir(bpy.ops.chain_ik) if _operator_exists(name)],
    }


def live_handlers():
    from chain_ik.app import live

    return live.HANDLERS


def _operator_exists(name: str) -> bool:
    try:
        getattr(bpy.ops.chain_ik, name).get_rna_type()
    except (KeyError, AttributeError):
        return False
    return True


def test_unregister_removes_everything_and_register_restores_it(ext):
    registered = _state(ext)
    assert all(registered["classes"].values()) and registered["owner"]
    assert registered["handlers"] == len(live_handlers())
    from chain_ik import operators

    # Every operator class of the tuple is reachable as bpy.ops.chain_ik.<name>, and nothing else is.
    ids = sorted(cls.bl_idname.split(".", 1)[1] for cls in operators.CLASSES)
    assert registered["operators"] == ids
    ext.unregister()
    try:
        gone = _state(ext)
        assert not any(gone["classes"].values())
        assert not gone["owner"] and gone["handlers"] == 0 and gone["operators"] == []
    finally:
        ext.register()
    assert _state(ext) == registered
    # Twice more: no duplicate handlers, no "already registered" errors.
    ext.unregister()
    ext.register()
    assert _state(ext) == registered


def test_no_package_name_hardcoded():
    """Extensions load as bl_ext.<repo>.chain_ik: code must use __package__/relative imports."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    for path in repo.glob("*.py"):
        text = path.read_text().replace("chain_ik.solve", "").replace("chain_ik.chain", "").replace("chain_ik.bake", "")
        text = text.replace(".chain_ik.", ".")  # the Object.chain_ik settings property
        assert "chain_ik." not in text, path
    for sub in ("app", "operators", "rig", "ui"):
        for path in (repo / sub).glob("*.py"):
            text = path.read_text()
            assert "import chain_ik" not in text and "from chain_ik" not in text, path

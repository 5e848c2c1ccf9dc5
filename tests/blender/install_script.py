"""Run in a fresh interpreter by test_install.py: install the built zip with Blender's
own installer, then use, disable and re-enable the installed extension.
Prints one line "OK ..." on success; any failure raises (non-zero exit)."""

import sys
from pathlib import Path

import bpy  # isort: skip  (bpy first: it puts addon_utils on sys.path)
import addon_utils  # isort: skip

zip_path = sys.argv[-1]
module = "bl_ext.user_default.chain_ik"

result = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default", enable_on_install=True)
# FINISHED is returned even when the installer refuses: check the add-on list itself.
assert module in bpy.context.preferences.addons, (result, [a.module for a in bpy.context.preferences.addons])


def solve_once() -> float:
    bpy.ops.wm.read_homefile(use_empty=True)
    arm = bpy.data.armatures.new("Rig")
    obj = bpy.data.objects.new("Rig", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    for i in range(3):
        eb = arm.edit_bones.new(f"b{i}")
        eb.head, eb.tail = (0, 0, i), (0, 0, i + 1)
        if parent is not None:
            eb.parent, eb.use_connect = parent, True
        parent = eb
    bpy.ops.object.mode_set(mode="POSE")
    target = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(target)
    target.location = (1.0, 0.5, 2.0)
    assert bpy.ops.chain_ik.solve(tip="b2", chain_length=3, target="Target", method="fabrik") == {"FINISHED"}
    bpy.context.view_layer.update()
    tip = obj.matrix_world @ obj.pose.bones["b2"].tail
    return (tip - target.location).length


# Where the README says cli.py lives once installed.
cli = Path(bpy.utils.user_resource("EXTENSIONS", path="user_default/chain_ik")) / "cli.py"
assert cli.is_file(), cli
print(f"CLI {cli}")

error = solve_once()
assert error < 1e-4, error

# The Flamenco job type checks a shot list at submission with the installed extension's headless
# package (its `shots_json` eval imports <extension module>.headless.flamenco_submission): it ships,
# and refuses as it should.
import importlib  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402

with tempfile.TemporaryDirectory() as folder:
    (Path(folder) / "a.blend").write_bytes(b"")
    listed = Path(folder) / "shots.toml"
    listed.write_text('[[shots]]\nblend = "a.blend"\noutput = "a.blend"\narmature = "Rig"\n')
    doc = json.loads(importlib.import_module(module + ".headless.flamenco_submission").submission(listed))
    assert doc["checked_by"] and doc["problems"] == [
        f"shot 1: output {listed.parent}/a.blend is the shot's own blend file: it would be overwritten"
    ], doc
addon_utils.disable(module, default_set=True)
assert not hasattr(bpy.types.Object, "chain_ik")
assert module not in bpy.context.preferences.addons
addon_utils.enable(module, default_set=True)
assert hasattr(bpy.types.Object, "chain_ik")
error_again = solve_once()
assert error_again < 1e-4, error_again
# Leave nothing registered at exit (4.2 can hang otherwise).
addon_utils.disable(module, default_set=True)
print(f"OK installed {module}: tip error {error:.2e}, after re-enable {error_again:.2e}")

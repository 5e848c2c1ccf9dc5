"""README instructions, run as a user would (issue 11 §7): the build block, sourcing
tools/env.sh, and cli.py's arguments without '--'."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile

import bpy
from builders import add_empty
from conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _block_after(heading: str, lang: str = "bash") -> str:
    section = README[README.index(heading) :]
    return re.search(rf"```{lang}\n(.*?)```", section, re.S).group(1)


def _checkout_copy(dest):
    """The tracked files of the checkout (what a fresh clone has), as they are in the work tree."""
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes(src.read_bytes())
    return dest


def test_build_block_works_in_a_fresh_checkout_after_the_demo(tmp_path):
    root = _checkout_copy(tmp_path / "chain_ik")
    (root / "out").mkdir()
    for name in ("bake_demo.png", "arm.blend", "arm_baked.blend"):  # what tools/demo.sh leaves
        (root / "out" / name).write_bytes(b"demo output")
    block = _block_after("### Build and install")
    run = subprocess.run(["bash", "-c", block], cwd=root, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    (built,) = (root / "dist").glob("chain_ik-*.zip")
    names = zipfile.ZipFile(built).namelist()
    assert "blender_manifest.toml" in names
    assert not any(n.startswith(("out/", "dist/")) for n in names), names


def test_sourcing_env_sh_leaves_the_shell_options_alone():
    script = 'set +euo pipefail; source tools/env.sh; echo "$-"; shopt -qo pipefail && echo pipefail; false; echo alive'
    run = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    flags, *rest = run.stdout.split("\n")
    assert "e" not in flags and "u" not in flags, flags
    assert "pipefail" not in rest and "alive" in rest, run.stdout
    assert (
        "venv_for"
        in subprocess.run(
            ["bash", "-c", "source tools/env.sh; type venv_for"], cwd=REPO, capture_output=True, text=True
        ).stdout
    )


def test_cli_inside_blender_without_the_double_dash_says_where_its_arguments_go(tmp_path):
    # As `blender --background scene.blend --python cli.py --armature Rig` runs it (bpy already imported).
    cli = str(REPO / "cli.py")
    code = (
        "import bpy, runpy, sys;"
        f"sys.argv = ['blender', '--background', 'scene.blend', '--python', {cli!r}, '--armature', 'Rig'];"
        f"runpy.run_path({cli!r}, run_name='__main__')"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "put cli.py's arguments after '--'" in run.stderr, run.stderr
    assert "unrecognized arguments" not in run.stderr


def test_cli_with_the_wheel_python_takes_its_arguments_with_or_without_the_double_dash(tmp_path):
    for args in (["scene.blend", "--armature", "Rig"], ["scene.blend", "--", "--armature", "Rig"]):
        run = subprocess.run(
            [sys.executable, str(REPO / "cli.py"), *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 2 and "no such file: scene.blend" in run.stderr, run.stderr


def test_readme_script_snippets_run_on_a_rig_with_the_names_they_use(scene):
    """The README's `From a script` and bake snippets, line by line, on Rigify's metarig named
    'Rig' (hand.L, shin.L), an 'ik_goal' bone outside the chains and the empties they name."""
    import addon_utils

    addon_utils.enable("rigify", default_set=True)
    try:
        bpy.ops.object.armature_human_metarig_add()
        obj = bpy.context.object
        obj.name = "Rig"
        bpy.ops.object.mode_set(mode="EDIT")
        goal = obj.data.edit_bones.new("ik_goal")
        goal.head, goal.tail = (0.6, -0.2, 1.2), (0.6, -0.2, 1.3)
        bpy.ops.object.mode_set(mode="POSE")
        for name, location in (("Empty", (0.5, -0.2, 1.2)), ("Foot", (0.15, -0.1, 0.2)), ("Knee", (0.1, -1.0, 0.5))):
            add_empty(name, location)
        add_empty("Goal", (0.55, -0.25, 1.15))
        bpy.context.view_layer.objects.active = obj
        item = obj.chain_ik.chains.add()  # the panel chain the argument-less calls use
        item.tip, item.chain_length, item.target = "hand.L", 3, bpy.data.objects["Empty"]
        blocks = [_block_after("### From a script", "python"), _block_after("### Baking to keyframes", "python")]
        code = "\n".join(blocks)
        assert code.count("bpy.ops.chain_ik.") >= 8
        joined = re.sub(r",\s*\n\s+", ", ", code)  # a call continued on the next line
        calls = [line for line in joined.split("\n") if line.startswith("bpy.ops.")]
        assert len(calls) == code.count("bpy.ops.chain_ik."), calls
        for line in calls:
            assert eval(line, {"bpy": bpy}) == {"FINISHED"}, line
    finally:
        addon_utils.disable("rigify", default_set=True)

"""Detect Contacts over a sloped ground, on the CMU walk with legs 20% longer (bench/mocap_rigs.py):
the walk laid on a slope (every point raised by the slope's height under it: its armature sheared
through its parent inverse) finds the contacts it finds on flat ground; the walk as captured, a
slope laid under it (a user trial: half the contacts lost at 4 degrees, no warning), keeps them;
a foot that finds far fewer contacts than the other is warned of."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest
from mathutils import Matrix, Vector

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import mocap_rigs  # noqa: E402

pytestmark = pytest.mark.skipif(not mocap_rigs.MOCAP_DIR.is_dir(), reason=f"no clips at {mocap_rigs.MOCAP_DIR}")

DEGREES = 6.0  # over the walk's 3.9 m: the ground 41 cm higher at one end than at the other


def longer_legged_walk():
    """The CMU walk retargeted to legs 20% longer (the source hidden), a chain per leg; the frames,
    the walk's way (unit, level) and the middle of its path (at z = 0)."""
    clip = mocap_rigs.CLIPS["walk"]
    source = mocap_rigs.load_clip("walk")
    obj = mocap_rigs.retarget(source, clip, 1.2, "Char")
    bpy.data.objects.remove(source)
    mocap_rigs.add_leg_chains(obj, clip)
    scene = bpy.context.scene
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    hips = next(b for b in obj.data.bones if b.parent is None).name
    path = []
    for frame in (int(frames[0]), int(frames[-1])):
        scene.frame_set(frame)
        path.append((obj.matrix_world @ obj.pose.bones[hips].head).copy())
    way = path[1] - path[0]
    way.z = 0.0
    middle = (path[0] + path[1]) / 2
    middle.z = 0.0
    bpy.context.view_layer.objects.active = obj
    return obj, frames, way.normalized(), middle


def slope(way: Vector, middle: Vector, degrees: float) -> Matrix:
    """The shear raising every point by the height of a slope rising `degrees` along `way`, 0 through `middle`."""
    rise = math.tan(math.radians(degrees))
    shear = Matrix.Identity(4)
    shear[2][0], shear[2][1] = rise * way.x, rise * way.y
    shear[2][3] = -rise * way.dot(middle)
    return shear


def add_ground(height: float, shear: Matrix) -> bpy.types.Object:
    """A 40 m square plane at `height`, its vertices moved by `shear` (a slope; identity: level)."""
    size = 20.0
    corners = [shear @ Vector((x, y, height)) for x, y in ((-size, -size), (size, -size), (size, size), (-size, size))]
    mesh = bpy.data.meshes.new("Ground")
    mesh.from_pydata([tuple(c) for c in corners], [], [(0, 1, 2, 3)])
    ground = bpy.data.objects.new("Ground", mesh)
    bpy.context.scene.collection.objects.link(ground)
    return ground


def detected(obj, frames) -> list[np.ndarray]:
    from chain_ik.rig import contacts as rig_contacts

    assert bpy.ops.chain_ik.detect_contacts(frame_start=int(frames[0]), frame_end=int(frames[-1])) == {"FINISHED"}
    return [rig_contacts.read_contacts(obj, item, frames) for item in obj.chain_ik.chains]


def lowest_toe(obj, frames) -> float:
    from chain_ik.rig import contacts as rig_contacts

    feet = rig_contacts.sample_feet(bpy.context, obj, obj.chain_ik.chains, frames)
    return min(float(track.toe[:, 2].min()) for track in feet)


def f1(found: np.ndarray, truth: np.ndarray) -> float:
    both = float(np.sum(found & truth))
    return 2 * both / max(1.0, float(found.sum() + truth.sum()))


def test_a_walk_laid_on_a_slope_finds_the_contacts_of_flat_ground(scene):
    from chain_ik.solvers.contacts import contact_runs

    obj, frames, way, middle = longer_legged_walk()
    level = lowest_toe(obj, frames)  # the ground as bench/bench_contacts.py lays it
    obj.chain_ik.ground = add_ground(level, Matrix.Identity(4))
    flat = detected(obj, frames)
    shear = slope(way, middle, DEGREES)
    holder = bpy.data.objects.new("Slope", None)
    scene.collection.objects.link(holder)
    obj.parent = holder
    obj.matrix_parent_inverse = shear  # the whole walk, every bone, raised by the slope under it
    bpy.context.view_layer.update()
    obj.chain_ik.ground = add_ground(level, shear)
    on_slope = detected(obj, frames)
    for a, b in zip(flat, on_slope, strict=True):
        assert len(contact_runs(b)) == len(contact_runs(a)) == 3
        assert f1(b, a) > 0.97, (contact_runs(a), contact_runs(b))


@pytest.mark.parametrize("degrees", [4.0, DEGREES, -DEGREES])
def test_the_walk_as_captured_over_a_slope_keeps_its_contacts(scene, degrees, capfd):
    """The user trial: the walk's feet float above the slope at one end and sink into it at the other;
    every contact of flat ground is found, and nothing is warned of."""
    from chain_ik.solvers.contacts import contact_runs

    obj, frames, way, middle = longer_legged_walk()
    obj.chain_ik.ground = add_ground(0.0, Matrix.Identity(4))
    flat = detected(obj, frames)
    obj.chain_ik.ground = add_ground(0.0, slope(way, middle, degrees))
    capfd.readouterr()
    over_slope = detected(obj, frames)
    assert "WARNING" not in capfd.readouterr().out.upper()
    for a, b in zip(flat, over_slope, strict=True):
        assert len(contact_runs(b)) == len(contact_runs(a)) == 3
        assert f1(b, a) > 0.97, (contact_runs(a), contact_runs(b))


def test_a_foot_with_far_fewer_contacts_than_the_other_is_warned_of(scene, capfd):
    """The rule on the counts (the user trial's 4 degrees: 2 and 1 contacts; at 3 degrees 3 and 2, not
    warned of), then through the operator: a Speed no foot gets under finds nothing, said per chain."""
    from chain_ik.app.spec.contacts import ChainContacts, sparse_warnings
    from chain_ik.solvers.contacts import ContactSettings

    setting = ContactSettings.for_leg(1.0)
    chains = [ChainContacts("Left Foot", 2, 144, 5, setting), ChainContacts("Right Foot", 1, 72, 3, setting)]
    (warning,) = sparse_warnings(chains)
    assert warning.startswith("'Right Foot' found 1 contact(s), far fewer than 'Left Foot' (2)")
    three = ChainContacts("Left Foot", 3, 219, 7, setting)
    assert sparse_warnings([three, ChainContacts("Right Foot", 2, 148, 5, setting)]) == []
    assert [w.split(":")[0] for w in sparse_warnings([ChainContacts("Foot", 0, 0, 2, setting)])] == [
        "'Foot' found no contact"
    ]
    obj, frames, _, _ = longer_legged_walk()
    capfd.readouterr()
    assert bpy.ops.chain_ik.detect_contacts(frame_start=int(frames[0]), frame_end=int(frames[-1]), speed=1e-6) == {
        "FINISHED"
    }
    out = capfd.readouterr().out
    assert "'Left Foot' found no contact" in out and "'Right Foot' found no contact" in out


def test_contacts_the_range_cuts_do_not_make_a_foot_look_sparse(scene, capfd):
    """user14: over frames 100-250 of the walk the left foot has one contact (139-211), the right two
    pieces cut by the range (73-147 and 206-278): not 'far fewer'. A foot that does find far fewer
    whole contacts is still warned of (the counts, with the range's cut ends)."""
    from chain_ik.app.spec.contacts import ChainContacts, sparse_warnings
    from chain_ik.solvers.contacts import ContactSettings

    obj, frames, _, _ = longer_legged_walk()
    capfd.readouterr()
    assert bpy.ops.chain_ik.detect_contacts(frame_start=100, frame_end=250) == {"FINISHED"}
    out = capfd.readouterr().out
    assert "'Left Foot' 1 contact(s)" in out and "'Right Foot' 2 contact(s)" in out and "far fewer" not in out
    setting = ContactSettings.for_leg(1.0)
    cut = [
        ChainContacts("Left Foot", 1, 72, 3, setting, whole=1),
        ChainContacts("Right Foot", 4, 99, 9, setting, whole=3),
    ]
    (warning,) = sparse_warnings(cut)
    assert warning.startswith("'Left Foot' found 1 contact(s), far fewer than 'Right Foot' (4)")

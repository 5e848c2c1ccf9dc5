"""Bone selection and visibility across Blender versions (5.0 moved both from Bone to PoseBone)."""

from __future__ import annotations


def is_visible(pbone) -> bool:
    """Shown in Pose Mode, by Blender's own rule: not hidden (PoseBone.hide in 5.0+, Bone.hide
    before: 5.0's Bone.hide is Edit Mode's), and in a visible bone collection or in none."""
    hidden = pbone.hide if "hide" in pbone.bl_rna.properties else pbone.bone.hide
    if hidden:
        return False
    collections = pbone.bone.collections
    return not len(collections) or any(c.is_visible_effectively for c in collections)


def is_selected(pbone) -> bool:
    """Selected and shown, as Blender's pose tools take a bone: a hidden bone (or one in a hidden
    collection) keeps its selection flag but is not acted on."""
    # 5.0+: PoseBone.select; 4.x: Bone.select.
    selected = pbone.select if "select" in pbone.bl_rna.properties else pbone.bone.select
    return bool(selected) and is_visible(pbone)


def set_selected(pbone, state: bool) -> None:
    if "select" in pbone.bl_rna.properties:
        pbone.select = state
    else:
        pbone.bone.select = state


def selected_chain(obj) -> tuple[str, int]:
    """(tip name, length) of the selected pose bones, which must form one unbroken parent chain."""
    selected = [pb for pb in obj.pose.bones if is_selected(pb)]
    if not selected:
        raise ValueError("no bones selected: select the bones of one chain in Pose Mode")
    names = {pb.name for pb in selected}
    tips = [pb for pb in selected if not any(c.name in names for c in pb.children)]
    if len(tips) != 1:
        raise ValueError("the selected bones branch: select one unbroken parent-child chain")
    length = 0
    pb = tips[0]
    while pb is not None and pb.name in names:
        length += 1
        pb = pb.parent
    if length != len(selected):
        raise ValueError("the selected bones are not one unbroken parent-child chain")
    return tips[0].name, length

"""Bone selection across Blender versions (5.0 moved it from Bone to PoseBone)."""

from __future__ import annotations


def is_selected(pbone) -> bool:
    # 5.0+: PoseBone.select; 4.x: Bone.select.
    if "select" in pbone.bl_rna.properties:
        return bool(pbone.select)
    return bool(pbone.bone.select)


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

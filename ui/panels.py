"""View3D sidebar, tab "Chain IK": chain list, chain settings, results. Draw only."""

from __future__ import annotations

import bpy

from .. import properties, rig, solvers
from ..app.spec import groups

CATEGORY = "Chain IK"


class CHAINIK_UL_chains(bpy.types.UIList):
    """The armature's chains: name, tip bone, Live toggle."""

    bl_idname = "CHAINIK_UL_chains"

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0, flt_flag=0):
        row = layout.row(align=True)
        if data.scope == "SELECTED":
            row.prop(item, "select", text="")
        row.prop(item, "name", text="", emboss=False, icon="CON_KINEMATIC")
        row.label(text=item.tip or "(no tip)")
        group = groups.membership(data.id_data).get(index)
        if group is not None:  # solved together with the chains of the same number
            row.label(text=f"G{group[0]}", icon="LINKED")
        elif item.pin:
            row.label(text="", icon="PINNED")
        row.prop(item, "live", text="", icon="REC" if item.live else "RADIOBUT_OFF", emboss=False)
        row.prop(item, "mute", text="", icon="HIDE_ON" if item.mute else "HIDE_OFF", emboss=False)


class _ChainIKPanel:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = CATEGORY

    @classmethod
    def poll(cls, context) -> bool:
        obj = context.object
        return obj is not None and obj.type == "ARMATURE"


class VIEW3D_PT_chain_ik(_ChainIKPanel, bpy.types.Panel):
    bl_label = "Chain IK"

    def draw(self, context):
        layout = self.layout
        settings = context.object.chain_ik
        row = layout.row()
        row.template_list("CHAINIK_UL_chains", "", settings, "chains", settings, "active_index", rows=3)
        col = row.column(align=True)
        col.operator("chain_ik.chain_add", icon="ADD", text="")
        col.operator("chain_ik.chain_remove", icon="REMOVE", text="")
        col.separator()
        col.operator("chain_ik.chain_from_selected", icon="BONE_DATA", text="")
        col.operator("chain_ik.chain_mirror", icon="MOD_MIRROR", text="")
        col.operator("chain_ik.chains_from_constraints", icon="CONSTRAINT_BONE", text="")
        # What Solve, Live, Bake and Compare act on, visible where they are clicked.
        row = layout.row(align=True)
        row.prop(settings, "scope", expand=True)
        muted = sum(1 for c in settings.chains if c.mute)
        muted_text = f", {muted} muted" if muted else ""
        layout.label(text=f"Acts on {len(settings.in_scope())} of {len(settings.chains)} chain(s){muted_text}")
        row = layout.row(align=True)
        row.scale_y = 1.3
        row.operator("chain_ik.solve", icon="CON_KINEMATIC")
        row.operator("chain_ik.live_toggle", icon="REC")


class VIEW3D_PT_chain_ik_settings(_ChainIKPanel, bpy.types.Panel):
    bl_label = "Chain"
    bl_parent_id = "VIEW3D_PT_chain_ik"

    @classmethod
    def poll(cls, context) -> bool:
        return super().poll(context) and context.object.chain_ik.active is not None

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        obj = context.object
        item = obj.chain_ik.active
        layout.prop_search(item, "tip", obj.data, "bones")
        layout.prop(item, "chain_length")
        layout.prop(item, "use_tail")
        layout.prop(item, "target")
        if item.target is not None and item.target.type == "ARMATURE":
            layout.prop_search(item, "target_bone", item.target.data, "bones")
        group = groups.membership(obj).get(obj.chain_ik.active_index)
        _draw_group(layout, obj, item, group)
        led = group is not None and group[1][0] != obj.chain_ik.active_index
        _draw_goals(layout, item)
        if led:  # the group's first chain sets these for all of it: this chain's are not used
            layout = layout.column()
            layout.active = False
        layout.prop(item, "influence", slider=True)
        _draw_limits(layout, obj, item)
        _draw_root(layout, obj, item)
        layout.separator()
        layout.prop(item, "method")
        method = solvers.REGISTRY.get(item.method)
        layout.label(text=method.description if method else "", icon="INFO")
        col = layout.column(align=True)
        col.prop(item, "tolerance")
        if method is None:
            return
        if method.iterative:
            col.prop(item, "max_iterations")
        values = properties.method_options(item, method.name)
        for option in method.options:
            row = col.row()
            row.active = option.active(values)  # greyed out: it has no effect with the other options
            row.prop(item, option.property_name)


def _draw_group(layout, obj, item, group) -> None:
    """Which chains this one is solved with (they share bones), and its rank among them."""
    box = layout.box()
    if group is None:
        box.label(text="Solved alone (shares no bone with another chain)", icon="UNLINKED")
    else:
        chains = obj.chain_ik.chains
        others = ", ".join(chains[i].name for i in group[1] if chains[i] != item)
        box.label(text=f"Group G{group[0]}: solved with {others}", icon="LINKED")
        lead = chains[group[1][0]]
        if lead == item:
            box.label(text="First in the group: its solver settings serve all", icon="INFO")
        else:
            box.label(text=f"Influence, limits, locks, solver: from '{lead.name}'", icon="INFO")
    col = box.column()
    col.active = group is not None
    col.prop(item, "weight")
    col.prop(item, "priority")
    box.prop(item, "pin")


def _draw_goals(layout, item) -> None:
    """Pole target and tip orientation, laid out like the IK constraint's (greyed for an aim, which
    has neither), then the aim: its axis, and its spread (greyed when the chain reaches)."""
    aims = item.aim_axis != "NONE"
    col = layout.column()
    col.active = not aims
    col.prop(item, "pole_target")
    if item.pole_target is not None:
        if item.pole_target.type == "ARMATURE":
            col.prop_search(item, "pole_subtarget", item.pole_target.data, "bones")
        col.prop(item, "pole_angle")
    row = layout.row(heading="Rotation")
    row.active = not aims
    row.prop(item, "use_rotation", text="")
    sub = row.row()
    sub.active = item.use_rotation
    sub.prop(item, "rotation_weight", text="", slider=True)
    row = layout.row(align=True)
    row.prop(item, "aim_axis")
    sub = row.row()
    sub.active = aims
    sub.prop(item, "aim_spread", slider=True)


def _draw_limits(layout, obj, item) -> None:
    """Whether the bones' own IK limits apply, and which are set on this chain's bones."""
    layout.prop(item, "use_limits")
    layout.prop(item, "use_locks")
    row = layout.row(align=True)
    row.active = item.aim_axis == "NONE"  # an aim neither stretches nor softens (it turns an axis)
    row.prop(item, "use_stretch")
    row.prop(item, "softness", slider=True)
    lines = rig.read.chain_limit_lines(obj, item.tip, item.chain_length, item.use_tail)
    col = layout.column(align=True)
    col.active = item.use_limits
    if not lines:
        col.label(text="No IK limits on the chain's bones")
    for line in lines:
        col.label(text=line, icon="CON_ROTLIMIT")


def _draw_root(layout, obj, item) -> None:
    """Move Root and its stiffness, greyed where the chain's top bone is connected (its head cannot move)."""
    try:
        top = rig.chain_bone_names(obj, item.tip, item.chain_length, item.use_tail)[0]
    except (ValueError, KeyError):
        top = ""
    connected = bool(top) and obj.data.bones[top].use_connect
    row = layout.row(align=True)
    row.active = not connected
    row.prop(item, "move_root")
    sub = row.row(align=True)
    sub.active = item.move_root and not connected
    sub.prop(item, "root_stiffness", slider=True)
    if connected and item.move_root:
        layout.label(text=f"'{top}' is connected to its parent: its head cannot move", icon="ERROR")


class VIEW3D_PT_chain_ik_result(_ChainIKPanel, bpy.types.Panel):
    bl_label = "Result"
    bl_parent_id = "VIEW3D_PT_chain_ik"

    @classmethod
    def poll(cls, context) -> bool:
        return super().poll(context) and context.object.chain_ik.active is not None

    def draw(self, context):
        layout = self.layout
        item = context.object.chain_ik.active
        if item.has_result:
            r = item.result
            box = layout.box()
            if item.pin:  # its goal is the point it holds: it held, or did not
                state, error = ("pin held" if r.reached else "pin did not hold"), "Tip moved"
            else:
                state, error = ("reached" if r.reached else "not reached"), "Tip error"
            box.label(text=f"{r.method}: {state}", icon="CHECKMARK" if r.reached else "ERROR")
            if r.aimed:  # the angle left, and how far the aim ray passes from the target
                error = f"Aim {r.angle:.3g}° off · ray misses by"
            box.label(text=f"{error} {r.error:.3g} · {r.iterations} it · cost {r.cost:.1f}° · {r.time_ms:.2f} ms")
            if r.group:
                box.label(text=f"Solved together: {r.group}", icon="LINKED")
            if r.reason:  # a faster kernel could not serve: say which part and why
                box.label(text=r.reason, icon="INFO")
        else:
            layout.label(text="Not solved yet")
        layout.operator("chain_ik.compare", icon="SORTSIZE")
        if len(item.comparison):
            grid = layout.grid_flow(columns=5, row_major=True, even_columns=False, align=True)
            for heading in ("Solver", "Error", "Iter.", "Cost °", "ms"):
                grid.label(text=heading)
            for r in item.comparison:
                grid.label(text=r.method)
                grid.label(text=f"{r.error:.2g}")
                grid.label(text=str(r.iterations))
                grid.label(text=f"{r.cost:.1f}")
                grid.label(text=f"{r.time_ms:.2f}")


class VIEW3D_PT_chain_ik_bake(_ChainIKPanel, bpy.types.Panel):
    bl_label = "Bake"
    bl_parent_id = "VIEW3D_PT_chain_ik"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        bake = context.object.chain_ik.bake
        layout.prop(bake, "use_scene_range")
        col = layout.column(align=True)
        if bake.use_scene_range:
            col.enabled = False
            col.prop(context.scene, "frame_start", text="Start")
            col.prop(context.scene, "frame_end", text="End")
        else:
            col.prop(bake, "frame_start")
            col.prop(bake, "frame_end")
        layout.prop(bake, "step")
        layout.prop(bake, "interpolation")
        layout.prop(bake, "reduce")
        col = layout.column()
        col.active = bake.reduce
        col.prop(bake, "reduce_mode")
        col.prop(bake, "reduce_tolerance" if bake.reduce_mode == "TIP" else "reduce_angle")
        layout.operator("chain_ik.bake", icon="KEYINGSET")
        if bake.last_bake:  # "baked N frame(s) of M chain(s): K keys on B bone(s), ...": a line a part
            box = layout.box()
            head, _, rest = bake.last_bake.partition(": ")
            box.label(text=f"Last: {head}", icon="INFO")
            for part in filter(None, rest.split(", ")):
                box.label(text=part)
        # IK -> FK: the selected FK controls follow the IK-driven chain over the same range.
        layout.operator("chain_ik.bake_fk", icon="CON_KINEMATIC")


class VIEW3D_PT_chain_ik_contacts(_ChainIKPanel, bpy.types.Panel):
    """Foot contacts: the ground, detect and clear (the chains in scope), the active chain's Contact."""

    bl_label = "Contacts"
    bl_parent_id = "VIEW3D_PT_chain_ik"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        settings = context.object.chain_ik
        layout.prop(settings, "ground")
        row = layout.row(align=True)
        row.operator("chain_ik.detect_contacts", icon="SNAP_FACE")
        row.operator("chain_ik.clear_contacts", icon="X", text="Clear")
        item = settings.active
        if item is not None:
            # Keyable here as anywhere (the decorator's dot); the Dope Sheet shows its keys.
            row = layout.row()
            row.use_property_decorate = True
            row.prop(item, "contact", text=f"Contact ({item.name})")
        # A bake honours the contacts (app.bake.contact_targets): its ease and its last figures.
        layout.prop(settings, "contact_blend")
        layout.prop(settings, "contact_align")
        for chain in settings.chains:
            if chain.contact_figures:
                box = layout.box()
                box.label(text=f"{chain.name}: last bake")
                for part in chain.contact_figures.split("; "):
                    box.label(text=part)


CLASSES = (
    CHAINIK_UL_chains,
    VIEW3D_PT_chain_ik,
    VIEW3D_PT_chain_ik_settings,
    VIEW3D_PT_chain_ik_result,
    VIEW3D_PT_chain_ik_bake,
    VIEW3D_PT_chain_ik_contacts,
)

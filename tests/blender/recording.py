"""A recording stand-in for `UILayout`: panels cannot draw headless, so draw()
runs against this, which checks every property and operator it is given."""

from __future__ import annotations

import bpy


def _has_property(data, name: str) -> bool:
    return name in data.bl_rna.properties


class OperatorProps:
    """What `layout.operator()` returns: setting an unknown property fails."""

    def __init__(self, idname: str) -> None:
        module, name = idname.split(".")
        op = getattr(getattr(bpy.ops, module), name)
        object.__setattr__(self, "_rna", op.get_rna_type())
        object.__setattr__(self, "idname", idname)

    def __setattr__(self, key, value) -> None:
        assert key in self._rna.properties, f"operator {self.idname} has no property {key!r}"
        object.__setattr__(self, key, value)


class RecordingLayout:
    """Records prop/prop_search/operator/label/template_list calls of the whole tree."""

    def __init__(self, log: list | None = None) -> None:
        object.__setattr__(self, "log", [] if log is None else log)

    # Sub-layouts share the log.
    def _child(self, *args, **kwargs) -> RecordingLayout:
        return RecordingLayout(self.log)

    row = column = box = split = grid_flow = column_flow = _child

    def __setattr__(self, key, value) -> None:
        allowed = {"use_property_split", "use_property_decorate", "enabled", "active", "alert", "scale_x", "scale_y"}
        assert key in allowed, f"unknown layout attribute {key!r}"
        object.__setattr__(self, key, value)

    def prop(self, data, prop: str, **kwargs) -> None:
        assert _has_property(data, prop), f"{type(data).__name__} has no property {prop!r}"
        self.log.append(("prop", data, prop))

    def prop_search(self, data, prop: str, search_data, search_prop: str, **kwargs) -> None:
        assert _has_property(data, prop), f"{type(data).__name__} has no property {prop!r}"
        assert _has_property(search_data, search_prop), f"{type(search_data).__name__} has no {search_prop!r}"
        self.log.append(("prop_search", data, prop))

    def operator(self, idname: str, **kwargs) -> OperatorProps:
        props = OperatorProps(idname)
        self.log.append(("operator", idname))
        return props

    def label(self, text: str = "", **kwargs) -> None:
        assert isinstance(text, str)
        self.log.append(("label", text))

    def separator(self, **kwargs) -> None:
        pass

    def template_list(self, list_type, list_id, data, prop, active_data, active_prop, **kwargs) -> None:
        assert hasattr(bpy.types, list_type), f"no UIList {list_type!r} registered"
        assert _has_property(data, prop) and _has_property(active_data, active_prop)
        self.log.append(("template_list", list_type, prop))

    def calls(self, kind: str) -> list:
        return [c for c in self.log if c[0] == kind]

"""The chain item's method-option properties are built from the solver registry's `Option`
declarations (properties.with_method_options): one property per option, with the declared
name, tooltip, default, limits and choices; saved files keep their property names."""

from __future__ import annotations

import bpy
import pytest
from bpy.props import PointerProperty
from builders import straight_chain

# The chain item's method-option properties and their solver keywords as they were named before
# the registry built them (main, 2abbec0): a saved file stores its values under these names.
SAVED_NAMES = {
    "fold_angle": ("triangulation", "fold_angle"),
    "smooth_fold": ("triangulation", "smooth_fold"),
    "fabrik_placement": ("fabrik", "placement"),
    "jacobian_variant": ("jacobian", "variant"),
    "damping": ("jacobian", "damping"),
    "max_step": ("jacobian", "max_step"),
    "nullspace_gain": ("jacobian", "nullspace_gain"),
    "attractor": ("jacobian", "attractor"),
    "joint_weighting": ("jacobian", "joint_weighting"),  # issue 20 item 3 (new: saved under its own name)
}
# A value other than the default for each.
CHANGED = {
    "fold_angle": 120.0,
    "smooth_fold": 0.25,
    "fabrik_placement": "sphere",
    "jacobian_variant": "pseudoinverse",
    "damping": 0.2,
    "max_step": 0.3,
    "nullspace_gain": 0.4,
    "attractor": "input",
    "joint_weighting": "MASS",
}


def _registry():
    from chain_ik import solvers

    return solvers.REGISTRY


def _rna(item):
    return item.bl_rna.properties


def _check_property(prop, option) -> None:
    """`prop` (an RNA property) is what `option` declares."""
    assert prop.name == option.label and prop.description == option.description
    if option.choices:
        assert prop.type == "ENUM" and prop.default == option.panel_default
        assert [(i.identifier, i.name, i.description) for i in prop.enum_items] == list(option.choices)
        return
    assert prop.default == pytest.approx(option.panel_default, rel=1e-7)
    if option.minimum is not None:
        assert prop.hard_min == pytest.approx(option.minimum, rel=1e-7)
    if option.maximum is not None:
        assert prop.hard_max == pytest.approx(option.maximum, rel=1e-7)
    if option.soft_maximum is not None:
        assert prop.soft_max == pytest.approx(option.soft_maximum, rel=1e-7)
    assert prop.subtype == (option.subtype or "NONE")


def test_every_registry_option_has_its_one_property(scene):
    """Each option of each method: one chain item property, as declared (name, tooltip, the
    panel's default, limits, subtype, choices), under the name saved files use."""
    obj = straight_chain(3)
    item = obj.chain_ik.chains.add()
    declared = {}
    for method in _registry().values():
        for option in method.options:
            assert declared.setdefault(option.property_name, (method.name, option.name)) == (method.name, option.name)
            _check_property(_rna(item)[option.property_name], option)
    assert declared == SAVED_NAMES
    # The one default the panel sets apart from the core's, with its reason.
    smooth = next(o for o in _registry()["triangulation"].options if o.name == "smooth_fold")
    assert (smooth.default, smooth.panel_default, item.smooth_fold) == (0.0, 1.0, 1.0) and smooth.why


def test_values_saved_under_the_old_names_load_back(scene, tmp_path):
    """A file keeps each option under the property name it had before the registry built them:
    save non-default values, open the file again, read them back and as solver keywords."""
    from chain_ik import properties

    obj = straight_chain(3, name="Saved")
    item = obj.chain_ik.chains.add()
    for name, value in CHANGED.items():
        setattr(item, name, value)
    assert set(SAVED_NAMES) <= set(item.keys())  # stored as ID properties under those names
    path = str(tmp_path / "options.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    item = bpy.data.objects["Saved"].chain_ik.chains[0]
    for name, value in CHANGED.items():
        assert getattr(item, name) == _approx(value), name
    options = {method: properties.method_options(item, method) for method in _registry()}
    # Smooth Fold has no effect below a 180° fold, nor Damping outside DLS: the solver gets the core's default.
    inactive = {"smooth_fold": 0.0, "damping": 0.05}
    for name, (method, keyword) in SAVED_NAMES.items():
        assert options[method][keyword] == _approx(inactive.get(name, CHANGED[name])), name
    item.fold_angle, item.jacobian_variant = 180.0, "dls"
    assert properties.method_options(item, "triangulation")["smooth_fold"] == _approx(0.25)
    assert properties.method_options(item, "jacobian")["damping"] == _approx(0.2)


def _approx(value):
    return value if isinstance(value, str) else pytest.approx(value, rel=1e-6)


def _toy_method():
    from chain_ik.solvers import registry

    return registry.Method(
        name="toy",
        label="Toy",
        description="A method with two options, declared in the registry alone",
        options=(
            registry.Option("fast", True, "Fast", "Take the float kernel", bool, stored_as="toy_fast"),
            registry.Option(
                "reach",
                0.5,
                "Reach",
                "How far to reach",
                float,
                minimum=0.0,
                maximum=2.0,
                soft_maximum=1.0,
                subtype="FACTOR",
                panel_default=1.0,
                why="the panel's chains reach all the way",
            ),
        ),
        max_iterations=1,
        batch=lambda *args: None,
    )


def test_a_new_methods_options_become_properties(ext, scene, monkeypatch):
    """A method added to the registry alone gets its properties from it: a settings class built as
    the chain item is (`with_method_options`) has them, and its options read from them."""
    from chain_ik import properties

    toy = _toy_method()
    monkeypatch.setitem(_registry(), "toy", toy)
    cls = properties.with_method_options(type("ToyChain", (bpy.types.PropertyGroup,), {"__annotations__": {}}))
    bpy.utils.register_class(cls)
    bpy.types.Scene.toy_chain = PointerProperty(type=cls)
    try:
        item = scene.toy_chain
        assert set(SAVED_NAMES) | {"toy_fast", "reach"} <= set(_rna(item).keys())
        for option in toy.options:
            _check_property(_rna(item)[option.property_name], option)
        assert _rna(item)["toy_fast"].type == "BOOLEAN" and _rna(item)["reach"].type == "FLOAT"
        assert properties.method_options(item, "toy") == {"fast": True, "reach": 1.0}
        item.toy_fast, item.reach = False, 1.5
        assert properties.method_options(item, "toy") == {"fast": False, "reach": 1.5}
    finally:
        del bpy.types.Scene.toy_chain
        bpy.utils.unregister_class(cls)


def test_option_properties_refuse_a_clash(ext, monkeypatch):
    """Two options on one property must be declared alike; an option may not take a chain
    setting's name; a panel default apart from the core's needs its reason."""
    from chain_ik import properties
    from chain_ik.solvers import registry

    toy = _toy_method()
    twin = registry.Method("twin", "Twin", "", (registry.Option("reach", 0.5, "Reach", "Other", float),), 1, None)
    assert set(properties.option_properties([toy, toy])) == {"toy_fast", "reach"}
    with pytest.raises(ValueError, match="'reach' is declared twice"):
        properties.option_properties([toy, twin])
    monkeypatch.setitem(_registry(), "toy", toy)
    settings = {"__annotations__": {"reach": bpy.props.FloatProperty()}}
    with pytest.raises(ValueError, match="named as chain settings: reach"):
        properties.with_method_options(type("Clash", (bpy.types.PropertyGroup,), settings))
    with pytest.raises(ValueError, match="say why"):
        registry.Option("x", 0.0, "X", "x", float, panel_default=1.0)

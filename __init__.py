"""Chain IK: inverse kinematics for armature bone chains (Blender extension).

Only register/unregister live here. bpy-facing modules are imported inside
them, so importing this package (or `solvers` beside it) never needs bpy.
"""


def register() -> None:
    from . import registration

    registration.register()


def unregister() -> None:
    from . import registration

    registration.unregister()

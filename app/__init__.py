"""Blender-side services below the operators and the panel: chain specs, solve, bake, checks,
Live's handlers and state. No bpy Operators here; operators/, ui/ and cli.py call this layer,
which calls rig/ (the bpy <-> numpy bridge) and solvers/. Imports only point down
(tests/solvers/test_layers.py)."""

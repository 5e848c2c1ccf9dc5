"""Blender-side services below the operators and the panel: chain specs, solve, bake, checks,
Live's handlers and state. No bpy Operators here; operators/, ui/ and cli.py call this layer,
which calls rig/ (the bpy <-> numpy bridge) and solvers/. Imports only point down
(tests/solvers/test_layers.py)."""

# Grouped by job (each package's __init__ holds its entry points):
#   spec/    what a job is given: ChainSpec from a panel chain or script arguments, which chains act
#            (scope), which solve together (groups), chains from IK constraints (adopt), contacts;
#   solve/   the one solve path of a unit, a chain alone or a group (solve_unit, solve_and_write),
#            goals, a group's parts (group_solve), pins, the outcome and its figures (result);
#   bake/    baking to keys (bake): its solve path, per-frame kernels, report, job, IK -> FK;
#   checks/  refusals before anything is solved or keyed (settings, targets, auto-keying);
#   live/    Live's handlers and state, and the Live chains a bake must reckon with.

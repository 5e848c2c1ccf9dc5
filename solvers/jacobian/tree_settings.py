"""The tree Jacobian's iteration settings (jacobian.tree and its plain kernel, jacobian.tree_plain)."""

RESOLVES = 2  # re-solves per iteration after locking clamped axes (as jacobian.chain_numpy)
CORRECTIONS = 3  # Newton steps per iteration taking back what a lower level's step cost the met levels
PATIENCE = 4  # iterations without progress before a solve stops
PROGRESS = 1e-4  # relative drop of a level's error that counts as progress
SETTLED = 0.1  # a level whose step moves its goals less than this x the tolerance is as near as it gets
# Kept steps in a row after a refused one before the turn widens and the damping drops again:
# widening at once overshoots again (conflicting goals alternated kept and refused steps).
CALM = 5
LM_DOWN, LM_UP = 0.25, 4.0  # DLS damping after a kept / refused step
# The damping's least share of the option's: while every step is kept (reachable goals: a nearly
# undamped Newton step converges in fewer iterations: five from the hips on the metarig, 8.6 -> 7.8
# on average), and once one was refused (nonlinear or conflicting goals settle as before).
# Once CALM steps in a row are kept after a refusal the floor drops back to LM_FLOOR, with the turn's
# widening: held at LM_FLOOR_REFUSED, a goal within 0.3% of full reach (soft IK's point beyond reach,
# bench/bench_root.py) crawled, its error ~ 1/iterations (the straight arm's fold: the reach is second
# order in the bend, so a damped step shortens it by little); 6 of 30 met the 200-iteration cap
# unreached; with the floor back, all 30 reached in at most 78, 22.2 -> 13.3 ms on average.
LM_FLOOR, LM_FLOOR_REFUSED = 1e-2, 1e-1
# DLS's lam2 at least this x |J^T e|^2 / the mean of diag(J J^T) (about the squared error the step
# can remove; Levenberg-Marquardt damping ~ the error keeps Newton's quadratic convergence near the
# goal, and a conflicting goal's removable part vanishes at the compromise; dropped once a step
# stops lowering the error, so a stalled approach is not damped on): far goals are approached
# in shorter, more nearly least-motion steps. On the metarig (bench/bench_tree.py, reachable poses)
# the summed turn fell 19-22% (to 0.94-0.99x Blender's) and the iterations 5.5-7.8 -> 4.5-6.2.
# (0.5 turned a little less still, but then a triangulation group bake with a pole, which starts
# each frame from three of these steps, popped: tests/blender/test_smooth_group_bake.py.)
ERROR_DAMPING = 0.35
DEFAULT_DAMPING = 0.05  # the damping a refused pseudoinverse step starts from (relative to the span)
RIDGE = 1e-12  # the pseudoinverse's damping against rounding, relative to the mean of diag(J J^T)

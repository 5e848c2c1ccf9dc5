"""Chain IK solver core: numpy and the standard library only, no bpy.

from solvers import Chain, solve, solve_batch, METHODS
chain = Chain([[0, 0, 0], [0, 1, 0], [0, 2, 0]])
sol = solve(chain, [1.0, 1.0, 0.0], method="triangulation")
sol.points, sol.rotations, sol.error, sol.reached, sol.iterations
"""

from .api import DEFAULT_RELATIVE_TOLERANCE, METHODS, OPTIONS, solve, solve_batch
from .chain_sequence import solve_sequence
from .jacobian.chain_numpy import VARIANTS as JACOBIAN_VARIANTS
from .limits import JointLimits, make_limits
from .metrics import rotation_cost, rotation_cost_one
from .model.chain import Chain
from .model.result import BatchSolution, SequenceSolution, Solution
from .registry import REGISTRY, Method, Option
from .skeleton import Effector, Skeleton, SkeletonBatch, SkeletonSolution
from .skeleton_many import solve_skeleton_many
from .skeleton_sequence import solve_skeleton_next, solve_skeleton_sequence
from .skeleton_solve import solve_skeleton

__all__ = [
    "Chain",
    "Solution",
    "BatchSolution",
    "solve",
    "solve_batch",
    "solve_sequence",
    "SequenceSolution",
    "METHODS",
    "Skeleton",
    "Effector",
    "SkeletonSolution",
    "solve_skeleton",
    "SkeletonBatch",
    "solve_skeleton_many",
    "solve_skeleton_next",
    "solve_skeleton_sequence",
    "REGISTRY",
    "Method",
    "Option",
    "OPTIONS",
    "JACOBIAN_VARIANTS",
    "DEFAULT_RELATIVE_TOLERANCE",
    "rotation_cost",
    "rotation_cost_one",
    "JointLimits",
    "make_limits",
]

"""The paper's rotation cost: the plain-float single-solve form equals the vectorised one."""

from __future__ import annotations

import ik_strategies as ik
import numpy as np
from hypothesis import given, settings

import solvers


@settings(max_examples=100)
@given(case=ik.chain_and_any_target())
def test_single_solve_cost_equals_the_vectorised_cost(case):
    chain, target = case
    points = solvers.solve(chain, target, method="triangulation").points
    vectorised = float(solvers.rotation_cost(chain, points))
    assert np.isclose(solvers.rotation_cost_one(chain, points.tolist()), vectorised, rtol=1e-9, atol=1e-6)

import numpy as np
import pytest

import solvers


@pytest.mark.parametrize("method", list(solvers.METHODS))
def test_reaches_a_reachable_target(method):
    chain = solvers.Chain([[0, 0, 0], [0, 9, 0], [0, 18, 0], [0, 27, 0], [0, 36, 0], [0, 40, 0]])
    sol = solvers.solve(chain, [10.0, 20.0, 5.0], method=method)
    assert sol.reached
    assert np.allclose(np.linalg.norm(np.diff(sol.points, axis=0), axis=1), chain.lengths)

"""The aim axes a chain may point at its target (solvers.model.aim_axis), for code that must not
import numpy: cli.py's argument check and the shot list's refuse an unknown one before any work.
tests/solvers/test_aim_goals.py proves these are the core's (NONE first: no aim)."""

AIM_AXIS_NAMES: tuple[str, ...] = ("NONE", "+X", "-X", "+Y", "-Y", "+Z", "-Z")
DEFAULT_AIM_SPREAD = 0.7  # solvers.model.aim_axis.DEFAULT_SPREAD (a new panel chain's Aim Spread)

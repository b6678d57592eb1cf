"""Buggy (v52 of the unseen2 set, written outside the project from the docstrings alone):
No validation in `__init__`.

Clause broken: “Raises: ValueError: (constructor) if ``target`` or ``horizon`` is not positive.”
Expected diagnosis (the set's manifest): A non-positive target or horizon should raise `ValueError` at construction. Without the check the controller divides by zero or flips sign later.
Graded as: missing_documented_error.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "missing_documented_error"
DESCRIPTION = "No validation in `__init__`"
SEEN_IN = "the unseen2 set (v52), written outside the project from the docstrings alone"


class AdaptiveKLController(AdaptiveKLController):
    """The solution's AdaptiveKLController with __init__ replaced."""

    def __init__(self, init_kl_coef: float = 0.05, target: float = 6.0, horizon: float = 10000) -> None:
        self.value = float(init_kl_coef)
        self.target = float(target)
        self.horizon = float(horizon)

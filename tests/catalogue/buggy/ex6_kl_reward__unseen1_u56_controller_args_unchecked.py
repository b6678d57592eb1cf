"""Buggy (u56 of the landing-7 unseen set, written outside the project from the docstrings alone):
constructor validation removed.

Clause broken: "Raises: ValueError: (constructor) if target or horizon is not positive."
Expected diagnosis (the set's manifest): target = 0 or a negative horizon is accepted (then divides by zero or flips the sign) instead of raising.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "missing_documented_error"
DESCRIPTION = "constructor validation removed"
SEEN_IN = "the landing-7 unseen set (u56), written outside the project from the docstrings alone"


class AdaptiveKLController(AdaptiveKLController):
    """The solution's AdaptiveKLController with __init__ replaced."""

    def __init__(self, init_kl_coef: float = 0.05, target: float = 6.0, horizon: float = 10000) -> None:
        self.value = float(init_kl_coef)
        self.target = float(target)
        self.horizon = float(horizon)

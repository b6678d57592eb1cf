"""Buggy (u53 of the landing-7 unseen set, written outside the project from the docstrings alone):
no clip on the proportional error.

Clause broken: "e = clip(current_kl/target − 1, −0.2, 0.2)"
Expected diagnosis (the set's manifest): The adaptive controller's step is unbounded, so a large KL makes β jump.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "adaptive_kl_no_clip"
DESCRIPTION = "no clip on the proportional error"
SEEN_IN = "the landing-7 unseen set (u53), written outside the project from the docstrings alone"


class AdaptiveKLController(AdaptiveKLController):
    """The solution's AdaptiveKLController with update replaced."""

    def update(self, current_kl: float, n_steps: int) -> None:
        proportional_error = float(current_kl) / self.target - 1.0
        self.value = self.value * (1.0 + proportional_error * n_steps / self.horizon)

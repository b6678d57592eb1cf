"""Buggy (u54 of the landing-7 unseen set, written outside the project from the docstrings alone):
clip(current_kl − target, ...): error not relative to the target.

Clause broken: "e = clip(current_kl/target − 1, −0.2, 0.2)"
Expected diagnosis (the set's manifest): The proportional error must be relative (KL/target − 1), not absolute.
Graded as: adaptive_kl_wrong_update since landing 11 (the absolute error is one of the controller's variants;
unseen6's x60 made the same mistake), wrong_value before.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "adaptive_kl_wrong_update"
DESCRIPTION = "clip(current_kl − target, ...): error not relative to the target"
SEEN_IN = "the landing-7 unseen set (u54), written outside the project from the docstrings alone"


class AdaptiveKLController(AdaptiveKLController):
    """The solution's AdaptiveKLController with update replaced."""

    def update(self, current_kl: float, n_steps: int) -> None:
        proportional_error = min(max(float(current_kl) - self.target, -0.2), 0.2)
        self.value = self.value * (1.0 + proportional_error * n_steps / self.horizon)

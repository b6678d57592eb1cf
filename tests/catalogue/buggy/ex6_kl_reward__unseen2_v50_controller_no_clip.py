"""Buggy (v50 of the unseen2 set, written outside the project from the docstrings alone):
The proportional error is not clipped.

Clause broken: “e = clip(current_kl / target − 1, −0.2, 0.2)”
Expected diagnosis (the set's manifest): The error is not clipped to [−0.2, 0.2], so one large-KL batch moves β too far. Clip it as TRL does.
Graded as: adaptive_kl_no_clip.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "adaptive_kl_no_clip"
DESCRIPTION = "The proportional error is not clipped"
SEEN_IN = "the unseen2 set (v50), written outside the project from the docstrings alone"


class AdaptiveKLController(AdaptiveKLController):
    """The solution's AdaptiveKLController with update replaced."""

    def update(self, current_kl: float, n_steps: int) -> None:
        proportional_error = float(current_kl) / self.target - 1.0
        self.value = self.value * (1.0 + proportional_error * n_steps / self.horizon)

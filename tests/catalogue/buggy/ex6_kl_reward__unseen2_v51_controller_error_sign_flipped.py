"""Buggy (v51 of the unseen2 set, written outside the project from the docstrings alone):
Sign flipped: e = clip(1 − current_kl/target).

Clause broken: “e = clip(current_kl / target − 1, −0.2, 0.2); value ← value · (1 + e · n_steps / horizon)”
Expected diagnosis (the set's manifest): Your controller lowers β when the KL is above target (and raises it when below), pushing the KL away from the target. The error is current_kl/target − 1.
Graded as: adaptive_kl_wrong_update.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "adaptive_kl_wrong_update"
DESCRIPTION = "Sign flipped: e = clip(1 − current_kl/target)"
SEEN_IN = "the unseen2 set (v51), written outside the project from the docstrings alone"


class AdaptiveKLController(AdaptiveKLController):
    """The solution's AdaptiveKLController with update replaced."""

    def update(self, current_kl: float, n_steps: int) -> None:
        proportional_error = min(max(1.0 - float(current_kl) / self.target, -0.2), 0.2)
        self.value = self.value * (1.0 + proportional_error * n_steps / self.horizon)

"""Buggy (u57 of the landing-7 unseen set, written outside the project from the docstrings alone):
n_steps ignored.

Clause broken: "value ← value·(1 + e·n_steps/horizon)"
Expected diagnosis (the set's manifest): β moves about n_steps times too slowly: the batch size of sequences is not used.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "adaptive_kl_wrong_update"
DESCRIPTION = "n_steps ignored"
SEEN_IN = "the landing-7 unseen set (u57), written outside the project from the docstrings alone"


class AdaptiveKLController(AdaptiveKLController):
    """The solution's AdaptiveKLController with update replaced."""

    def update(self, current_kl: float, n_steps: int) -> None:
        proportional_error = min(max(float(current_kl) / self.target - 1.0, -0.2), 0.2)
        self.value = self.value * (1.0 + proportional_error / self.horizon)

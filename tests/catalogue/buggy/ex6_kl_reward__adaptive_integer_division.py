"""Buggy: n_steps // horizon (floor division) in the controller's update.

For any batch smaller than the horizon (always: 128 ≪ 10000) the step is 0 and
β never moves: a Python slip that looks like the formula.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "adaptive_kl_wrong_update"
DESCRIPTION = "AdaptiveKLController.update uses n_steps // horizon: beta never changes for n_steps < horizon"
SEEN_IN = "google-research/batch-ppo#54 (adaptive penalty that never moves); classroom mistake (// for /)"


class AdaptiveKLController:
    def __init__(self, init_kl_coef=0.05, target=6.0, horizon=10000):
        self.value = init_kl_coef
        self.target = target
        self.horizon = horizon

    def update(self, current_kl, n_steps):
        e = min(max(current_kl / self.target - 1, -0.2), 0.2)
        self.value *= 1 + e * (n_steps // self.horizon)

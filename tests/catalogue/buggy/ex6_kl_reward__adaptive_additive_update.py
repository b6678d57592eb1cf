"""Buggy: the controller adds e·n/H to β instead of multiplying β by (1 + e·n/H)."""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "adaptive_kl_wrong_update"
DESCRIPTION = "AdaptiveKLController.update does value += e * n_steps / horizon (additive, not multiplicative)"
SEEN_IN = "verl-project/verl#1984 (confusion over the controller's update rule and n_steps)"


class AdaptiveKLController:
    def __init__(self, init_kl_coef=0.05, target=6.0, horizon=10000):
        self.value = init_kl_coef
        self.target = target
        self.horizon = horizon

    def update(self, current_kl, n_steps):
        e = max(-0.2, min(0.2, current_kl / self.target - 1))
        self.value += e * n_steps / self.horizon

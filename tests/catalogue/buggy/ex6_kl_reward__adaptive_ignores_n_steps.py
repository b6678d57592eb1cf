"""Buggy: one update moves β by e/H whatever the number of sequences in the batch.

verl#1984 argues n_steps should be a step count; in TRL (and the contract) it
is the batch's number of sequences, so β moves 128× too slowly here.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "adaptive_kl_wrong_update"
DESCRIPTION = "AdaptiveKLController.update ignores n_steps (value *= 1 + e / horizon)"
SEEN_IN = "verl-project/verl#1984 (n_steps read as a step count rather than the batch size)"


class AdaptiveKLController:
    def __init__(self, init_kl_coef=0.05, target=6.0, horizon=10000):
        self.value = init_kl_coef
        self.target = target
        self.horizon = horizon

    def update(self, current_kl, n_steps):
        e = max(-0.2, min(0.2, current_kl / self.target - 1))
        self.value *= 1 + e / self.horizon   # one update = one step

"""Buggy: the adaptive KL controller without the ±0.2 clip on the proportional error.

One batch with a huge KL (a reward-hacking spike) then multiplies β by a large
factor in a single update; Ziegler et al. clip the error to [−0.2, 0.2].
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "adaptive_kl_no_clip"
DESCRIPTION = "AdaptiveKLController.update uses e = current_kl/target - 1 without clipping to [-0.2, 0.2]"
SEEN_IN = "radixark/miles#3222 and NVIDIA-NeMo/labs-molt#17 (tests pinning the +-0.2 clip); CarperAI/trlx#361"


class AdaptiveKLController:
    """Adaptive KL coefficient (Ziegler et al. 2019)."""

    def __init__(self, init_kl_coef=0.05, target=6.0, horizon=10000):
        self.value = init_kl_coef
        self.target = target
        self.horizon = horizon

    def update(self, current_kl, n_steps):
        proportional_error = current_kl / self.target - 1
        self.value *= 1 + proportional_error * n_steps / self.horizon

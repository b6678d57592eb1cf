"""Buggy (x46 of the unseen8 set, written outside the project from the docstrings alone):
AdaptiveKLController.update computes the error with torch.clamp on a tensor, so value becomes a float32 tensor.

Clause broken: “value: a Python float”
Expected diagnosis (the set's manifest): after update() your β is a torch tensor: keep it a Python float
Graded as: wrong_type (landing 12's grader said only wrong_value (float32 rounding)).
"""
import torch

EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "wrong_type"
DESCRIPTION = "AdaptiveKLController.update computes the error with torch.clamp on a tensor, so value becomes a float32 tensor"
SEEN_IN = "the unseen8 set (x46), written outside the project from the docstrings alone"


class AdaptiveKLController:
    """TRL's adaptive KL coefficient (Ziegler et al. 2019), steering the KL towards ``target`` (Book §5.8–5.9).

    e = clip(current_kl / target − 1, −0.2, 0.2);  value ← value · (1 + e · n_steps / horizon).
    Units, as TRL: ``current_kl`` is the batch mean of each sequence's *summed*
    KL (nats per sequence); ``n_steps`` is the number of sequences in the batch.

    Attributes:
        value: the current coefficient β (a Python float).
        target: the KL target (the book's ``target_kl`` = 6.0).
        horizon: how many sequences it takes to move β by up to ~20%.

    Raises:
        ValueError: (constructor) if ``target`` or ``horizon`` is not positive.

    Example (KL 9 nats vs target 6: e = clip(0.5) = 0.2; 0.05·(1 + 0.2·128/10000) = 0.050128):
        >>> ctl = AdaptiveKLController(init_kl_coef=0.05, target=6.0, horizon=10000)
        >>> ctl.update(9.0, 128)
        >>> round(ctl.value, 9)
        0.050128
    """

    def __init__(self, init_kl_coef: float = 0.05, target: float = 6.0, horizon: float = 10000) -> None:
        """Start at ``value = init_kl_coef`` (see the class docstring for the arguments)."""
        ### BEGIN SOLUTION
        # TODO: implement: store value = init_kl_coef, target and horizon as floats; ValueError if target <= 0 or horizon <= 0.
        if target <= 0 or horizon <= 0:
            raise ValueError(f"target and horizon must be positive, got target={target}, horizon={horizon}")
        self.value = float(init_kl_coef)
        self.target = float(target)
        self.horizon = float(horizon)
        ### END SOLUTION

    def update(self, current_kl: float, n_steps: int) -> None:
        """Move ``value`` towards the target: e = clip(current_kl/target − 1, −0.2, 0.2), value ← value·(1 + e·n_steps/horizon).

        Args:
            current_kl: batch mean of the per-sequence summed KL, nats (float or 0-dim tensor).
            n_steps: number of sequences in the batch.
        """
        ### BEGIN SOLUTION
        # TODO: implement e = clip(current_kl / target - 1, -0.2, 0.2) and value <- value * (1 + e * n_steps / horizon), keeping value a Python float.
        proportional_error = torch.clamp(torch.as_tensor(current_kl) / self.target - 1.0, -0.2, 0.2)
        self.value = self.value * (1.0 + proportional_error * n_steps / self.horizon)

"""Correct variant (c06 of the unseen2 set, written outside the project from the docstrings
alone): Last real token found as mask & ~shifted-mask (one-hot), rewards built with `torch.where` instead of `scatter_add`; controller update written as value + value·e·(n/h) with explicit if-clipping.
"""
EXERCISE = "ex6_kl_reward"
DESCRIPTION = "c06: Last real token found as mask & ~shifted-mask (one-hot), rewards built with `torch.where` instead of `scatter_add`; controller update written as value + value·e·(n/h) with explicit if-clipping"

import torch

__all__ = ["per_token_kl", "kl_shaped_rewards", "AdaptiveKLController"]


def per_token_kl(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-token KL estimate kl_t = log π(a_t|s_t) − log π_ref(a_t|s_t) (Book §5.6; TRL's ``kl_penalty="kl"``).

    The single-sample estimate of KL(π ‖ π_ref) at the sampled token; it can
    be negative on a token, its expectation under π is not.

    Args:
        logp: Float[batch, resp_len], log-probs of the sampled tokens under the policy.
        ref_logp: Float[batch, resp_len], the same under the frozen reference policy.
        mask: [batch, resp_len] bool/int/float, 1 on real tokens.

    Returns:
        Float[batch, resp_len] in nats, dtype/device of ``logp``, detached;
        exactly 0 on padding.

    Raises:
        ValueError: if the three shapes differ.

    Example:
        >>> import torch
        >>> logp = torch.tensor([[-1.0, -2.0, 5.0]])
        >>> ref_logp = torch.tensor([[-1.5, -1.0, -9.0]])
        >>> per_token_kl(logp, ref_logp, torch.tensor([[1, 1, 0]])).tolist()
        [[0.5, -1.0, 0.0]]
    """
    if logp.shape != ref_logp.shape or logp.shape != mask.shape:
        raise ValueError("logp, ref_logp and mask must share one shape")
    with torch.no_grad():
        return (logp - ref_logp.to(logp.dtype)).masked_fill(~mask.bool(), 0.0)


def kl_shaped_rewards(
    scores: torch.Tensor,
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    kl_coef: float = 0.05,
    placement: str = "per_token",
) -> torch.Tensor:
    """Token-level rewards: the reward model's score minus the KL penalty (Book §5.6, fig. 5.1).

    - ``"per_token"`` (TRL's ``compute_rewards``): −kl_coef·kl_t on every real
      token, plus ``scores[b]`` on row b's last real token; 0 on padding.
      Penalises the *sum* of a row's KL.
    - ``"last_token"`` (the book's R = r_RM − 0.05 × mean_KL): 0 everywhere but
      the last real token, which gets scores[b] − kl_coef·(masked mean of row b's kl).
      Penalises the *mean* of a row's KL.

    Args:
        scores: Float[batch], the reward model's score per response.
        logp: Float[batch, resp_len], policy log-probs of the sampled tokens.
        ref_logp: Float[batch, resp_len], reference log-probs of the same tokens.
        mask: [batch, resp_len] bool/int/float, 1 on real tokens (every row has ≥ 1).
        kl_coef: β (``init_kl_coef`` = 0.05, or the adaptive controller's ``value``).
        placement: ``"per_token"`` or ``"last_token"``.

    Returns:
        Float[batch, resp_len], dtype/device of ``logp``, detached; 0 on padding.

    Raises:
        ValueError: on an unknown ``placement``, or if ``scores`` is not [batch]
            or the token-level shapes differ.

    Example (kl = (0.5, −1.0), score 2, β = 0.1: per token (−0.05, 0.1 + 2);
    last token: 2 − 0.1·(0.5 − 1.0)/2 = 2.025):
        >>> import torch
        >>> logp, ref_logp = torch.tensor([[-1.0, -2.0, 5.0]]), torch.tensor([[-1.5, -1.0, -9.0]])
        >>> m, score = torch.tensor([[1, 1, 0]]), torch.tensor([2.0])
        >>> [round(x, 6) for x in kl_shaped_rewards(score, logp, ref_logp, m, kl_coef=0.1)[0].tolist()]
        [-0.05, 2.1, 0.0]
        >>> [round(x, 6) for x in kl_shaped_rewards(score, logp, ref_logp, m, 0.1, "last_token")[0].tolist()]
        [0.0, 2.025, 0.0]
    """
    if placement == "per_token":
        per_tok = True
    elif placement == "last_token":
        per_tok = False
    else:
        raise ValueError(f"unknown placement {placement!r}")
    kl = per_token_kl(logp, ref_logp, mask)
    if scores.ndim != 1 or scores.shape[0] != logp.shape[0]:
        raise ValueError("scores must be [batch]")
    keep = mask.bool()
    nxt = torch.cat([keep[:, 1:], torch.zeros_like(keep[:, :1])], dim=1)
    is_last = keep & ~nxt                                             # (B, T) one-hot of the last real token
    s = scores.detach().to(device=logp.device, dtype=logp.dtype)
    zero = torch.zeros((), dtype=logp.dtype, device=logp.device)
    if per_tok:
        out = torch.where(keep, kl * (-kl_coef), zero)
        out = out + torch.where(is_last, s[:, None], zero)
    else:
        row_mean = kl.sum(1) / keep.sum(1).to(logp.dtype)
        out = torch.where(is_last, (s - kl_coef * row_mean)[:, None], zero)
    return out


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
        self.target = float(target)
        self.horizon = float(horizon)
        if not (self.target > 0 and self.horizon > 0):
            raise ValueError("target and horizon must be positive")
        self.value = float(init_kl_coef)

    def update(self, current_kl: float, n_steps: int) -> None:
        """Move ``value`` towards the target: e = clip(current_kl/target − 1, −0.2, 0.2), value ← value·(1 + e·n_steps/horizon).

        Args:
            current_kl: batch mean of the per-sequence summed KL, nats (float or 0-dim tensor).
            n_steps: number of sequences in the batch.
        """
        ratio = float(current_kl) / self.target
        err = ratio - 1.0
        if err > 0.2:
            err = 0.2
        elif err < -0.2:
            err = -0.2
        self.value = float(self.value + self.value * err * (n_steps / self.horizon))

"""Buggy (w16 of the unseen3 set, written outside the project from the docstrings alone):
The per-token entropy averages p·log p over the vocabulary (`.mean(dim=-1)`) instead of summing it.

Clause broken: “H[π_θ(·|s_t)] = −Σ_v p_v log p_v”
Expected diagnosis (the set's manifest): Your entropy is divided by the vocabulary size: sum p·log p over the vocabulary, average only over tokens.
Graded as: entropy_mean_over_vocab (landing 8's grader said only wrong_value).
"""
import torch

EXERCISE = "ex3_full_loss"
DIAGNOSIS = "entropy_mean_over_vocab"
DESCRIPTION = "entropy averaged over the vocabulary instead of summed"
SEEN_IN = "the unseen3 set (w16), written outside the project from the docstrings alone"


def entropy_from_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked mean of the per-token entropy H[π_θ(·|s_t)] = −Σ_v p_v log p_v (the c₂ term of Book eq. 5.2).

    Must be stable for (finite) logits of any size: a token with p_v ≈ 0 must
    contribute 0, not nan.

    Args:
        logits: Float[batch, resp_len, vocab], the live policy's logits.
        mask: [batch, resp_len] bool/int/float, 1 on real tokens.

    Returns:
        0-dim tensor in nats, dtype/device of ``logits``, differentiable w.r.t. ``logits``.

    Raises:
        ValueError: if ``mask.shape != logits.shape[:2]``.

    Example (uniform over 4 tokens: H = log 4 ≈ 1.386294; the padded token does not count):
        >>> import torch
        >>> logits = torch.stack([torch.zeros(4), torch.tensor([20.0, -20.0, 0.0, 0.0])]).view(1, 2, 4)
        >>> round(entropy_from_logits(logits, torch.tensor([[1.0, 0.0]])).item(), 5)
        1.38629
    """
    ### BEGIN SOLUTION
    # TODO: implement the masked mean over tokens of -sum_v p_v log p_v, with log p from torch.log_softmax (stable: no log of an underflowed p), raise ValueError if mask.shape != logits.shape[:2].
    if logits.dim() != 3 or mask.shape != logits.shape[:2]:
        raise ValueError(
            f"need logits [batch, resp_len, vocab] and mask [batch, resp_len], got {tuple(logits.shape)} "
            f"and {tuple(mask.shape)}"
        )
    # log_softmax of finite logits is finite, so p·log p is 0·(finite) where p underflows: no nan.
    logp = torch.log_softmax(logits, dim=-1)  # (B, T, V)
    entropy = -(logp.exp() * logp).mean(dim=-1)  # (B, T)
    return masked_mean(entropy, mask)

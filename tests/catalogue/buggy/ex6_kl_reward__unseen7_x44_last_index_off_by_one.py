"""Buggy (x44 of the unseen7 set, written outside the project from the docstrings alone):
Kl_shaped_rewards indexes each row's last real token at mask.sum(1), one past it: the score lands on the first padding position and a full row raises.

Clause broken: “the score on the last real token (index n_real − 1)”
Expected diagnosis (the set's manifest): mask.sum(1) is a length, not the last index: the score lands on padding
Graded as: score_on_padding (landing 12's grader said only wrong_value (the probe's full row raised)).
"""
import torch

EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "score_on_padding"
ALSO = "raises_error"  # a row with no padding has no index n_real: scatter_add raises
DESCRIPTION = "kl_shaped_rewards indexes each row's last real token at mask.sum(1), one past it: the score lands on the first padding position and a full row raises"
SEEN_IN = "the unseen7 set (x44), written outside the project from the docstrings alone"


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
    ### BEGIN SOLUTION
    # TODO: implement the two placements: "per_token" = -kl_coef*kl_t on real tokens plus the score on each row's last real token; "last_token" = score - kl_coef*(row's masked mean kl) on the last real token only; 0 on padding, detached; ValueError on an unknown placement or bad shapes.
    if placement not in ("per_token", "last_token"):
        raise ValueError(f"placement must be 'per_token' or 'last_token', got {placement!r}")
    kl = per_token_kl(logp, ref_logp, mask)  # (B, T), 0 on padding; also checks the shapes
    if scores.shape != logp.shape[:1]:
        raise ValueError(f"scores must be [batch] = {tuple(logp.shape[:1])}, got {tuple(scores.shape)}")
    real = mask.bool()
    n_real = real.sum(dim=1)  # (B,)
    last = n_real.unsqueeze(1)  # (B, 1): index of each row's last real token (mask is a prefix)
    scores = scores.detach().to(dtype=kl.dtype, device=kl.device)
    if placement == "per_token":
        rewards = torch.where(real, -kl_coef * kl, torch.zeros_like(kl))  # (B, T); +0.0 (not −0.0) on padding
        final = scores  # (B,)
    else:
        rewards = torch.zeros_like(kl)
        final = scores - kl_coef * kl.sum(dim=1) / n_real  # (B,)
    # scatter_add (not in-place on an input): adds `final` at each row's last real token.
    return rewards.scatter_add(1, last, final.unsqueeze(1))

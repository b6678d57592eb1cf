"""Buggy (v47 of the unseen2 set, written outside the project from the docstrings alone):
Penalises the row's summed KL instead of its mean.

Clause broken: “``"last_token"`` ... scores[b] − kl_coef·(masked mean of row b's kl)”
Expected diagnosis (the set's manifest): In the `last_token` placement the book subtracts β × the mean KL of the row. Divide the sum by the number of real tokens.
Graded as: last_token_sum_instead_of_mean.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "last_token_sum_instead_of_mean"
DESCRIPTION = "Penalises the row's summed KL instead of its mean"
SEEN_IN = "the unseen2 set (v47), written outside the project from the docstrings alone"


def kl_shaped_rewards(
    scores: torch.Tensor,
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    kl_coef: float = 0.05,
    placement: str = "per_token",
) -> torch.Tensor:
    if placement not in ("per_token", "last_token"):
        raise ValueError(f"placement must be 'per_token' or 'last_token', got {placement!r}")
    kl = per_token_kl(logp, ref_logp, mask)  # (B, T), 0 on padding; also checks the shapes
    if scores.shape != logp.shape[:1]:
        raise ValueError(f"scores must be [batch] = {tuple(logp.shape[:1])}, got {tuple(scores.shape)}")
    real = mask.bool()
    n_real = real.sum(dim=1)  # (B,)
    last = (n_real - 1).unsqueeze(1)  # (B, 1): index of each row's last real token (mask is a prefix)
    scores = scores.detach().to(dtype=kl.dtype, device=kl.device)
    if placement == "per_token":
        rewards = torch.where(real, -kl_coef * kl, torch.zeros_like(kl))  # (B, T); +0.0 (not −0.0) on padding
        final = scores  # (B,)
    else:
        rewards = torch.zeros_like(kl)
        final = scores - kl_coef * kl.sum(dim=1)  # (B,)
    # scatter_add (not in-place on an input): adds `final` at each row's last real token.
    return rewards.scatter_add(1, last, final.unsqueeze(1))

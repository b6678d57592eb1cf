"""Buggy (v46 of the unseen2 set, written outside the project from the docstrings alone):
Adds the score at position T−1 for every row (the final column, padding for short rows).

Clause broken: “plus ``scores[b]`` on row b's last real token”
Expected diagnosis (the set's manifest): The score lands on the last column, not on each row's last real token, so padded rows lose it. Find the index of the last real token per row.
Graded as: score_on_padding.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "score_on_padding"
DESCRIPTION = "Adds the score at position T−1 for every row (the final column, padding for short rows)"
SEEN_IN = "the unseen2 set (v46), written outside the project from the docstrings alone"


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
    last = torch.full_like(n_real, mask.shape[1] - 1).unsqueeze(1)  # (B, 1): the final position
    scores = scores.detach().to(dtype=kl.dtype, device=kl.device)
    if placement == "per_token":
        rewards = torch.where(real, -kl_coef * kl, torch.zeros_like(kl))  # (B, T); +0.0 (not −0.0) on padding
        final = scores  # (B,)
    else:
        rewards = torch.zeros_like(kl)
        final = scores - kl_coef * kl.sum(dim=1) / n_real  # (B,)
    # scatter_add (not in-place on an input): adds `final` at each row's last real token.
    return rewards.scatter_add(1, last, final.unsqueeze(1))

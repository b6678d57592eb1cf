"""Buggy (v49 of the unseen2 set, written outside the project from the docstrings alone):
`scatter` instead of `scatter_add`: the score overwrites the last token's KL penalty instead of adding to it.

Clause broken: “``"per_token"`` ... −kl_coef·kl_t on every real token, plus ``scores[b]`` on row b's last real token”
Expected diagnosis (the set's manifest): The last real token should carry both −β·kl and the score. Your score replaces the KL penalty there. Add it instead.
Graded as: score_replaces_kl_penalty (landing 8's grader said only wrong_value: no variant reproduced scatter
instead of scatter_add; the unseen3 set's w42 made the same mistake).
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "score_replaces_kl_penalty"
DESCRIPTION = "`scatter` instead of `scatter_add`: the score overwrites the last token's KL penalty instead of adding to it"
SEEN_IN = "the unseen2 set (v49), written outside the project from the docstrings alone"


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
        final = scores - kl_coef * kl.sum(dim=1) / n_real  # (B,)
    # scatter_add (not in-place on an input): adds `final` at each row's last real token.
    return rewards.scatter(1, last, final.unsqueeze(1))

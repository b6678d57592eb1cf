"""Buggy (v54 of the unseen2 set, written outside the project from the docstrings alone):
The score is not cast to logp's dtype and is added through a one-hot, so float64 scores promote float32 rewards to float64.

Clause broken: “Float[batch, resp_len], dtype/device of ``logp``”
Expected diagnosis (the set's manifest): The output dtype followed `scores`, not `logp`. Cast the scores to logp's dtype before placing them.
Graded as: wrong_dtype.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "wrong_dtype"
DESCRIPTION = "The score is not cast to logp's dtype and is added through a one-hot, so float64 scores promote float32 rewards to float64"
SEEN_IN = "the unseen2 set (v54), written outside the project from the docstrings alone"


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
    scores = scores.detach().to(device=kl.device)
    if placement == "per_token":
        rewards = torch.where(real, -kl_coef * kl, torch.zeros_like(kl))  # (B, T); +0.0 (not −0.0) on padding
        final = scores  # (B,)
    else:
        rewards = torch.zeros_like(kl)
        final = scores - kl_coef * kl.sum(dim=1) / n_real  # (B,)
    # scatter_add (not in-place on an input): adds `final` at each row's last real token.
    onehot = torch.zeros_like(rewards, dtype=final.dtype).scatter(1, last, 1.0)
    return rewards + onehot * final.unsqueeze(1)

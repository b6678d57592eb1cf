"""Correct variant (c03 of the landing-7 unseen set, written outside the project from the docstrings
alone): one-hot placement of the last real token found by argmax of the cumulative mask count; KL by multiplying by the mask.
"""
EXERCISE = "ex6_kl_reward"
DESCRIPTION = "c03: one-hot placement of the last real token found by argmax of the cumulative mask count; KL by multiplying by the mask"

import torch


def per_token_kl(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if logp.shape != ref_logp.shape or logp.shape != mask.shape:
        raise ValueError(f"shapes differ: {tuple(logp.shape)}, {tuple(ref_logp.shape)}, {tuple(mask.shape)}")
    with torch.no_grad():
        diff = logp - ref_logp.to(logp.dtype)
        return diff * mask.bool().to(logp.dtype) + 0.0


def kl_shaped_rewards(
    scores: torch.Tensor,
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    kl_coef: float = 0.05,
    placement: str = "per_token",
) -> torch.Tensor:
    if placement not in {"per_token", "last_token"}:
        raise ValueError(f"unknown placement {placement!r}")
    kl = per_token_kl(logp, ref_logp, mask)
    if scores.dim() != 1 or scores.shape[0] != logp.shape[0]:
        raise ValueError(f"scores must be [batch], got {tuple(scores.shape)}")
    with torch.no_grad():
        real = mask.bool()
        counts = real.long().cumsum(dim=1)
        last_idx = counts.argmax(dim=1)  # first position reaching the row's count = its last real token
        onehot = torch.nn.functional.one_hot(last_idx, logp.shape[1]).to(kl.dtype)  # (B, T)
        s = scores.to(device=kl.device, dtype=kl.dtype).unsqueeze(1)
        if placement == "per_token":
            out = -kl_coef * kl + s * onehot
        else:
            row_mean = kl.sum(dim=1, keepdim=True) / real.sum(dim=1, keepdim=True).to(kl.dtype)
            out = (s - kl_coef * row_mean) * onehot
        return torch.where(real, out, torch.zeros_like(out))

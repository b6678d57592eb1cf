"""Buggy (v53 of the unseen2 set, written outside the project from the docstrings alone):
`per_token_kl` is not detached, so rewards keep a gradient path into the log-probs.

Clause broken: “Returns: ... detached”
Expected diagnosis (the set's manifest): KL and rewards are constants for the update: detach them, otherwise gradients leak through the reward.
Graded as: rewards_keep_gradient.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "rewards_keep_gradient"
DESCRIPTION = "`per_token_kl` is not detached, so rewards keep a gradient path into the log-probs"
SEEN_IN = "the unseen2 set (v53), written outside the project from the docstrings alone"


def per_token_kl(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if not (logp.shape == ref_logp.shape == mask.shape):
        raise ValueError(
            f"logp, ref_logp and mask must share one shape, got {tuple(logp.shape)}, "
            f"{tuple(ref_logp.shape)}, {tuple(mask.shape)}"
        )
    kl = logp - ref_logp.to(logp.dtype)  # (B, T)
    return torch.where(mask.bool(), kl, torch.zeros((), dtype=kl.dtype, device=kl.device))

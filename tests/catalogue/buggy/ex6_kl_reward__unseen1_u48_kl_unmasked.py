"""Buggy (u48 of the landing-7 unseen set, written outside the project from the docstrings alone):
per_token_kl returns logp − ref_logp unmasked.

Clause broken: "exactly 0 on padding"
Expected diagnosis (the set's manifest): Padding positions hold junk KL, and the last_token placement's row mean is polluted by it.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "kl_unmasked"
DESCRIPTION = "per_token_kl returns logp − ref_logp unmasked"
SEEN_IN = "the landing-7 unseen set (u48), written outside the project from the docstrings alone"
ALSO = "rewards_not_zero_on_padding"


def per_token_kl(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if not (logp.shape == ref_logp.shape == mask.shape):
        raise ValueError(
            f"logp, ref_logp and mask must share one shape, got {tuple(logp.shape)}, "
            f"{tuple(ref_logp.shape)}, {tuple(mask.shape)}"
        )
    kl = (logp - ref_logp.to(logp.dtype)).detach()  # (B, T)
    return kl

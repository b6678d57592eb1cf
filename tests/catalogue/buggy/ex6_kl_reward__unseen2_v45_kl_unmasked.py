"""Buggy (v45 of the unseen2 set, written outside the project from the docstrings alone):
`per_token_kl` returns logp − ref_logp everywhere (junk at padding); the last_token placement then averages junk.

Clause broken: “Float[batch, resp_len] in nats ... exactly 0 on padding.”
Expected diagnosis (the set's manifest): Your per-token KL is not 0 on padding. Junk there leaks into anything that sums or averages it. Mask it to exactly 0.
Graded as: kl_unmasked (also rewards_not_zero_on_padding).
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "kl_unmasked"
ALSO = "rewards_not_zero_on_padding"
DESCRIPTION = "`per_token_kl` returns logp − ref_logp everywhere (junk at padding); the last_token placement then averages junk"
SEEN_IN = "the unseen2 set (v45), written outside the project from the docstrings alone"


def per_token_kl(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if not (logp.shape == ref_logp.shape == mask.shape):
        raise ValueError(
            f"logp, ref_logp and mask must share one shape, got {tuple(logp.shape)}, "
            f"{tuple(ref_logp.shape)}, {tuple(mask.shape)}"
        )
    kl = (logp - ref_logp.to(logp.dtype)).detach()  # (B, T)
    return kl

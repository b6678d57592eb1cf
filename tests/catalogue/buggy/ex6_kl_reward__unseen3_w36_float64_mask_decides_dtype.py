"""Buggy (w36 of the unseen3 set, written outside the project from the docstrings alone):
A float64 mask turns float32 log-probs' KL into float64.

Clause broken: “Returns: Float[batch, resp_len] in nats, dtype/device of logp”
Expected diagnosis (the set's manifest): With a float64 mask and float32 log-probs you return float64; the mask must not decide the dtype (use `torch.where(mask.bool(), …)`).
Graded as: mask_dtype_unsupported, whose words now cover a mask dtype that decides the output's dtype (landing 8's
grader did not grade this clause: full marks).
"""
import torch

EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "mask_dtype_unsupported"
DESCRIPTION = "a float64 mask turns float32 log-probs' KL into float64"
SEEN_IN = "the unseen3 set (w36), written outside the project from the docstrings alone"


def per_token_kl(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-token KL estimate kl_t = log π(a_t|s_t) − log π_ref(a_t|s_t) (Book §5.6; TRL's ``kl_penalty="kl"``).

    The single-sample estimate of KL(π ‖ π_ref) at the sampled token; it can
    be negative on a token, its expectation under π is not.

    Args:
        logp: Float[batch, resp_len], log-probs of the sampled tokens under the policy.
        ref_logp: Float[batch, resp_len], the same under the frozen reference policy.
        mask: [batch, resp_len] bool/int/float, 1 on real tokens.

    Returns:
        Float[batch, resp_len] in nats, dtype/device of ``logp``, detached;
        exactly 0 on padding.

    Raises:
        ValueError: if the three shapes differ.

    Example:
        >>> import torch
        >>> logp = torch.tensor([[-1.0, -2.0, 5.0]])
        >>> ref_logp = torch.tensor([[-1.5, -1.0, -9.0]])
        >>> per_token_kl(logp, ref_logp, torch.tensor([[1, 1, 0]])).tolist()
        [[0.5, -1.0, 0.0]]
    """
    ### BEGIN SOLUTION
    # TODO: implement kl_t = logp - ref_logp on real tokens and exactly 0 on padding, detached, in the dtype of logp; raise ValueError if the shapes differ.
    if not (logp.shape == ref_logp.shape == mask.shape):
        raise ValueError(
            f"logp, ref_logp and mask must share one shape, got {tuple(logp.shape)}, "
            f"{tuple(ref_logp.shape)}, {tuple(mask.shape)}"
        )
    kl = (logp - ref_logp.to(logp.dtype)).detach()  # (B, T)
    return kl * mask.to(kl.dtype) if not mask.dtype.is_floating_point else kl * mask

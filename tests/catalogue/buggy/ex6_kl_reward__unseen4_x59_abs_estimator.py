"""Buggy (x59 of the unseen4 set, written outside the project from the docstrings alone):
Per-token KL as |logp − ref_logp| (TRL's abs estimator).

Clause broken: “kl_t = log π_θ(a_t|s_t) − log π_ref(a_t|s_t)”
Graded as: kl_wrong_estimator (landing 8's grader said only wrong_value).
"""
import torch

EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "kl_wrong_estimator"
DESCRIPTION = "per-token KL as |logp − ref_logp| (TRL's abs estimator)"
SEEN_IN = "the unseen4 set (x59), written outside the project from the docstrings alone"


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
    kl = (logp - ref_logp.to(logp.dtype)).abs().detach()  # (B, T)
    return torch.where(mask.bool(), kl, torch.zeros((), dtype=kl.dtype, device=kl.device))

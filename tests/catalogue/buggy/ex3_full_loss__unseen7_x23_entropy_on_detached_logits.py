"""Buggy (x23 of the unseen7 set, written outside the project from the docstrings alone):
Ppo_loss computes its entropy bonus on logits.detach().

Clause broken: “differentiable w.r.t. logp_new, values and logits”
Expected diagnosis (the set's manifest): no gradient reaches the logits through the entropy bonus
Graded as: entropy_detached (landing 11's grader said only wrong_value).
"""
import torch

EXERCISE = "ex3_full_loss"
DIAGNOSIS = "entropy_detached"
DESCRIPTION = "ppo_loss computes its entropy bonus on logits.detach()"
SEEN_IN = "the unseen7 set (x23), written outside the project from the docstrings alone"


def ppo_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    logits: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    clip_range_value: float = 0.2,
    vf_coef: float = 0.1,
    ent_coef: float = 0.01,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The full PPO loss of Book eq. 5.2, to minimise: −L^CLIP + vf_coef·L^VF − ent_coef·H.

    The policy term is exactly exercise 2's ``clipped_surrogate_loss``
    (−masked_mean(min(r·Â, clip(r, 1−ε, 1+ε)·Â)), gradients as eq. 5.9); the value term is
    ``clipped_value_loss``; the entropy is ``entropy_from_logits``.

    Args:
        logp_new: Float[batch, resp_len], log π_θ of the taken tokens (gradient flows).
        logp_old: Float[batch, resp_len], log π_θold (constant).
        advantages: Float[batch, resp_len], Â (constant, normally whitened).
        values: Float[batch, resp_len], V_θ from the live value head (gradient flows).
        old_values: Float[batch, resp_len], V at rollout time (constant).
        returns: Float[batch, resp_len], value targets (constant).
        logits: Float[batch, resp_len, vocab], the live logits (for the entropy).
        mask: [batch, resp_len] bool/int/float, 1 on real tokens.
        clip_eps, clip_range_value, vf_coef, ent_coef: ε, c, c₁, c₂ (book: 0.2, 0.2, 0.1, 0.01).

    Returns:
        (loss, stats): ``loss`` a 0-dim tensor (dtype/device of ``logp_new``,
        differentiable w.r.t. ``logp_new``, ``values`` and ``logits``); ``stats``
        a dict of Python floats with at least
        ``approx_kl`` = masked_mean(½(logp_new − logp_old)²) (TRL's definition) and
        ``clipfrac`` = masked_mean([Â·clip(r, 1−ε, 1+ε) < Â·r]) (the tokens where the
        clip binds), plus ``policy_loss``, ``value_loss``, ``entropy`` and ``loss``.

    Raises:
        ValueError: if the token-level shapes differ or ``logits`` does not match them.

    Example (r = 1, V = R, logits uniform over 2 tokens: loss = −0.01·log 2):
        >>> import torch
        >>> z = torch.zeros(1, 2, dtype=torch.float64)
        >>> adv = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
        >>> loss, stats = ppo_loss(z, z, adv, z, z, z, torch.zeros(1, 2, 2, dtype=torch.float64), torch.ones(1, 2))
        >>> round(loss.item(), 6), stats["approx_kl"], stats["clipfrac"]
        (-0.006931, 0.0, 0.0)
    """
    ### BEGIN SOLUTION
    # TODO: implement loss = clipped policy loss (as in ex2) + vf_coef * clipped_value_loss - ent_coef * entropy_from_logits (Book eq. 5.2), and stats = {'approx_kl': masked mean of 0.5*(logp_new - logp_old)^2, 'clipfrac': masked mean of [A*clip(r) < A*r], ...} as Python floats.
    tensors = (logp_new, logp_old, advantages, values, old_values, returns, mask)
    if len({t.shape for t in tensors}) != 1 or logits.shape[:2] != mask.shape:
        raise ValueError(
            "logp_new, logp_old, advantages, values, old_values, returns, mask must share one "
            f"[batch, resp_len] shape and logits be [batch, resp_len, vocab]; got "
            f"{[tuple(t.shape) for t in tensors]} and logits {tuple(logits.shape)}"
        )
    logp_old, adv = logp_old.detach(), advantages.detach()
    ratio = torch.exp(logp_new - logp_old)  # (B, T), Book eq. 5.20
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    # Eq. 5.9's cases, boundaries included: where the clip binds the clipped term is a constant.
    binds = ((adv > 0) & (ratio >= 1.0 + clip_eps)) | ((adv < 0) & (ratio <= 1.0 - clip_eps))
    policy_loss = -masked_mean(torch.where(binds, clipped.detach(), unclipped), mask)  # −L^CLIP, eq. 5.1
    value_loss = clipped_value_loss(values, old_values, returns, mask, clip_range_value)
    entropy = entropy_from_logits(logits.detach(), mask)
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy  # minimising it maximises eq. 5.2

    with torch.no_grad():
        approx_kl = masked_mean(0.5 * (logp_new - logp_old) ** 2, mask)
        clipfrac = masked_mean((clipped < unclipped).to(unclipped.dtype), mask)
    stats = {
        "approx_kl": approx_kl.item(),
        "clipfrac": clipfrac.item(),
        "policy_loss": policy_loss.item(),
        "value_loss": value_loss.item(),
        "entropy": entropy.item(),
        "loss": loss.item(),
    }
    return loss, stats

"""Stops 2–3: the clipped surrogate, the clipped value loss, the entropy bonus and the full PPO loss (Book eqs. 5.1, 5.2, 5.9).

Conventions this reference fixes where libraries differ (CONTRACT.md, ex2/ex3):

* Everything is a *loss to minimise*: the book's objective L = L^CLIP − c₁·L_VF
  + c₂·H (eq. 5.2) becomes loss = −L^CLIP + c₁·L_VF − c₂·H.
* The value loss has **no ½** (eq. 5.2 as the book writes it). TRL 0.11,
  CleanRL (``v_loss = 0.5 * v_loss_max.mean()``) and OpenRLHF's ``ValueLoss``
  all multiply by ½; TRL then also returns it already times vf_coef.
* The entropy bonus is **in** the loss (eq. 5.2; CleanRL's ``ent_coef``).
  TRL 0.11 only reports the entropy; OpenRLHF's ``PolicyLoss`` has no entropy term.
* Masked means are token-level over the whole mini-batch (TRL). OpenRLHF's
  losses take each sequence's masked mean, then the mean over sequences,
  which weights short responses more.
* ``approx_kl`` is TRL's ½·mean((log π_θ − log π_θold)²); CleanRL reports
  mean((r − 1) − log r) (the k3 estimator).
* ``clipfrac`` is TRL's mean of [−Â·clip(r) > −Â·r] (the tokens where the clip
  binds); CleanRL counts |r − 1| > ε, which also counts tokens where the clip
  is out of the way of the min.
* Unlike TRL we never zero a mini-batch whose mean ratio exceeds a threshold
  (TRL's ``ratio_threshold = 10``): the reference computes the loss as defined.
* Advantages, returns, logp_old and old_values are constants (detached).
"""

from __future__ import annotations

import numbers

import torch

from ppo_reference.masked import check_floating, mean_over, check_same_shape, token_mask

__all__ = ["clipped_surrogate_loss", "clipped_value_loss", "entropy_from_logits", "ppo_loss"]


def _check_coef(where: str, **coefs: float) -> None:
    for name, value in coefs.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{where}: `{name}` must be a number, got {type(value).__name__}")
        if not value >= 0 or value == float("inf"):
            raise ValueError(f"{where}: `{name}` must be finite and ≥ 0, got {value}")


def _real_or_zero(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    # Padding is zeroed *before* any arithmetic, so that no junk (even inf or
    # NaN, beyond the contract's |x| ≤ 20) can reach a value or a gradient.
    return torch.where(m, x, torch.zeros((), dtype=x.dtype, device=x.device))


def _surrogate_terms(logp_new, logp_old, advantages, clip_eps, m):
    """(per-token pessimistic objective, ratio, clip-binds indicator), all [B, T]; padding: r = 1, Â = 0."""
    adv = _real_or_zero(advantages.detach().to(logp_new.dtype), m)
    log_ratio = _real_or_zero(logp_new - logp_old.detach().to(logp_new.dtype), m)
    ratio = torch.exp(log_ratio)  # (B, T), eq. 5.20
    clipped_ratio = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    # Eq. 5.9 with the book's boundaries: the gradient flows for Â > 0 and
    # r < 1+ε, and for Â < 0 and r > 1−ε; it is exactly 0 for Â > 0, r ≥ 1+ε
    # and Â < 0, r ≤ 1−ε. In each flowing case r·Â is the min; in each zero
    # case the (constant) clipped term is. Choosing the branch explicitly
    # instead of torch.min also puts the kinks r = 1±ε on the book's side
    # (torch.min would split the gradient at a tie).
    flows = ((adv > 0) & (ratio < 1.0 + clip_eps)) | ((adv < 0) & (ratio > 1.0 - clip_eps))
    objective = torch.where(flows, ratio * adv, clipped_ratio.detach() * adv)  # (B, T)
    # TRL: pg_losses2 > pg_losses, i.e. −Â·clip(r) > −Â·r.
    clip_binds = adv * clipped_ratio.detach() < adv * ratio.detach()
    return objective, ratio, clip_binds


def clipped_surrogate_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
) -> torch.Tensor:
    """PPO's clipped surrogate as a loss: −masked_mean(min(r·Â, clip(r, 1−ε, 1+ε)·Â)) (Book eq. 5.1).

    The gradient obeys the four cases of Book eq. 5.9: for Â > 0 it flows
    while r < 1+ε and is exactly 0 once r ≥ 1+ε; for Â < 0 it flows while
    r > 1−ε and is exactly 0 once r ≤ 1−ε. Padding never enters, whatever it holds.

    Args:
        logp_new: [batch, resp_len] float, log π_θ(a_t|s_t) (carries the gradient).
        logp_old: [batch, resp_len] float, log π_θold(a_t|s_t) from the rollout (detached).
        advantages: [batch, resp_len] float, Â_t, usually whitened (detached).
        mask: [batch, resp_len] bool/int/float prefix mask, 1 on real tokens.
        clip_eps: ε, dimensionless; 0.2 in the book (``cliprange``).

    Returns:
        0-dim tensor in ``logp_new``'s dtype and device, differentiable in ``logp_new``.

    Raises:
        TypeError / ValueError: non-float data, shape or device mismatch, a bad
            mask (not 0/1, not a prefix, an empty row), or ``clip_eps`` < 0.
    """
    where = "clipped_surrogate_loss"
    check_same_shape(where, logp_new=logp_new, logp_old=logp_old, advantages=advantages)
    check_floating(where, logp_new=logp_new, logp_old=logp_old, advantages=advantages)
    _check_coef(where, clip_eps=clip_eps)
    m = token_mask(mask, logp_new, where)
    objective, _, _ = _surrogate_terms(logp_new, logp_old, advantages, clip_eps, m)
    return -mean_over(objective, m)


def _value_terms(values, old_values, returns, clip_range_value, m):
    """Per-token max of the unclipped and clipped squared errors, [B, T]; 0 on padding."""
    values = _real_or_zero(values, m)
    old = _real_or_zero(old_values.detach().to(values.dtype), m)
    ret = _real_or_zero(returns.detach().to(values.dtype), m)
    # V_old + clip(V − V_old, −c, c): the same value as TRL's
    # clip_by_value(vpreds, values − c, values + c).
    values_clipped = old + torch.clamp(values - old, -clip_range_value, clip_range_value)
    loss_unclipped = (values - ret) ** 2
    loss_clipped = (values_clipped - ret) ** 2
    return torch.maximum(loss_unclipped, loss_clipped)  # (B, T)


def clipped_value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip_range_value: float = 0.2,
) -> torch.Tensor:
    """Clipped value loss: masked_mean(max((V − R)², (V_old + clip(V − V_old, −c, c) − R)²)) (Book eq. 5.2, §5.3).

    No ½ factor: eq. 5.2 writes c₁(V_θ − V^target)², and the contract keeps it.
    TRL 0.11, CleanRL and OpenRLHF all multiply by ½ (TRL then returns
    vf_coef·½·max(...)), so their number is half of this one.

    Args:
        values: [batch, resp_len] float, V_θ(s_t) from the live value head (carries the gradient).
        old_values: [batch, resp_len] float, V(s_t) stored at rollout (detached).
        returns: [batch, resp_len] float, the GAE targets A_t + V_old(s_t) (detached).
        mask: [batch, resp_len] bool/int/float prefix mask.
        clip_range_value: c, in the units of the value; 0.2 in the book (``cliprange_value``).

    Returns:
        0-dim tensor in ``values``' dtype and device, differentiable in ``values``.

    Raises:
        TypeError / ValueError: non-float data, shape or device mismatch, a bad
            mask, or ``clip_range_value`` < 0.
    """
    where = "clipped_value_loss"
    check_same_shape(where, values=values, old_values=old_values, returns=returns)
    check_floating(where, values=values, old_values=old_values, returns=returns)
    _check_coef(where, clip_range_value=clip_range_value)
    m = token_mask(mask, values, where)
    return mean_over(_value_terms(values, old_values, returns, clip_range_value, m), m)


def _token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """−Σ_v p log p per position, [B, T, V] -> [B, T]; finite for near one-hot and −inf logits.

    With z' = z − max(z) ≤ 0, e = exp(z') and s = Σ e ∈ [1, V]:
    H = log s − Σ e·z' / s, a sum of two non-negative terms, so nothing
    cancels (TRL's logsumexp(z) − Σ p·z subtracts two numbers ~1e3 for logits
    ~1e3). −inf logits are clamped to the most negative finite number so that
    a zero probability contributes 0·(−big) = 0, not NaN. The einsum avoids a
    third [B, T, V] temporary (this is the loss's costliest step).
    """
    shifted = logits - logits.amax(dim=-1, keepdim=True)  # (B, T, V), ≤ 0
    shifted.clamp_(min=torch.finfo(shifted.dtype).min)  # in place on our own temporary: no new [B, T, V]
    weights = shifted.exp()  # (B, T, V), unnormalised p
    total = weights.sum(dim=-1)  # (B, T), ≥ 1
    return total.log() - torch.einsum("btv,btv->bt", weights, shifted) / total  # (B, T)


def entropy_from_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked mean of the policy's per-token entropy H[π_θ(·|s_t)] = −Σ_v p_v log p_v (Book eq. 5.2, c₂·H).

    Args:
        logits: [batch, resp_len, vocab] float, the live policy's logits.
        mask: [batch, resp_len] bool/int/float prefix mask.

    Returns:
        0-dim tensor (nats per token) in ``logits``' dtype and device,
        differentiable in ``logits``; in [0, log vocab]. TRL 0.11's
        ``trl.core.entropy_from_logits`` instead returns the unmasked
        [batch, resp_len] entropies (the masking happens in its ``loss``).

    Raises:
        TypeError / ValueError: non-float logits, logits not 3-D, mask shape or
            device mismatch, or a bad mask.
    """
    where = "entropy_from_logits"
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"{where}: `logits` must be a torch.Tensor, got {type(logits).__name__}")
    check_floating(where, logits=logits)
    if logits.dim() != 3:
        raise ValueError(f"{where}: `logits` must be [batch, resp_len, vocab], got shape {tuple(logits.shape)}")
    m = token_mask(mask, logits[..., 0], where)
    return mean_over(_token_entropy(logits), m)


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
    """The full PPO loss: clipped_surrogate_loss + vf_coef·clipped_value_loss − ent_coef·entropy (Book eq. 5.2).

    Minimising it maximises L^CLIP − c₁·L_VF + c₂·H (eq. 5.2; c₁ = vf_coef =
    0.1, c₂ = ent_coef = 0.01 in the book). See the module docstring for how
    this differs from TRL 0.11, CleanRL and OpenRLHF.

    Args:
        logp_new: [batch, resp_len] float, log π_θ of the taken tokens (gradient).
        logp_old: [batch, resp_len] float, rollout log-probs (constant).
        advantages: [batch, resp_len] float, whitened GAE advantages (constant).
        values: [batch, resp_len] float, live value-head outputs (gradient).
        old_values: [batch, resp_len] float, rollout values (constant).
        returns: [batch, resp_len] float, value targets (constant).
        logits: [batch, resp_len, vocab] float, live logits for the entropy (gradient).
        mask: [batch, resp_len] bool/int/float prefix mask.
        clip_eps: ε of the policy clip (dimensionless).
        clip_range_value: c of the value clip (value units).
        vf_coef: c₁ ≥ 0. ent_coef: c₂ ≥ 0.

    Returns:
        (loss, stats): ``loss`` a 0-dim tensor in ``logp_new``'s dtype/device,
        differentiable in ``logp_new``, ``values`` and ``logits``; ``stats`` a
        dict of Python floats: ``loss`` (total), ``policy_loss``, ``value_loss``
        (no ½, before vf_coef), ``entropy`` (nats/token), ``approx_kl`` (TRL:
        ½·masked_mean((logp_new − logp_old)²)), ``policykl`` (masked_mean(logp_old
        − logp_new)), ``clipfrac`` (TRL: fraction of real tokens where
        Â·clip(r) < Â·r), ``vf_clipfrac`` (fraction where the clipped value
        term is the larger), ``ratio_mean``, ``ratio_max`` (over real tokens).

    Raises:
        TypeError / ValueError: non-float data, shape/device mismatch (the
            token tensors must share one shape and ``logits`` be [*that, vocab]),
            a bad mask, or a negative coefficient.
    """
    where = "ppo_loss"
    check_same_shape(
        where, logp_new=logp_new, logp_old=logp_old, advantages=advantages,
        values=values, old_values=old_values, returns=returns,
    )
    check_floating(
        where, logp_new=logp_new, logp_old=logp_old, advantages=advantages,
        values=values, old_values=old_values, returns=returns, logits=logits,
    )
    if logits.dim() != 3 or logits.shape[:2] != logp_new.shape:
        raise ValueError(
            f"{where}: `logits` has shape {tuple(logits.shape)}; expected [batch, resp_len, vocab] with "
            f"[batch, resp_len] = {tuple(logp_new.shape)}"
        )
    _check_coef(where, clip_eps=clip_eps, clip_range_value=clip_range_value, vf_coef=vf_coef, ent_coef=ent_coef)
    m = token_mask(mask, logp_new, where)  # validated once for all terms

    objective, ratio, clip_binds = _surrogate_terms(logp_new, logp_old, advantages, clip_eps, m)
    policy_loss = -mean_over(objective, m)
    value_terms = _value_terms(values, old_values, returns, clip_range_value, m)
    value_loss = mean_over(value_terms, m).to(policy_loss.dtype)
    entropy = mean_over(_token_entropy(logits), m).to(policy_loss.dtype)
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy

    with torch.no_grad():
        log_ratio = logp_new.detach() - logp_old.detach().to(logp_new.dtype)
        ratio_d = ratio.detach()
        old = old_values.detach().to(values.dtype)
        vf_unclipped = (values.detach() - returns.detach().to(values.dtype)) ** 2
        vf_clipped = (old + torch.clamp(values.detach() - old, -clip_range_value, clip_range_value)
                      - returns.detach().to(values.dtype)) ** 2
        dtype = logp_new.dtype
        numbers = torch.stack([
            loss.detach(),
            policy_loss.detach(),
            value_loss.detach(),
            entropy.detach(),
            0.5 * mean_over(log_ratio**2, m),
            mean_over(-log_ratio, m),
            mean_over(clip_binds.to(dtype), m),
            mean_over((vf_clipped > vf_unclipped).to(dtype), m).to(dtype),
            mean_over(ratio_d, m),
            torch.where(m, ratio_d, torch.zeros((), dtype=dtype, device=ratio_d.device)).max(),
        ])
    # One device->host transfer for all the stats.
    names = ("loss", "policy_loss", "value_loss", "entropy", "approx_kl", "policykl",
             "clipfrac", "vf_clipfrac", "ratio_mean", "ratio_max")
    return loss, dict(zip(names, numbers.tolist()))

"""Stop 5: the KL anchor to the reference policy, KL-shaped rewards and the adaptive KL coefficient (Book §5.5, fig. 5.1; Ziegler et al. 2019)."""

from __future__ import annotations

import math
import numbers

import torch

from ppo_reference.masked import check_floating, check_same_shape, token_mask

__all__ = ["per_token_kl", "kl_shaped_rewards", "AdaptiveKLController", "PLACEMENTS"]

PLACEMENTS = ("per_token", "last_token")


def _per_token_kl(logp, ref_logp, m):
    diff = logp.detach() - ref_logp.detach().to(logp.dtype)
    return torch.where(m, diff, torch.zeros((), dtype=logp.dtype, device=logp.device))


def per_token_kl(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The per-token KL estimate log π_θ(a_t|s_t) − log π_ref(a_t|s_t) on real tokens, 0 on padding (Book §5.5).

    This is the single-sample estimator k1 (TRL's ``kl_penalty="kl"``, the
    default; OpenRLHF's default too). Its sign is free per token (a token can
    be likelier under the reference); only its expectation under π_θ is the KL.
    TRL also offers ``"abs"``, ``"mse"`` (½·diff²) and ``"full"``; the contract
    uses ``"kl"``.

    Args:
        logp: [batch, resp_len] float, log-probs of the sampled tokens under the policy.
        ref_logp: [batch, resp_len] float, the same tokens under the frozen reference.
        mask: [batch, resp_len] bool/int/float prefix mask.

    Returns:
        [batch, resp_len] in ``logp``'s dtype and device, nats per token,
        exactly 0 on padding, detached (no gradient).

    Raises:
        TypeError / ValueError: non-float data, shape or device mismatch, or a bad mask.
    """
    where = "per_token_kl"
    check_same_shape(where, logp=logp, ref_logp=ref_logp)
    check_floating(where, logp=logp, ref_logp=ref_logp)
    m = token_mask(mask, logp, where)
    return _per_token_kl(logp, ref_logp, m)


def kl_shaped_rewards(
    scores: torch.Tensor,
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    kl_coef: float = 0.05,
    placement: str = "per_token",
) -> torch.Tensor:
    """Per-token rewards from the reward model's scores and the KL penalty (Book §5.5: R = r_RM − 0.05 × mean_KL).

    ``placement="per_token"`` (TRL 0.11 ``compute_rewards``, OpenRLHF): every
    real token gets −kl_coef·kl_t and the last real token also gets the score;
    a row's total penalty is kl_coef × its *summed* KL. TRL leaves −kl_coef·kl
    on padding too; here padding is 0.

    ``placement="last_token"`` (the book's R = r_RM − 0.05 × mean_KL): 0
    everywhere except the last real token, which gets score − kl_coef × (that
    row's *mean* per-token KL over its real tokens). The penalty's units thus
    differ: per_token penalises nats per sequence, last_token nats per token.

    The score always lands on the last *real* token (EOS, or the last token of
    a truncated row), never on padding.

    Args:
        scores: [batch] float, r_RM for each response (any float dtype; cast to ``logp``'s).
        logp: [batch, resp_len] float, policy log-probs at rollout.
        ref_logp: [batch, resp_len] float, reference log-probs.
        mask: [batch, resp_len] bool/int/float prefix mask.
        kl_coef: β ≥ 0, e.g. ``AdaptiveKLController.value``; 0.05 in the book.
        placement: ``"per_token"`` or ``"last_token"``.

    Returns:
        [batch, resp_len] in ``logp``'s dtype and device, 0 on padding, detached.

    Raises:
        TypeError / ValueError: bad shapes (``scores`` must be [batch]), devices,
            mask, a negative or non-finite ``kl_coef``, or an unknown ``placement``.
    """
    where = "kl_shaped_rewards"
    check_same_shape(where, logp=logp, ref_logp=ref_logp)
    check_floating(where, logp=logp, ref_logp=ref_logp)
    if placement not in PLACEMENTS:
        raise ValueError(f"{where}: `placement` must be one of {PLACEMENTS}, got {placement!r}")
    if isinstance(kl_coef, torch.Tensor):
        kl_coef = float(kl_coef)
    if isinstance(kl_coef, bool) or not isinstance(kl_coef, numbers.Real) or not (0 <= kl_coef < math.inf):
        raise ValueError(f"{where}: `kl_coef` must be a finite number ≥ 0, got {kl_coef!r}")
    if not isinstance(scores, torch.Tensor) or scores.shape != logp.shape[:1]:
        got = tuple(scores.shape) if isinstance(scores, torch.Tensor) else type(scores).__name__
        raise ValueError(f"{where}: `scores` must be a [batch] = [{logp.shape[0]}] tensor, got {got}")
    m = token_mask(mask, logp, where)
    with torch.no_grad():
        kl = _per_token_kl(logp, ref_logp, m)  # (B, T), 0 on padding
        lengths = m.sum(dim=1)  # (B,), ≥ 1 (checked)
        last = (lengths - 1).unsqueeze(1)  # (B, 1), index of the last real token (prefix mask)
        scores = scores.detach().to(device=logp.device, dtype=logp.dtype)
        if placement == "per_token":
            rewards = -kl_coef * kl  # (B, T)
            final = scores
        else:
            rewards = torch.zeros_like(kl)
            mean_kl = kl.sum(dim=1) / lengths.to(kl.dtype)  # (B,)
            final = scores - kl_coef * mean_kl
        rewards = rewards.scatter_add(1, last, final.unsqueeze(1))
    return rewards


class AdaptiveKLController:
    """The adaptive KL coefficient β of Ziegler et al. (2019), as TRL 0.11 implements it (Book §5.8, ``target_kl``).

    After each PPO step: e = clip(current_kl / target − 1, −0.2, 0.2) and
    value ← value · (1 + e · n_steps / horizon). β grows when the policy
    drifts further than ``target`` from the reference and shrinks otherwise,
    by at most 20 % per ``horizon`` sequences.

    Units (as TRL): ``current_kl`` is the batch mean over sequences of each
    sequence's *summed* per-token KL (nats per sequence); ``n_steps`` is the
    number of sequences in the batch. The book's ``target_kl = 6.0`` is this
    controller's ``target`` (TRL's own ``target_kl`` is an early-stop threshold).

    Attributes:
        value: the current coefficient β (Python float), passed as ``kl_coef``.
        target: the KL the controller steers towards (nats per sequence).
        horizon: sequences over which a full proportional correction applies.
    """

    def __init__(self, init_kl_coef: float = 0.05, target: float = 6.0, horizon: int = 10000):
        """Start at β = ``init_kl_coef``.

        Raises:
            ValueError: if ``init_kl_coef`` < 0, ``target`` ≤ 0 or ``horizon`` ≤ 0
                (or any is not finite).
        """
        for name, v, ok in (
            ("init_kl_coef", init_kl_coef, lambda x: x >= 0),
            ("target", target, lambda x: x > 0),
            ("horizon", horizon, lambda x: x > 0),
        ):
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or not ok(v):
                raise ValueError(f"AdaptiveKLController: `{name}` must be a finite positive number, got {v!r}")
        self.value = float(init_kl_coef)
        self.target = float(target)
        self.horizon = float(horizon)

    def update(self, current_kl: float, n_steps: int) -> float:
        """Move β towards the target and return the new value.

        Args:
            current_kl: batch mean of the per-sequence summed KL (nats/sequence);
                a float or a 0-dim tensor.
            n_steps: sequences in the batch (≥ 0).

        Returns:
            The updated ``value`` (Python float).

        Raises:
            ValueError: if ``current_kl`` is not finite or ``n_steps`` < 0.
        """
        current = float(current_kl)
        if not math.isfinite(current):
            raise ValueError(f"AdaptiveKLController.update: `current_kl` must be finite, got {current}")
        if isinstance(n_steps, bool) or n_steps < 0:
            raise ValueError(f"AdaptiveKLController.update: `n_steps` must be ≥ 0, got {n_steps!r}")
        error = min(max(current / self.target - 1.0, -0.2), 0.2)
        self.value *= 1.0 + error * n_steps / self.horizon
        return self.value

    def __repr__(self) -> str:
        return f"AdaptiveKLController(value={self.value!r}, target={self.target!r}, horizon={self.horizon!r})"

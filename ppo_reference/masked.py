"""Masked reductions that every other reference function stands on (TRL 0.11 ``trl/core.py`` style).

Conventions (CONTRACT.md, "Tensor conventions"):

* a mask has the shape of the data, 1/True on real tokens and 0/False on
  padding; bool, integer and floating masks holding only 0 and 1 are accepted;
* padding holds finite junk, so padding is excluded with ``torch.where`` rather
  than by multiplying by the mask (multiplication would also turn ``inf`` junk
  into NaN and let NaN junk through);
* a "masked mean" is token-level: the sum over all selected elements divided
  by their number (TRL), not a mean of per-row means;
* outputs take the dtype and device of the data, never of the mask.

The public helpers (``masked_mean``, ``masked_var``, ``masked_whiten``) check
their mask on every call. Functions of the contract validate the token mask
once with :func:`token_mask` and then use the unchecked ``_``-prefixed
kernels, so that a grading run does not pay for the same check four times.
"""

from __future__ import annotations

import torch

__all__ = ["masked_mean", "masked_var", "masked_whiten", "token_mask", "check_same_shape"]

# Added to the variance before the inverse square root, as TRL 0.11 does.
WHITEN_EPS = 1e-8


# --------------------------------------------------------------------------- checks


def check_same_shape(where: str, **tensors: torch.Tensor) -> None:
    """Raise ``ValueError`` naming ``where`` unless all ``tensors`` are tensors of one shape.

    Args:
        where: the caller's name, used in the message.
        **tensors: name -> tensor; the first one fixes the expected shape.

    Raises:
        TypeError: if one of them is not a ``torch.Tensor``.
        ValueError: if the shapes differ.
    """
    items = list(tensors.items())
    for name, t in items:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{where}: `{name}` must be a torch.Tensor, got {type(t).__name__}")
    first_name, first = items[0]
    for name, t in items[1:]:
        if t.shape != first.shape:
            raise ValueError(
                f"{where}: `{name}` has shape {tuple(t.shape)} but `{first_name}` has shape "
                f"{tuple(first.shape)}; they must match"
            )


def check_floating(where: str, **tensors: torch.Tensor) -> None:
    """Refuse any tensor of ``tensors`` whose dtype is not floating point (CONTRACT.md: inputs are float).

    Args:
        where: the caller's name, used in the message.
        tensors: name → tensor of any shape.

    Raises:
        TypeError: naming the first tensor with an integer, bool or complex dtype.
    """
    for name, t in tensors.items():
        if not t.is_floating_point():
            raise TypeError(f"{where}: `{name}` must be a floating-point tensor, got dtype {t.dtype}")


def _mask_to_bool(mask: torch.Tensor, where: str) -> torch.Tensor:
    """bool view of a 0/1 mask; ``ValueError`` if it holds anything else."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{where}: `mask` must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype == torch.bool:
        return mask
    if mask.is_complex():
        raise TypeError(f"{where}: `mask` must be bool, integer or floating, got dtype {mask.dtype}")
    bad = (mask != 0) & (mask != 1)  # also catches NaN
    if bool(bad.any()):
        value = mask[bad].flatten()[0].item()
        raise ValueError(f"{where}: `mask` must hold only 0 and 1 (or False/True); found {value!r}")
    return mask != 0


def token_mask(mask: torch.Tensor, like: torch.Tensor, where: str) -> torch.Tensor:
    """Validate a ``[batch, resp_len]`` response mask and return it as bool.

    Args:
        mask: [batch, resp_len] bool/int/float, 1 on real tokens, 0 on padding.
        like: [batch, resp_len] the data the mask goes with (same shape and device).
        where: the caller's name, used in error messages.

    Returns:
        [batch, resp_len] bool tensor on the mask's device.

    Raises:
        TypeError: if ``mask`` is not a tensor or is complex.
        ValueError: if the shapes differ or are not 2-D, if the devices differ, if a value is not 0/1,
            if a row is not a prefix (a real token after padding), or if a row
            has no real token (CONTRACT.md: every row has at least one), or if
            the batch or resp_len is 0.
    """
    m = _mask_to_bool(mask, where)
    if m.dim() != 2:
        raise ValueError(f"{where}: `mask` must be 2-D [batch, resp_len], got shape {tuple(m.shape)}")
    if m.shape != like.shape:
        raise ValueError(
            f"{where}: `mask` has shape {tuple(m.shape)} but the data has shape {tuple(like.shape)}; they must match"
        )
    if m.device != like.device:
        raise ValueError(f"{where}: `mask` is on {m.device} but the data is on {like.device}")
    if m.shape[0] == 0 or m.shape[1] == 0:
        raise ValueError(f"{where}: the batch is empty (mask shape {tuple(m.shape)}); there is no real token")
    # A prefix mask never rises along a row, and (being a prefix) a row has a
    # real token iff its first entry is real. One device sync for both checks.
    rises = m[:, 1:] & ~m[:, :-1]  # [B, T-1]
    empty = ~m[:, 0]  # [B]
    if bool(rises.any() | empty.any()):
        if bool(rises.any()):
            b, t = (int(i) for i in rises.nonzero()[0])
            raise ValueError(
                f"{where}: `mask` row {b} is not a prefix: token {t + 1} is real but token {t} is padding "
                "(masks must be 1...1 0...0 per row, right padding)"
            )
        b = int(empty.nonzero()[0, 0])
        raise ValueError(f"{where}: `mask` row {b} has no real token (every row needs at least one)")
    return m


# --------------------------------------------------------------------------- kernels (no checks)


def _masked_sum(x: torch.Tensor, m: torch.Tensor, dim=None) -> torch.Tensor:
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    picked = torch.where(m, x, zero)
    return picked.sum() if dim is None else picked.sum(dim=dim)


def mean_over(x: torch.Tensor, m: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Σ_{m} x / Σ m with no checks: the kernel of :func:`masked_mean` for callers that validated ``m``.

    Args:
        x: floating tensor, any shape.
        m: bool tensor of ``x``'s shape (from :func:`token_mask`), at least one True per reduced slice.
        dim: ``None`` for the whole tensor, or the dimension to reduce.

    Returns:
        0-d tensor (``dim=None``) or ``x`` reduced along ``dim``, in ``x``'s dtype (Book eq. 5.10's token mean).
    """
    count = m.sum() if dim is None else m.sum(dim=dim)
    return _masked_sum(x, m, dim) / count.to(x.dtype)


def _masked_var(x: torch.Tensor, m: torch.Tensor, count: int, unbiased: bool = True) -> torch.Tensor:
    # Accumulate in float64: the variance subtracts nearly equal numbers and the
    # oracle must be more accurate than any float32 submission it judges.
    x64 = x.double()
    mean = mean_over(x64, m)
    centered_sq = (x64 - mean) ** 2
    denom = count - 1 if unbiased else count
    return (_masked_sum(centered_sq, m) / denom).to(x.dtype)


def whiten_over(x: torch.Tensor, m: torch.Tensor, count: int, shift_mean: bool = True) -> torch.Tensor:
    """(x − mean) / sqrt(var + eps) over the elements selected by ``m``, with no checks (kernel of :func:`masked_whiten`).

    Mean and unbiased variance are taken over the ``count`` selected elements in float64 (Book §5.6,
    advantage whitening; TRL ``masked_whiten``); ``shift_mean=False`` adds the mean back.

    Args:
        x: floating tensor, any shape.
        m: bool tensor of ``x``'s shape, selecting ``count`` ≥ 2 elements (see :func:`count_at_least`).
        count: ``int(m.sum())``.
        shift_mean: whether the result has mean 0 over ``m`` (True) or keeps ``x``'s mean.

    Returns:
        tensor of ``x``'s shape and dtype (padding positions carry values that callers ignore).
    """
    x64 = x.double()
    mean = mean_over(x64, m)
    var = _masked_sum((x64 - mean) ** 2, m) / (count - 1)
    whitened = (x64 - mean) * torch.rsqrt(var + WHITEN_EPS)
    if not shift_mean:
        whitened = whitened + mean
    return whitened.to(x.dtype)


def count_at_least(m: torch.Tensor, need: int, where: str, why: str) -> int:
    """The number of True elements of the bool mask ``m``, refusing fewer than ``need``.

    Raises:
        ValueError: if ``m`` selects fewer than ``need`` elements; the message names ``where`` and says ``why``.
    """
    count = int(m.sum())
    if count < need:
        raise ValueError(f"{where}: the mask selects {count} element(s); {why}")
    return count


# --------------------------------------------------------------------------- public helpers


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean of ``x`` over the elements selected by ``mask`` (token-level, TRL ``masked_mean``).

    Σ_{mask} x / Σ mask over the whole tensor (``dim=None``) or along ``dim``.
    Padding never enters, whatever it holds (``torch.where``, not ``x * mask``).

    Args:
        x: [...] float, e.g. [batch, resp_len].
        mask: same shape as ``x``, bool/int/float with values in {0, 1}.
        dim: reduce over this dimension only; ``None`` reduces over all.

    Returns:
        0-dim tensor (``dim=None``) or ``x`` reduced along ``dim``, in ``x``'s
        dtype and device; differentiable in ``x``.

    Raises:
        TypeError: if ``x`` is not floating or ``mask`` not a tensor.
        ValueError: if the shapes differ, the mask holds values other than 0/1,
            or it selects nothing (along ``dim``: in some slice).
    """
    check_same_shape("masked_mean", x=x, mask=mask)
    check_floating("masked_mean", x=x)
    m = _mask_to_bool(mask, "masked_mean")
    counts = m.sum() if dim is None else m.sum(dim=dim)
    if bool((counts == 0).any()):
        raise ValueError("masked_mean: the mask selects no element" + ("" if dim is None else f" in some slice along dim={dim}"))
    return _masked_sum(x, m, dim) / counts.to(x.dtype)


def masked_var(x: torch.Tensor, mask: torch.Tensor, unbiased: bool = True) -> torch.Tensor:
    """Variance of ``x`` over the elements selected by ``mask`` (TRL ``masked_var``).

    Σ_{mask} (x − μ)² / (n − 1) with ``unbiased=True`` (Bessel's correction, as
    TRL; n = number of selected elements, μ their mean), or / n otherwise.
    Accumulated in float64 and returned in ``x``'s dtype.

    Args:
        x: [...] float.
        mask: same shape, bool/int/float with values in {0, 1}.
        unbiased: Bessel-correct (the contract's choice for whitening).

    Returns:
        0-dim tensor, ``x``'s dtype and device.

    Raises:
        ValueError: if the shapes differ, the mask is not 0/1, or it selects
            fewer than 2 elements (``unbiased``) / none. TRL instead returns
            NaN/inf for a single element (division by n − 1 = 0).
    """
    check_same_shape("masked_var", x=x, mask=mask)
    check_floating("masked_var", x=x)
    m = _mask_to_bool(mask, "masked_var")
    need = 2 if unbiased else 1
    count = count_at_least(m, need, "masked_var", f"the {'unbiased ' if unbiased else ''}variance needs at least {need}")
    return _masked_var(x, m, count, unbiased)


def masked_whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    """Normalise ``x`` to zero mean and unit variance over the selected elements (TRL ``masked_whiten``).

    (x − μ) / sqrt(σ² + 1e-8), μ = masked mean, σ² = masked *unbiased* variance
    (Bessel-corrected, as TRL 0.11; CleanRL uses ``Tensor.std()``, also
    unbiased; some code uses the biased variance, which differs by n/(n−1)).
    With ``shift_mean=False`` μ is added back (only the scale changes), as TRL
    does for ``whiten_rewards``. Computed in float64, returned in ``x``'s dtype.

    Args:
        x: [...] float.
        mask: same shape, bool/int/float with values in {0, 1}.
        shift_mean: subtract the mean (True) or keep it (False).

    Returns:
        Same shape, dtype and device as ``x``. Unselected positions get the
        same affine map (their values are unspecified by the contract).

    Raises:
        ValueError: if the shapes differ, the mask is not 0/1, or it selects
            fewer than 2 elements (the unbiased variance is undefined).
    """
    check_same_shape("masked_whiten", x=x, mask=mask)
    check_floating("masked_whiten", x=x)
    m = _mask_to_bool(mask, "masked_whiten")
    count = count_at_least(m, 2, "masked_whiten", "whitening uses the unbiased variance, which needs at least 2")
    return whiten_over(x, m, count, shift_mean)

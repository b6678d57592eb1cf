"""Buggy (x25 of the unseen8 set, written outside the project from the docstrings alone):
Whiten takes the mean and the variance per row, with the Bessel divisor clamped to 1 for a one-token row.

Clause broken: “mean and variance over the real tokens of the whole batch”
Expected diagnosis (the set's manifest): you whiten each sequence separately
Graded as: whiten_per_row (landing 12's grader said only wrong_value (the per-row family gave NaN on one-token rows)).
"""
import torch

EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_per_row"
DESCRIPTION = "whiten takes the mean and the variance per row, with the Bessel divisor clamped to 1 for a one-token row"
SEEN_IN = "the unseen8 set (x25), written outside the project from the docstrings alone"


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    """Whiten over the real tokens of the whole batch (Book §5.5: "advantages are whitened").

    (x − μ) / sqrt(σ² + 1e-8), where μ is the masked mean and σ² the masked
    *unbiased* variance (Σ(x − μ)² / (n − 1)) over all real tokens; with
    ``shift_mean=False`` μ is added back (scale only), as TRL's
    ``masked_whiten`` does for ``whiten_rewards``.

    Args:
        x: Float[batch, resp_len].
        mask: [batch, resp_len] bool/int/float, 1 on real tokens.
        shift_mean: if False, keep the original mean.

    Returns:
        Float[batch, resp_len], dtype/device of ``x``. Padding positions are unspecified.

    Raises:
        ValueError: if the shapes differ, or the mask selects fewer than 2
            elements (the unbiased variance is undefined).

    Example (real tokens 1, 2, 3: μ = 2, σ² = (1 + 0 + 1)/2 = 1):
        >>> import torch
        >>> x = torch.tensor([[1.0, 2.0, 3.0, 15.0]], dtype=torch.float64)
        >>> m = torch.tensor([[1, 1, 1, 0]])
        >>> torch.round(whiten(x, m)[0, :3], decimals=6).tolist()
        [-1.0, 0.0, 1.0]
        >>> torch.round(whiten(x, m, shift_mean=False)[0, :3], decimals=6).tolist()
        [1.0, 2.0, 3.0]
    """
    ### BEGIN SOLUTION
    # TODO: implement (x - masked mean) / sqrt(masked unbiased variance + 1e-8) over all real tokens (add the mean back if not shift_mean); raise ValueError if the shapes differ or the mask selects fewer than 2 elements.
    if x.shape != mask.shape:
        raise ValueError(f"x shape {tuple(x.shape)} != mask shape {tuple(mask.shape)}")
    real = mask.bool()
    n = int(real.sum())
    if n < 2:
        raise ValueError(f"whiten needs at least 2 real tokens for an unbiased variance; the mask selects {n}")
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    n_row = real.sum(dim=1, keepdim=True)  # (B, 1)
    mean = torch.where(real, x, zero).sum(dim=1, keepdim=True) / n_row
    var = torch.where(real, (x - mean) ** 2, zero).sum(dim=1, keepdim=True) / (n_row - 1).clamp(min=1)
    whitened = (x - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened = whitened + mean
    return whitened

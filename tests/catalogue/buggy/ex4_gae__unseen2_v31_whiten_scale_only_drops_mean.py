"""Buggy (v31 of the unseen2 set, written outside the project from the docstrings alone):
With shift_mean=False it returns x/σ instead of (x − μ)/σ + μ.

Clause broken: “with ``shift_mean=False`` μ is added back (scale only)”
Expected diagnosis (the set's manifest): With `shift_mean=False` your output is x/σ, which does not keep the mean. Whiten, then add μ back.
Graded as: whiten_shift_mean_ignored.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_shift_mean_ignored"
DESCRIPTION = "With shift_mean=False it returns x/σ instead of (x − μ)/σ + μ"
SEEN_IN = "the unseen2 set (v31), written outside the project from the docstrings alone"


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    if x.shape != mask.shape:
        raise ValueError(f"x shape {tuple(x.shape)} != mask shape {tuple(mask.shape)}")
    real = mask.bool()
    n = int(real.sum())
    if n < 2:
        raise ValueError(f"whiten needs at least 2 real tokens for an unbiased variance; the mask selects {n}")
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    mean = torch.where(real, x, zero).sum() / n
    var = torch.where(real, (x - mean) ** 2, zero).sum() / (n - 1)  # Bessel's correction, as TRL
    if shift_mean:
        whitened = (x - mean) * torch.rsqrt(var + 1e-8)
    else:
        whitened = x * torch.rsqrt(var + 1e-8)  # scale only
    return whitened

"""Buggy (u34 of the landing-7 unseen set, written outside the project from the docstrings alone):
for shift_mean=False returns x/σ (the mean is scaled too).

Clause broken: "with shift_mean=False μ is added back (scale only)"
Expected diagnosis (the set's manifest): With shift_mean=False the mean must come back unscaled: (x−μ)/σ + μ, not x/σ.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_shift_mean_ignored"
DESCRIPTION = "for shift_mean=False returns x/σ (the mean is scaled too)"
SEEN_IN = "the landing-7 unseen set (u34), written outside the project from the docstrings alone"


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
    whitened = (x - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened = x * torch.rsqrt(var + 1e-8)
    return whitened

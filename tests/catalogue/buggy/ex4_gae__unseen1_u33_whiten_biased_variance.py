"""Buggy (u33 of the landing-7 unseen set, written outside the project from the docstrings alone):
divides by n.

Clause broken: "σ² the masked *unbiased* variance (Σ(x − μ)² / (n − 1))"
Expected diagnosis (the set's manifest): Biased variance: the scale is off by sqrt(n/(n−1)), which is noticeable for small batches.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_biased_variance"
DESCRIPTION = "divides by n"
SEEN_IN = "the landing-7 unseen set (u33), written outside the project from the docstrings alone"


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    if x.shape != mask.shape:
        raise ValueError(f"x shape {tuple(x.shape)} != mask shape {tuple(mask.shape)}")
    real = mask.bool()
    n = int(real.sum())
    if n < 2:
        raise ValueError(f"whiten needs at least 2 real tokens for an unbiased variance; the mask selects {n}")
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    mean = torch.where(real, x, zero).sum() / n
    var = torch.where(real, (x - mean) ** 2, zero).sum() / n  # Bessel's correction, as TRL
    whitened = (x - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened = whitened + mean
    return whitened

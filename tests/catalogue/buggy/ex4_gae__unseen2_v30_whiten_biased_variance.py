"""Buggy (v30 of the unseen2 set, written outside the project from the docstrings alone):
Divides by n (biased variance).

Clause broken: “σ² the masked *unbiased* variance (Σ(x − μ)² / (n − 1))”
Expected diagnosis (the set's manifest): `whiten` uses the biased variance. Divide by n − 1 (Bessel's correction, as TRL does).
Graded as: whiten_biased_variance.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_biased_variance"
DESCRIPTION = "Divides by n (biased variance)"
SEEN_IN = "the unseen2 set (v30), written outside the project from the docstrings alone"


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    if x.shape != mask.shape:
        raise ValueError(f"x shape {tuple(x.shape)} != mask shape {tuple(mask.shape)}")
    real = mask.bool()
    n = int(real.sum())
    if n < 2:
        raise ValueError(f"whiten needs at least 2 real tokens for an unbiased variance; the mask selects {n}")
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    mean = torch.where(real, x, zero).sum() / n
    var = torch.where(real, (x - mean) ** 2, zero).sum() / n
    whitened = (x - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened = whitened + mean
    return whitened

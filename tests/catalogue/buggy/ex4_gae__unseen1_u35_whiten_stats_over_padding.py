"""Buggy (u35 of the landing-7 unseen set, written outside the project from the docstrings alone):
x.mean()/x.var() over every position, padding included.

Clause broken: "Whiten over the real tokens of the whole batch"
Expected diagnosis (the set's manifest): Whitening statistics include padding junk. Use masked statistics.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_padding_in_stats"
DESCRIPTION = "x.mean()/x.var() over every position, padding included"
SEEN_IN = "the landing-7 unseen set (u35), written outside the project from the docstrings alone"


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    if x.shape != mask.shape:
        raise ValueError(f"x shape {tuple(x.shape)} != mask shape {tuple(mask.shape)}")
    real = mask.bool()
    n = int(real.sum())
    if n < 2:
        raise ValueError(f"whiten needs at least 2 real tokens for an unbiased variance; the mask selects {n}")
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    mean = x.mean()
    var = x.var()  # Bessel's correction, as TRL
    whitened = (x - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened = whitened + mean
    return whitened

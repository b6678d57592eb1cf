"""Buggy (u36 of the landing-7 unseen set, written outside the project from the docstrings alone):
the n < 2 check removed.

Clause broken: "Raises: ValueError: ... the mask selects fewer than 2 elements"
Expected diagnosis (the set's manifest): With a single real token whiten returns nan instead of raising ValueError.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_no_error_for_one_element"
DESCRIPTION = "the n < 2 check removed"
SEEN_IN = "the landing-7 unseen set (u36), written outside the project from the docstrings alone"


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    if x.shape != mask.shape:
        raise ValueError(f"x shape {tuple(x.shape)} != mask shape {tuple(mask.shape)}")
    real = mask.bool()
    n = int(real.sum())
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    mean = torch.where(real, x, zero).sum() / n
    var = torch.where(real, (x - mean) ** 2, zero).sum() / (n - 1)  # Bessel's correction, as TRL
    whitened = (x - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened = whitened + mean
    return whitened

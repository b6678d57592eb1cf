"""Buggy (v32 of the unseen2 set, written outside the project from the docstrings alone):
Raises only when no element is selected; with one element it returns nan.

Clause broken: “Raises: ValueError: ... or the mask selects fewer than 2 elements”
Expected diagnosis (the set's manifest): With a single real token the unbiased variance is undefined, and your `whiten` returns nan. Raise `ValueError` when fewer than 2 elements are selected.
Graded as: whiten_no_error_for_one_element.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_no_error_for_one_element"
DESCRIPTION = "Raises only when no element is selected; with one element it returns nan"
SEEN_IN = "the unseen2 set (v32), written outside the project from the docstrings alone"


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    if x.shape != mask.shape:
        raise ValueError(f"x shape {tuple(x.shape)} != mask shape {tuple(mask.shape)}")
    real = mask.bool()
    n = int(real.sum())
    if n < 1:
        raise ValueError(f"whiten needs at least 2 real tokens for an unbiased variance; the mask selects {n}")
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    mean = torch.where(real, x, zero).sum() / n
    var = torch.where(real, (x - mean) ** 2, zero).sum() / (n - 1)  # Bessel's correction, as TRL
    whitened = (x - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened = whitened + mean
    return whitened

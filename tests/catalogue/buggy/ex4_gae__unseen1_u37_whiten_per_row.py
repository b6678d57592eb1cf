"""Buggy (u37 of the landing-7 unseen set, written outside the project from the docstrings alone):
per-row whitening (statistics along dim=1).

Clause broken: "over all real tokens" of the whole batch
Expected diagnosis (the set's manifest): Each row is whitened separately. The contract wants one mean and variance over the batch's real tokens.
Graded as: whiten_per_row since landing 13 (the per-row family now also models the divisor clamped to 1 on a
one-token row; `wrong_value` before).
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_per_row"
DESCRIPTION = "per-row whitening (statistics along dim=1)"
SEEN_IN = "the landing-7 unseen set (u37), written outside the project from the docstrings alone"


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    if x.shape != mask.shape:
        raise ValueError(f"x shape {tuple(x.shape)} != mask shape {tuple(mask.shape)}")
    real = mask.bool()
    n = int(real.sum())
    if n < 2:
        raise ValueError(f"whiten needs at least 2 real tokens for an unbiased variance; the mask selects {n}")
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    n_row = real.sum(dim=1, keepdim=True)
    mean = torch.where(real, x, zero).sum(dim=1, keepdim=True) / n_row
    var = torch.where(real, (x - mean) ** 2, zero).sum(dim=1, keepdim=True) / (n_row - 1).clamp(min=1)  # Bessel's correction, as TRL
    whitened = (x - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened = whitened + mean
    return whitened

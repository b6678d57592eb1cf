"""Buggy (v03 of the unseen2 set, written outside the project from the docstrings alone):
`probability_ratio` has no shape check, so [2,3] and [1,3] broadcast silently.

Clause broken: “Raises: ValueError: if the two shapes differ.”
Expected diagnosis (the set's manifest): Mismatched log-prob tensors were broadcast instead of rejected. Compare the shapes and raise `ValueError` before computing the ratio.
Graded as: missing_documented_error.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "missing_documented_error"
DESCRIPTION = "`probability_ratio` has no shape check, so [2,3] and [1,3] broadcast silently"
SEEN_IN = "the unseen2 set (v03), written outside the project from the docstrings alone"


def probability_ratio(logp_new: torch.Tensor, logp_old: torch.Tensor) -> torch.Tensor:
    return torch.exp(logp_new - logp_old)  # (B, T)

"""Buggy (v06 of the unseen2 set, written outside the project from the docstrings alone):
`probability_ratio` detaches `logp_old`.

Clause broken: “differentiable w.r.t. both inputs (the losses decide what to detach)”
Expected diagnosis (the set's manifest): `probability_ratio` must pass gradients to both arguments. Detaching belongs in the losses, not here.
Graded as: ratio_detached.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "ratio_detached"
DESCRIPTION = "`probability_ratio` detaches `logp_old`"
SEEN_IN = "the unseen2 set (v06), written outside the project from the docstrings alone"


def probability_ratio(logp_new: torch.Tensor, logp_old: torch.Tensor) -> torch.Tensor:
    if logp_new.shape != logp_old.shape:
        raise ValueError(
            f"logp_new shape {tuple(logp_new.shape)} != logp_old shape {tuple(logp_old.shape)}"
        )
    return torch.exp(logp_new - logp_old.detach())  # (B, T); logp_old is a constant

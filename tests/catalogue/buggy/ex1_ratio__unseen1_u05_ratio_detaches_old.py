"""Buggy (u05 of the landing-7 unseen set, written outside the project from the docstrings alone):
probability_ratio detaches logp_old itself.

Clause broken: "differentiable w.r.t. both inputs (the losses decide what to detach)"
Expected diagnosis (the set's manifest): No gradient reaches logp_old. Detaching belongs in the loss, not in the ratio helper.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "ratio_detached"
DESCRIPTION = "probability_ratio detaches logp_old itself"
SEEN_IN = "the landing-7 unseen set (u05), written outside the project from the docstrings alone"


def probability_ratio(logp_new: torch.Tensor, logp_old: torch.Tensor) -> torch.Tensor:
    if logp_new.shape != logp_old.shape:
        raise ValueError(
            f"logp_new shape {tuple(logp_new.shape)} != logp_old shape {tuple(logp_old.shape)}"
        )
    return torch.exp(logp_new - logp_old.detach())

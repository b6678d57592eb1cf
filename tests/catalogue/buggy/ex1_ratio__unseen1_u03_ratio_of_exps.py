"""Buggy (u03 of the landing-7 unseen set, written outside the project from the docstrings alone):
exp(logp_new) / exp(logp_old).

Clause broken: "exp(logp_new − logp_old): exponentiating the difference stays finite where exp(logp_new) / exp(logp_old) would be 0/0 (e.g. both log-probs −1000)."
Expected diagnosis (the set's manifest): The ratio is nan when both log-probs are very negative (0/0). Take the difference in log space first.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "ratio_in_probability_space"
DESCRIPTION = "exp(logp_new) / exp(logp_old)"
SEEN_IN = "the landing-7 unseen set (u03), written outside the project from the docstrings alone"


def probability_ratio(logp_new: torch.Tensor, logp_old: torch.Tensor) -> torch.Tensor:
    if logp_new.shape != logp_old.shape:
        raise ValueError(
            f"logp_new shape {tuple(logp_new.shape)} != logp_old shape {tuple(logp_old.shape)}"
        )
    return torch.exp(logp_new) / torch.exp(logp_old)

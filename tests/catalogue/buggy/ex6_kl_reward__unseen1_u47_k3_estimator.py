"""Buggy (u47 of the landing-7 unseen set, written outside the project from the docstrings alone):
k3 estimator exp(ref−logp) − 1 − (ref−logp).

Clause broken: "kl_t = log π(a_t|s_t) − log π_ref(a_t|s_t) ... TRL's kl_penalty="kl""
Expected diagnosis (the set's manifest): Wrong KL estimator: the contract asks for the plain log-ratio (k1), which can be negative per token.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "kl_wrong_estimator"
DESCRIPTION = "k3 estimator exp(ref−logp) − 1 − (ref−logp)"
SEEN_IN = "the landing-7 unseen set (u47), written outside the project from the docstrings alone"


def per_token_kl(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if not (logp.shape == ref_logp.shape == mask.shape):
        raise ValueError(
            f"logp, ref_logp and mask must share one shape, got {tuple(logp.shape)}, "
            f"{tuple(ref_logp.shape)}, {tuple(mask.shape)}"
        )
    log_ratio = (ref_logp.to(logp.dtype) - logp).detach()
    kl = torch.exp(log_ratio) - 1.0 - log_ratio  # (B, T), non-negative
    return torch.where(mask.bool(), kl, torch.zeros((), dtype=kl.dtype, device=kl.device))

"""Buggy (v19 of the unseen2 set, written outside the project from the docstrings alone):
Entropy as −Σ softmax·log(softmax).

Clause broken: “Must be stable for (finite) logits of any size: a token with p_v ≈ 0 must contribute 0, not nan.”
Expected diagnosis (the set's manifest): With large logits p underflows to 0 and 0·log 0 gives nan. Compute log p with `log_softmax` and use p = exp(log p).
Graded as: entropy_unstable.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "entropy_unstable"
DESCRIPTION = "Entropy as −Σ softmax·log(softmax)"
SEEN_IN = "the unseen2 set (v19), written outside the project from the docstrings alone"


def entropy_from_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if logits.dim() != 3 or mask.shape != logits.shape[:2]:
        raise ValueError(
            f"need logits [batch, resp_len, vocab] and mask [batch, resp_len], got {tuple(logits.shape)} "
            f"and {tuple(mask.shape)}"
        )
    # log_softmax of finite logits is finite, so p·log p is 0·(finite) where p underflows: no nan.
    probs = torch.softmax(logits, dim=-1)  # (B, T, V)
    entropy = -(probs * torch.log(probs)).sum(dim=-1)  # (B, T)
    return masked_mean(entropy, mask)

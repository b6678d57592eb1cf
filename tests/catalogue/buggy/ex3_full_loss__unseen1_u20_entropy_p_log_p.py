"""Buggy (u20 of the landing-7 unseen set, written outside the project from the docstrings alone):
-(p * log p) with p = softmax.

Clause broken: "Must be stable for (finite) logits of any size: a token with p_v ≈ 0 must contribute 0, not nan."
Expected diagnosis (the set's manifest): Entropy is nan for large logits (0·log 0). Compute log p with log_softmax.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "entropy_unstable"
DESCRIPTION = "-(p * log p) with p = softmax"
SEEN_IN = "the landing-7 unseen set (u20), written outside the project from the docstrings alone"


def entropy_from_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if logits.dim() != 3 or mask.shape != logits.shape[:2]:
        raise ValueError(
            f"need logits [batch, resp_len, vocab] and mask [batch, resp_len], got {tuple(logits.shape)} "
            f"and {tuple(mask.shape)}"
        )
    # log_softmax of finite logits is finite, so p·log p is 0·(finite) where p underflows: no nan.
    p = torch.softmax(logits, dim=-1)  # (B, T, V)
    entropy = -(p * torch.log(p)).sum(dim=-1)  # (B, T)
    return masked_mean(entropy, mask)

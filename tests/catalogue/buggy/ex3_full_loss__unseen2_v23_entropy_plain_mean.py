"""Buggy (v23 of the unseen2 set, written outside the project from the docstrings alone):
`entropy.mean()` over all positions, padding included.

Clause broken: “entropy_from_logits ... Masked mean of the per-token entropy”
Expected diagnosis (the set's manifest): Padding tokens count in your entropy average. Take the masked mean over real tokens.
Graded as: entropy_unmasked.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "entropy_unmasked"
DESCRIPTION = "`entropy.mean()` over all positions, padding included"
SEEN_IN = "the unseen2 set (v23), written outside the project from the docstrings alone"


def entropy_from_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if logits.dim() != 3 or mask.shape != logits.shape[:2]:
        raise ValueError(
            f"need logits [batch, resp_len, vocab] and mask [batch, resp_len], got {tuple(logits.shape)} "
            f"and {tuple(mask.shape)}"
        )
    # log_softmax of finite logits is finite, so p·log p is 0·(finite) where p underflows: no nan.
    logp = torch.log_softmax(logits, dim=-1)  # (B, T, V)
    entropy = -(logp.exp() * logp).sum(dim=-1)  # (B, T)
    return entropy.mean()

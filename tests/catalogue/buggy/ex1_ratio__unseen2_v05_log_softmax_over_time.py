"""Buggy (v05 of the unseen2 set, written outside the project from the docstrings alone):
`log_softmax(logits, dim=1)`: normalises over the time axis instead of the vocabulary.

Clause broken: “log-softmax over the vocabulary, gathered at the taken tokens”
Expected diagnosis (the set's manifest): Your softmax normalises over the wrong axis (time, not vocab). Log-softmax must run over the last dimension.
Graded as: softmax_wrong_dim.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "softmax_wrong_dim"
DESCRIPTION = "`log_softmax(logits, dim=1)`: normalises over the time axis instead of the vocabulary"
SEEN_IN = "the unseen2 set (v05), written outside the project from the docstrings alone"


def logprobs_from_logits(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    if logits.dim() != 3:
        raise ValueError(f"logits must be [batch, resp_len, vocab], got shape {tuple(logits.shape)}")
    if tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
        raise ValueError(f"tokens must be an integer (long) tensor, got {tokens.dtype}")
    if tokens.shape != logits.shape[:2]:
        raise ValueError(
            f"tokens shape {tuple(tokens.shape)} must equal logits.shape[:2] = {tuple(logits.shape[:2])}"
        )
    # log_softmax subtracts the max internally (log-sum-exp), so huge logits stay finite.
    logp_all = torch.log_softmax(logits, dim=1)  # (B, T, V)
    return logp_all.gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)  # (B, T)

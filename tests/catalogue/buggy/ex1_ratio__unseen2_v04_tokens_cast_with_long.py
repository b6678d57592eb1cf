"""Buggy (v04 of the unseen2 set, written outside the project from the docstrings alone):
Calls `tokens.long()` on whatever arrives, so float and bool token tensors are accepted.

Clause broken: “Raises: ValueError: if ... ``tokens`` is not an integer tensor”
Expected diagnosis (the set's manifest): Float or bool token ids should raise `ValueError`, not be cast quietly. Check the dtype before you convert.
Graded as: missing_documented_error.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "missing_documented_error"
DESCRIPTION = "Calls `tokens.long()` on whatever arrives, so float and bool token tensors are accepted"
SEEN_IN = "the unseen2 set (v04), written outside the project from the docstrings alone"


def logprobs_from_logits(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    if logits.dim() != 3:
        raise ValueError(f"logits must be [batch, resp_len, vocab], got shape {tuple(logits.shape)}")
    tokens = tokens.long()  # accept any dtype, cast to ids
    if tokens.shape != logits.shape[:2]:
        raise ValueError(
            f"tokens shape {tuple(tokens.shape)} must equal logits.shape[:2] = {tuple(logits.shape[:2])}"
        )
    # log_softmax subtracts the max internally (log-sum-exp), so huge logits stay finite.
    logp_all = torch.log_softmax(logits, dim=-1)  # (B, T, V)
    return logp_all.gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)  # (B, T)

"""Buggy (v07 of the unseen2 set, written outside the project from the docstrings alone):
`log_softmax(logits.float())`: float64 input comes back as float32.

Clause broken: “Float[batch, resp_len] in the dtype and on the device of ``logits``”
Expected diagnosis (the set's manifest): Float64 logits give float32 log-probs, so you lose precision and the dtype contract breaks. Don't cast the logits.
Graded as: wrong_dtype.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "wrong_dtype"
DESCRIPTION = "`log_softmax(logits.float())`: float64 input comes back as float32"
SEEN_IN = "the unseen2 set (v07), written outside the project from the docstrings alone"


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
    logp_all = torch.log_softmax(logits.float(), dim=-1)  # (B, T, V)
    return logp_all.gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)  # (B, T)

"""Buggy (v02 of the unseen2 set, written outside the project from the docstrings alone):
Shifts as in causal-LM training: logits[:, :-1] scored against tokens[:, 1:], padded with a 0 column.

Clause broken: “``logits[:, t]`` are the logits that produced ``tokens[:, t]`` (already aligned: do not shift).”
Expected diagnosis (the set's manifest): Your log-probs are taken one position off. The inputs are already aligned, so gather `tokens[:, t]` from `logits[:, t]` with no shift.
Graded as: logprobs_misaligned.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "logprobs_misaligned"
DESCRIPTION = "Shifts as in causal-LM training: logits[:, :-1] scored against tokens[:, 1:], padded with a 0 column"
SEEN_IN = "the unseen2 set (v02), written outside the project from the docstrings alone"


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
    # shift: logits at t predict the token at t+1 (as in causal-LM training)
    logp_all = torch.log_softmax(logits[:, :-1], dim=-1)  # (B, T-1, V)
    lp = logp_all.gather(-1, tokens[:, 1:].long().unsqueeze(-1)).squeeze(-1)  # (B, T-1)
    return torch.cat([lp, torch.zeros_like(lp[:, :1])], dim=1)  # (B, T)

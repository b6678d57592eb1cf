"""Buggy (v01 of the unseen2 set, written outside the project from the docstrings alone):
`torch.log(torch.softmax(logits))` instead of `log_softmax`.

Clause broken: “Must be numerically stable for logits of any size (e.g. 1e4): never form softmax probabilities and then take their log.”
Expected diagnosis (the set's manifest): Large logits underflow to p = 0 and log(0) = −inf (and nan gradients). Use `torch.log_softmax` (log-sum-exp) instead of taking the log of softmax probabilities.
Graded as: log_of_softmax.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "log_of_softmax"
DESCRIPTION = "`torch.log(torch.softmax(logits))` instead of `log_softmax`"
SEEN_IN = "the unseen2 set (v01), written outside the project from the docstrings alone"


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
    logp_all = torch.log(torch.softmax(logits, dim=-1))  # (B, T, V)
    return logp_all.gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)  # (B, T)

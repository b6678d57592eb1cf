"""Buggy (u01 of the landing-7 unseen set, written outside the project from the docstrings alone):
softmax(logits).log() instead of log_softmax.

Clause broken: "Must be numerically stable for logits of any size (e.g. 1e4): never form softmax probabilities and then take their log."
Expected diagnosis (the set's manifest): Matches on ordinary logits, but with large logits (1e4) it gives −inf where the true log-prob is a large finite number. Use log_softmax, which works through log-sum-exp.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "log_of_softmax"
DESCRIPTION = "softmax(logits).log() instead of log_softmax"
SEEN_IN = "the landing-7 unseen set (u01), written outside the project from the docstrings alone"


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
    logp_all = torch.softmax(logits, dim=-1).log()  # (B, T, V)
    return logp_all.gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)

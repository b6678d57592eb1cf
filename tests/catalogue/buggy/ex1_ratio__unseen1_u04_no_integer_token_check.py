"""Buggy (u04 of the landing-7 unseen set, written outside the project from the docstrings alone):
the integer-dtype check is dropped (.long() silently casts float ids).

Clause broken: "Raises: ValueError: if ... tokens is not an integer tensor"
Expected diagnosis (the set's manifest): Float token ids are accepted when they should be rejected, so the missing input check hides a bug in the caller.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "missing_documented_error"
DESCRIPTION = "the integer-dtype check is dropped (.long() silently casts float ids)"
SEEN_IN = "the landing-7 unseen set (u04), written outside the project from the docstrings alone"


def logprobs_from_logits(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    if logits.dim() != 3:
        raise ValueError(f"logits must be [batch, resp_len, vocab], got shape {tuple(logits.shape)}")
    if tokens.shape != logits.shape[:2]:
        raise ValueError(
            f"tokens shape {tuple(tokens.shape)} must equal logits.shape[:2] = {tuple(logits.shape[:2])}"
        )
    # log_softmax subtracts the max internally (log-sum-exp), so huge logits stay finite.
    logp_all = torch.log_softmax(logits, dim=-1)  # (B, T, V)
    return logp_all.gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)

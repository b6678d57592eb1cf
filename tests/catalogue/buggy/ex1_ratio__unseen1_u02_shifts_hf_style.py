"""Buggy (u02 of the landing-7 unseen set, written outside the project from the docstrings alone):
shifts HF-style: gathers logits[:, :-1] at tokens[:, 1:] and pads the last column with 0.

Clause broken: "logits[:, t] are the logits that produced tokens[:, t] (already aligned: do not shift)."
Expected diagnosis (the set's manifest): Log-probs are off by one position (and the last one is 0). The model output is already aligned, so don't shift again.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "logprobs_misaligned"
DESCRIPTION = "shifts HF-style: gathers logits[:, :-1] at tokens[:, 1:] and pads the last column with 0"
SEEN_IN = "the landing-7 unseen set (u02), written outside the project from the docstrings alone"


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
    logp_all = torch.log_softmax(logits, dim=-1)  # (B, T, V)
    shifted = logp_all[:, :-1].gather(-1, tokens[:, 1:].long().unsqueeze(-1)).squeeze(-1)  # (B, T-1)
    return torch.cat([shifted, torch.zeros_like(shifted[:, :1])], dim=1)

"""Buggy (v22 of the unseen2 set, written outside the project from the docstrings alone):
clipfrac = fraction with \\|r − 1\\| > ε (the OpenAI-baselines definition).

Clause broken: “``clipfrac`` = masked_mean([Â·clip(r, 1−ε, 1+ε) < Â·r]) (the tokens where the clip binds)”
Expected diagnosis (the set's manifest): Your clipfrac counts every token outside [1−ε, 1+ε], including those where the clip does not bind (e.g. Â > 0 with r < 1−ε). Count only tokens where clip(r)·Â < r·Â.
Graded as: clipfrac_wrong.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "clipfrac_wrong"
DESCRIPTION = "clipfrac = fraction with \\|r − 1\\| > ε (the OpenAI-baselines definition)"
SEEN_IN = "the unseen2 set (v22), written outside the project from the docstrings alone"


def ppo_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    logits: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    clip_range_value: float = 0.2,
    vf_coef: float = 0.1,
    ent_coef: float = 0.01,
) -> tuple[torch.Tensor, dict[str, float]]:
    tensors = (logp_new, logp_old, advantages, values, old_values, returns, mask)
    if len({t.shape for t in tensors}) != 1 or logits.shape[:2] != mask.shape:
        raise ValueError(
            "logp_new, logp_old, advantages, values, old_values, returns, mask must share one "
            f"[batch, resp_len] shape and logits be [batch, resp_len, vocab]; got "
            f"{[tuple(t.shape) for t in tensors]} and logits {tuple(logits.shape)}"
        )
    logp_old, adv = logp_old.detach(), advantages.detach()
    ratio = torch.exp(logp_new - logp_old)  # (B, T), Book eq. 5.20
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    # Eq. 5.9's cases, boundaries included: where the clip binds the clipped term is a constant.
    binds = ((adv > 0) & (ratio >= 1.0 + clip_eps)) | ((adv < 0) & (ratio <= 1.0 - clip_eps))
    policy_loss = -masked_mean(torch.where(binds, clipped.detach(), unclipped), mask)  # −L^CLIP, eq. 5.1
    value_loss = clipped_value_loss(values, old_values, returns, mask, clip_range_value)
    entropy = entropy_from_logits(logits, mask)
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy  # minimising it maximises eq. 5.2

    with torch.no_grad():
        approx_kl = masked_mean(0.5 * (logp_new - logp_old) ** 2, mask)
        clipfrac = masked_mean(((ratio - 1.0).abs() > clip_eps).to(unclipped.dtype), mask)
    stats = {
        "approx_kl": approx_kl.item(),
        "clipfrac": clipfrac.item(),
        "policy_loss": policy_loss.item(),
        "value_loss": value_loss.item(),
        "entropy": entropy.item(),
        "loss": loss.item(),
    }
    return loss, stats

"""Buggy (v18 of the unseen2 set, written outside the project from the docstrings alone):
`ppo_loss` passes `clip_eps` as the value clip range (the two coincide at their 0.2 defaults).

Clause broken: “clip_eps, clip_range_value ... ε, c, c₁, c₂”
Expected diagnosis (the set's manifest): When cliprange_value ≠ cliprange the value term is clipped with ε instead of c. Pass `clip_range_value` to the value loss.
Graded as: value_clip_uses_clip_eps (landing 8's grader said only wrong_value; the unseen3 set's w19 made the same
mistake).
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "value_clip_uses_clip_eps"
DESCRIPTION = "`ppo_loss` passes `clip_eps` as the value clip range (the two coincide at their 0.2 defaults)"
SEEN_IN = "the unseen2 set (v18), written outside the project from the docstrings alone"


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
    value_loss = clipped_value_loss(values, old_values, returns, mask, clip_eps)
    entropy = entropy_from_logits(logits, mask)
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy  # minimising it maximises eq. 5.2

    with torch.no_grad():
        approx_kl = masked_mean(0.5 * (logp_new - logp_old) ** 2, mask)
        clipfrac = masked_mean((clipped < unclipped).to(unclipped.dtype), mask)
    stats = {
        "approx_kl": approx_kl.item(),
        "clipfrac": clipfrac.item(),
        "policy_loss": policy_loss.item(),
        "value_loss": value_loss.item(),
        "entropy": entropy.item(),
        "loss": loss.item(),
    }
    return loss, stats

"""Buggy (v27 of the unseen2 set, written outside the project from the docstrings alone):
Recursion uses λ·A_{t+1}, leaving out γ (invisible at γ = 1).

Clause broken: “A_t = δ_t + γλ·A_{t+1}”
Expected diagnosis (the set's manifest): Your GAE is right only for γ = 1. The recursion multiplies by γ·λ, not λ alone.
Graded as: gae_missing_gamma.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "gae_missing_gamma"
DESCRIPTION = "Recursion uses λ·A_{t+1}, leaving out γ (invisible at γ = 1)"
SEEN_IN = "the unseen2 set (v27), written outside the project from the docstrings alone"


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 0.95,
) -> tuple[torch.Tensor, torch.Tensor]:
    if rewards.dim() != 2 or rewards.shape != values.shape or rewards.shape != mask.shape:
        raise ValueError(
            "rewards, values and mask must share one [batch, resp_len] shape, got "
            f"{tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(mask.shape)}"
        )
    with torch.no_grad():
        real = mask.bool()
        zero = torch.zeros((), dtype=rewards.dtype, device=rewards.device)
        # Zeroing the padding makes "V and A are 0 past the last real token" automatic:
        # at the last real token V_{t+1} = 0, and every padded δ (hence A) is 0.
        r = torch.where(real, rewards, zero)
        v = torch.where(real, values.to(rewards.dtype), zero)
        resp_len = rewards.shape[1]
        next_value = torch.zeros_like(r[:, 0])  # (B,)
        next_adv = torch.zeros_like(r[:, 0])  # (B,)
        advantages_reversed = []
        for t in reversed(range(resp_len)):
            delta = r[:, t] + gamma * next_value - v[:, t]  # (B,)
            next_adv = delta + lam * next_adv
            next_value = v[:, t]
            advantages_reversed.append(next_adv)
        advantages = torch.stack(advantages_reversed[::-1], dim=1)  # (B, T)
        returns = advantages + values.to(rewards.dtype)
    return advantages, returns

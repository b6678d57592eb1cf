"""Buggy (v29 of the unseen2 set, written outside the project from the docstrings alone):
Returns are the discounted reward-to-go (Monte-Carlo), not A + V.

Clause broken: “returns = advantages + values”
Expected diagnosis (the set's manifest): Your returns are Monte-Carlo returns, which equal A + V only when λ = 1. The value target here is advantages + values.
Graded as: returns_not_a_plus_v.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "returns_not_a_plus_v"
DESCRIPTION = "Returns are the discounted reward-to-go (Monte-Carlo), not A + V"
SEEN_IN = "the unseen2 set (v29), written outside the project from the docstrings alone"


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
            next_adv = delta + gamma * lam * next_adv
            next_value = v[:, t]
            advantages_reversed.append(next_adv)
        advantages = torch.stack(advantages_reversed[::-1], dim=1)  # (B, T)
        # returns = discounted reward-to-go (Monte-Carlo target)
        ret, running = [], torch.zeros_like(r[:, 0])
        for t in reversed(range(resp_len)):
            running = r[:, t] + gamma * running
            ret.append(running)
        returns = torch.stack(ret[::-1], dim=1)
    return advantages, returns

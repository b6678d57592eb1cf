"""Buggy (v26 of the unseen2 set, written outside the project from the docstrings alone):
Values are not zeroed at padding, so the junk V at the first pad position is bootstrapped into the last real token's δ.

Clause broken: “with V and A taken as 0 past each row's last real token (junk in the padding must not leak in)”
Expected diagnosis (the set's manifest): Padding junk leaks into your advantages through V_{t+1} at each row's last real token. V past the last real token must count as 0.
Graded as: gae_bootstraps_from_padding.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "gae_bootstraps_from_padding"
DESCRIPTION = "Values are not zeroed at padding, so the junk V at the first pad position is bootstrapped into the last real token's δ"
SEEN_IN = "the unseen2 set (v26), written outside the project from the docstrings alone"


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
        v = values.to(rewards.dtype)
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
        returns = advantages + values.to(rewards.dtype)
    return advantages, returns

"""Buggy (u28 of the landing-7 unseen set, written outside the project from the docstrings alone):
values not masked, so the last real token bootstraps from padding junk.

Clause broken: "V and A taken as 0 past each row's last real token (junk in the padding must not leak in)"
Expected diagnosis (the set's manifest): Truncated rows bootstrap from a padding value. Nothing may be bootstrapped past the last real token.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "gae_bootstraps_from_padding"
DESCRIPTION = "values not masked, so the last real token bootstraps from padding junk"
SEEN_IN = "the landing-7 unseen set (u28), written outside the project from the docstrings alone"


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

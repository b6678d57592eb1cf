"""Buggy (x28 of the unseen7 set, written outside the project from the docstrings alone):
Compute_gae's backward loop runs over range(T - 1), so the last column is never visited.

Clause broken: “A_t = δ_t + γλ·A_{t+1} for every t, backwards (Book §5.5)”
Expected diagnosis (the set's manifest): the last time step is skipped: full rows lose their last TD error
Graded as: gae_skips_last_step (landing 11's grader said only wrong_value).
"""
import torch

EXERCISE = "ex4_gae"
DIAGNOSIS = "gae_skips_last_step"
DESCRIPTION = "compute_gae's backward loop runs over range(T - 1), so the last column is never visited"
SEEN_IN = "the unseen7 set (x28), written outside the project from the docstrings alone"


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 0.95,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimates over response tokens (Book §5.5; GAE, Schulman et al. 2016).

    δ_t = r_t + γ·V_{t+1} − V_t and A_t = δ_t + γλ·A_{t+1}, with V and A taken
    as 0 past each row's last real token (junk in the padding must not leak in).

    Args:
        rewards: Float[batch, resp_len], the shaped per-token rewards (exercise 6).
        values: Float[batch, resp_len], V(s_t) from the value head at rollout time.
        mask: [batch, resp_len] bool/int/float, 1 on real tokens, a prefix per row.
        gamma: discount γ; 1.0 for single-turn RLHF (Book §5.8 config).
        lam: GAE λ; 0.95 in the book's config.

    Returns:
        (advantages, returns), each Float[batch, resp_len] in the dtype/device of
        ``rewards``, detached (no gradient flows into either);
        returns = advantages + values. Padding positions are unspecified.

    Raises:
        ValueError: if the three shapes differ or the tensors are not 2-D.

    Example (γ = 1, λ = 0.5, rewards (0, 0, 1), V = 0.5 everywhere, 4th token padding:
    δ = (0, 0, 0.5) → A_2 = 0.5, A_1 = 0 + 0.5·0.5 = 0.25, A_0 = 0.125):
        >>> import torch
        >>> r = torch.tensor([[0.0, 0.0, 1.0, 9.0]], dtype=torch.float64)
        >>> v = torch.tensor([[0.5, 0.5, 0.5, -7.0]], dtype=torch.float64)
        >>> adv, ret = compute_gae(r, v, torch.tensor([[1, 1, 1, 0]]), gamma=1.0, lam=0.5)
        >>> adv[0, :3].tolist(), ret[0, :3].tolist()
        ([0.125, 0.25, 0.5], [0.625, 0.75, 1.0])
    """
    ### BEGIN SOLUTION
    # TODO: implement Book §5.5's backward GAE recursion delta_t = r_t + gamma*V_{t+1} - V_t, A_t = delta_t + gamma*lam*A_{t+1}, with V and A = 0 past each row's last real token; return (advantages, advantages + values), both detached.
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
        advantages = torch.zeros_like(r)  # (B, T)
        lastgaelam = torch.zeros_like(r[:, 0])  # (B,)
        for t in reversed(range(resp_len - 1)):
            delta = r[:, t] + gamma * v[:, t + 1] - v[:, t]  # (B,)
            lastgaelam = delta + gamma * lam * lastgaelam
            advantages[:, t] = lastgaelam
        returns = advantages + values.to(rewards.dtype)
    return advantages, returns

"""The answer keys computed from formulas, each with the trusted ``ppo_reference`` (instructor side only).

One key per parametric question family of stops 1-8 (the probability ratio,
the clipped objective and its gradient, the value loss, GAE, the KL penalty,
the mini-batch counts, the adaptive KL controller...). Each takes the
parameters drawn by ``quiz_bank.variants`` and calls the reference on small
float64 tensors [batch=1, resp_len=T], so that a key is never typed by hand: a
bank key and an exercise grader agree because they are the same code.
``ppo_reference`` (and torch) are imported inside the functions, so importing
this module is cheap.
"""

from __future__ import annotations

import math
from typing import Any

from quiz_bank.instructor.key_registry import key


def _t(values, *, long: bool = False):
    import torch

    return torch.tensor([values], dtype=torch.long if long else torch.float64)  # (1, T)


def _ones(n: int):
    import torch

    return torch.ones(1, n, dtype=torch.bool)


def _clip_loss_and_grad(logp_new: float, logp_old: float, adv: float, eps: float) -> tuple[float, float]:
    """Per-token L^CLIP (eq. 5.1) and dL/d(log π_θ), through ppo_reference.clipped_surrogate_loss."""
    import ppo_reference as ref

    logp = _t([logp_new]).requires_grad_(True)
    loss = ref.clipped_surrogate_loss(logp, _t([logp_old]), _t([adv]), _ones(1), clip_eps=eps)
    loss.backward()
    # The reference returns a loss to minimise (−L^CLIP): negate both.
    return -float(loss.detach()), -float(logp.grad[0, 0])


# ---------------------------------------------------------------- stop 1 (TRPO's trust region)


def _categorical_kl(p: dict[str, Any]) -> float:
    # TRPO's D_KL(π_θold ‖ π_θ) is outside ppo_reference (PPO never computes it):
    # torch.distributions is the independent, well-kept implementation used instead.
    import torch

    old = torch.distributions.Categorical(probs=torch.tensor(p["old"], dtype=torch.float64))
    new = torch.distributions.Categorical(probs=torch.tensor(p["new"], dtype=torch.float64))
    return float(torch.distributions.kl_divergence(old, new))


@key("trpo_kl")
def trpo_kl(p: dict[str, Any]) -> float:
    """D_KL(π_θold ‖ π_θ) = Σ_a π_old(a)·ln(π_old(a)/π_new(a)) in nats (TRPO's constrained quantity)."""
    return _categorical_kl(p)


@key("trpo_inside")
def trpo_inside(p: dict[str, Any]) -> bool:
    """True when the step satisfies TRPO's constraint D_KL(π_θold ‖ π_θ) ≤ δ."""
    return _categorical_kl(p) <= p["delta"]


# ---------------------------------------------------------------- stop 2 (eq. 5.1, 5.9)


@key("clip_objective")
def clip_objective(p: dict[str, Any]) -> float:
    """L_t^CLIP = min(r·Â, clip(r, 1−ε, 1+ε)·Â) for one token (eq. 5.1)."""
    return _clip_loss_and_grad(math.log(p["r"]), 0.0, p["adv"], p["eps"])[0]


@key("clip_gradient_flows")
def clip_gradient_flows(p: dict[str, Any]) -> bool:
    """True when the token's gradient is non-zero (the four cases of eq. 5.9)."""
    return _clip_loss_and_grad(math.log(p["r"]), 0.0, p["adv"], p["eps"])[1] != 0.0


@key("clip_gradient_logp")
def clip_gradient_logp(p: dict[str, Any]) -> float:
    """dL_t/d log π_θ(a_t|s_t): r·Â where the unclipped term is the min, else 0 (eq. 5.9)."""
    return _clip_loss_and_grad(math.log(p["r"]), 0.0, p["adv"], p["eps"])[1]


@key("clip_gradient_logp_sum")
def clip_gradient_logp_sum(p: dict[str, Any]) -> float:
    """Σ_t dL_t/d log π_θ(a_t|s_t) over the tokens ``r1, adv1 … r3, adv3`` (eq. 5.9 per token, one ε): how fast
    L = Σ_t L_t changes when every token's log-prob rises by the same small amount."""
    return sum(_clip_loss_and_grad(math.log(p[f"r{i}"]), 0.0, p[f"adv{i}"], p["eps"])[1] for i in (1, 2, 3))


@key("clip_gradient_flows_logprobs")
def clip_gradient_flows_logprobs(p: dict[str, Any]) -> bool:
    """As clip_gradient_flows, with r given by stored and live log-probs (eq. 5.20)."""
    return _clip_loss_and_grad(p["logp_new"], p["logp_old"], p["adv"], p["eps"])[1] != 0.0


# ---------------------------------------------------------------- stop 3 (eq. 5.2)


@key("value_loss")
def value_loss(p: dict[str, Any]) -> float:
    """max((V − R)², (V_old + clip(V − V_old, −c, c) − R)²) for one token."""
    import ppo_reference as ref

    return float(ref.clipped_value_loss(_t([p["v"]]), _t([p["v_old"]]), _t([p["ret"]]), _ones(1), clip_range_value=p["c"]))


@key("entropy3")
def entropy3(p: dict[str, Any]) -> float:
    """H = −Σ p log p (nats) of the 3-token distribution, via entropy_from_logits(log p)."""
    import torch

    import ppo_reference as ref

    logits = torch.log(torch.tensor([[[p["p1"], p["p2"], p["p3"]]]], dtype=torch.float64))  # (1, 1, 3)
    return float(ref.entropy_from_logits(logits, _ones(1)))


@key("full_objective")
def full_objective(p: dict[str, Any]) -> float:
    """Eq. 5.2 for one token with c₁ = 0.1, c₂ = 0.01, ε = 0.2: −ppo_loss (V_old = V, so no value clip)."""
    import torch

    import ppo_reference as ref

    logits = torch.log(torch.tensor([[[p["p"], 1.0 - p["p"]]]], dtype=torch.float64))  # (1, 1, 2); token 0 taken
    loss, _ = ref.ppo_loss(
        _t([math.log(p["p"])]), _t([math.log(p["q"])]), _t([p["adv"]]),
        _t([p["v"]]), _t([p["v"]]), _t([p["v_target"]]), logits, _ones(1),
        clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01,
    )
    return -float(loss)


# ---------------------------------------------------------------- stop 4 (buffer)


def _count_minibatches(p: dict[str, Any]) -> int:
    import torch

    import ppo_reference as ref

    buf = ref.RolloutBuffer()
    buf.add(index=torch.arange(p["batch_size"]).unsqueeze(1))  # (B, 1): only the count matters
    buf.start_training()
    gen = torch.Generator().manual_seed(0)
    return sum(1 for _ in range(p["ppo_epochs"]) for _ in buf.minibatches(p["mini_batch_size"], gen))


@key("minibatch_updates")
def minibatch_updates(p: dict[str, Any]) -> int:
    """Mini-batch gradient computations in one cycle: K epochs over the buffer (RolloutBuffer)."""
    return _count_minibatches(p)


@key("buffer_transitions")
def buffer_transitions(p: dict[str, Any]) -> int:
    """Token-level transitions a full collect phase stores: real tokens over one epoch of the buffer."""
    import torch

    import ppo_reference as ref

    buf = ref.RolloutBuffer()
    buf.add(mask=torch.ones(p["batch_size"], p["max_tokens"], dtype=torch.bool))  # every response at max length
    buf.start_training()
    return int(sum(int(mb["mask"].sum()) for mb in buf.minibatches(p["batch_size"])))


@key("optimizer_steps")
def optimizer_steps(p: dict[str, Any]) -> int:
    """Optimizer steps per cycle: mini-batches / gradient_accumulation_steps (one step per mbs × gas sequences)."""
    return _count_minibatches(p) // p["gas"]


# ---------------------------------------------------------------- stop 5 (fig. 5.1)


def _gae(p: dict[str, Any]):
    import ppo_reference as ref

    return ref.compute_gae(_t(p["rewards"]), _t(p["values"]), _ones(3), gamma=p["gamma"], lam=p["lam"])


@key("gae_advantage0")
def gae_advantage0(p: dict[str, Any]) -> float:
    """A_0 of a 3-token response (GAE; nothing bootstrapped past the last token)."""
    return float(_gae(p)[0][0, 0])


@key("gae_advantage1")
def gae_advantage1(p: dict[str, Any]) -> float:
    """A_1 of a 3-token response (the middle token)."""
    return float(_gae(p)[0][0, 1])


@key("gae_return0")
def gae_return0(p: dict[str, Any]) -> float:
    """The value target at t = 0: A_0 + V_0."""
    return float(_gae(p)[1][0, 0])


@key("kl_last_token_reward")
def kl_last_token_reward(p: dict[str, Any]) -> float:
    """The book's final reward R = r_RM − β × mean_KL placed on the last token (placement="last_token")."""
    import torch

    import ppo_reference as ref

    n = len(p["logp"])
    rewards = ref.kl_shaped_rewards(
        torch.tensor([p["score"]], dtype=torch.float64), _t(p["logp"]), _t(p["ref_logp"]), _ones(n),
        kl_coef=p["kl_coef"], placement="last_token",
    )
    return float(rewards[0, n - 1])


@key("kl_sum")
def kl_sum(p: dict[str, Any]) -> float:
    """Σ_t (log π − log π_ref) over the response (per_token_kl summed)."""
    import ppo_reference as ref

    return float(ref.per_token_kl(_t(p["logp"]), _t(p["ref_logp"]), _ones(len(p["logp"]))).sum())


@key("kl_mean")
def kl_mean(p: dict[str, Any]) -> float:
    """The length-normalised KL: masked mean of per_token_kl over the response."""
    import ppo_reference as ref

    mask = _ones(len(p["logp"]))
    return float(ref.masked_mean(ref.per_token_kl(_t(p["logp"]), _t(p["ref_logp"]), mask), mask))


@key("whiten_first")
def whiten_first(p: dict[str, Any]) -> float:
    """The first of three advantages after whitening (unbiased variance, +1e-8)."""
    import ppo_reference as ref

    return float(ref.whiten(_t(p["advantages"]), _ones(3))[0, 0])


# ---------------------------------------------------------------- stop 6 (eq. 5.18–5.22)


@key("ratio")
def ratio(p: dict[str, Any]) -> float:
    """r = exp(log π_θ − log π_θold) (eq. 5.20)."""
    import ppo_reference as ref

    return float(ref.probability_ratio(_t([p["logp_new"]]), _t([p["logp_old"]])))


@key("clipped_ratio")
def clipped_ratio(p: dict[str, Any]) -> float:
    """clip(r, 1 − ε, 1 + ε) with r from probability_ratio (table 5.1: trapped at 1 ± ε)."""
    import ppo_reference as ref

    r = ref.probability_ratio(_t([p["logp_new"]]), _t([p["logp_old"]]))
    return float(r.clamp(1.0 - p["eps"], 1.0 + p["eps"]))


def _token_logprob(z: list[float], token: int):
    import torch

    import ppo_reference as ref

    logits = torch.tensor([[z]], dtype=torch.float64)  # (1, 1, 3)
    return ref.logprobs_from_logits(logits, torch.tensor([[token]]))


@key("logprob_new")
def logprob_new(p: dict[str, Any]) -> float:
    """log π_θ(a) = LogSoftmax(z_new)[a] (eq. 5.18–5.19)."""
    return float(_token_logprob(p["z_new"], p["token"]))


@key("logprob_old")
def logprob_old(p: dict[str, Any]) -> float:
    """The scalar stored at rollout: log π_θold(a) = LogSoftmax(z_old)[a]."""
    return float(_token_logprob(p["z_old"], p["token"]))


@key("ratio_from_logits")
def ratio_from_logits(p: dict[str, Any]) -> float:
    """r from old and new logits: exp(LogSoftmax(z_new)[a] − LogSoftmax(z_old)[a])."""
    import ppo_reference as ref

    return float(ref.probability_ratio(_token_logprob(p["z_new"], p["token"]), _token_logprob(p["z_old"], p["token"])))


@key("gaussian_logprob_old")
def gaussian_logprob_old(p: dict[str, Any]) -> float:
    """log N(a; µ_old, σ_old) (eq. 5.22), from torch.distributions.Normal."""
    import torch

    dist = torch.distributions.Normal(torch.tensor(p["mu_old"], dtype=torch.float64), p["sigma_old"])
    return float(dist.log_prob(torch.tensor(p["action"], dtype=torch.float64)))


@key("gaussian_ratio")
def gaussian_ratio(p: dict[str, Any]) -> float:
    """r for a continuous action: Gaussian log-PDFs (eq. 5.22, torch.distributions.Normal), then eq. 5.20."""
    import torch

    import ppo_reference as ref

    a = torch.tensor([[p["action"]]], dtype=torch.float64)
    new = torch.distributions.Normal(torch.tensor(p["mu_new"], dtype=torch.float64), p["sigma_new"]).log_prob(a)
    old = torch.distributions.Normal(torch.tensor(p["mu_old"], dtype=torch.float64), p["sigma_old"]).log_prob(a)
    return float(ref.probability_ratio(new, old))


# ---------------------------------------------------------------- stops 7–8 (config, dials)


def _controller(p: dict[str, Any]):
    import ppo_reference as ref

    ctl = ref.AdaptiveKLController(init_kl_coef=p["value"], target=p["target"], horizon=p["horizon"])
    for _ in range(p["n_updates"]):
        ctl.update(p["kl"], p["n_steps"])
    return ctl


@key("adaptive_kl_value")
def adaptive_kl_value(p: dict[str, Any]) -> float:
    """β after ``n_updates`` updates at a constant batch KL (AdaptiveKLController)."""
    return _controller(p).value


@key("adaptive_kl_increases")
def adaptive_kl_increases(p: dict[str, Any]) -> bool:
    """True when the update raises β (KL above target)."""
    return _controller(p).value > p["value"]


def _loss_stats(logp_new: list[float], logp_old: list[float], adv: list[float], eps: float) -> dict[str, float]:
    import torch

    import ppo_reference as ref

    n = len(logp_new)
    zeros = _t([0.0] * n)
    logits = torch.zeros(1, n, 2, dtype=torch.float64)
    _, stats = ref.ppo_loss(_t(logp_new), _t(logp_old), _t(adv), zeros, zeros, zeros, logits, _ones(n), clip_eps=eps)
    return stats


@key("approx_kl")
def approx_kl(p: dict[str, Any]) -> float:
    """TRL's ppo/policy/approx_kl: ½ · mean_t (log π_θ − log π_θold)² (from ppo_loss's stats)."""
    return _loss_stats(p["logp"], p["ref_logp"], [1.0] * len(p["logp"]), 0.2)["approx_kl"]


@key("clipfrac")
def clipfrac(p: dict[str, Any]) -> float:
    """Fraction of tokens where the clip binds, Â·clip(r) < Â·r (TRL's clipfrac, from ppo_loss)."""
    return _loss_stats([math.log(r) for r in p["ratios"]], [0.0] * len(p["ratios"]), p["advantages"], p["eps"])["clipfrac"]


# ---------------------------------------------------------------- labels and ratios of drawn cases


@key("clip_case_label")
def clip_case_label(p: dict[str, Any]) -> str:
    """Which case of eq. 5.9 a token is in, from the reference's gradient and the sign of Â.

    Returns one of ``push-up``, ``push-down`` (gradient flows), ``up-enough``,
    ``down-enough`` (gradient exactly 0).
    """
    grad = _clip_loss_and_grad(math.log(p["r"]), 0.0, p["adv"], p["eps"])[1]
    if p["adv"] > 0:
        return "push-up" if grad != 0.0 else "up-enough"
    return "push-down" if grad != 0.0 else "down-enough"


@key("prob_ratio")
def prob_ratio(p: dict[str, Any]) -> float:
    """r_t(θ) = π_θ/π_θold from the two probabilities, via probability_ratio on their logs (eq. 5.1, 5.20)."""
    import ppo_reference as ref

    return float(ref.probability_ratio(_t([math.log(p["p"])]), _t([math.log(p["q"])])))

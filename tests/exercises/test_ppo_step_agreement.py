"""solutions/ex7_ppo_step.ppo_step and ppo_reference.ppo_step make the same PPO step (ARCHITECTURE.md's fixed order).

Both start from the toy task's SFT policy with the same generator seed; after
two steps (two optimizer steps per epoch, two epochs each) every parameter,
the adaptive KL coefficient and the TRL stats must agree. The two
implementations were written independently from ARCHITECTURE.md, so agreement
checks both.

The comparison runs in float64. In float32 the implementations also agree
(stats to 6 digits, most parameters to ~1e-7), but parameters whose true
gradient is 0 (the key biases: softmax ignores a shift shared by all keys)
get gradients of pure rounding noise, which Adam rescales to steps of ~lr:
two correct float32 implementations then differ there by ~1e-5.
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

ppo_reference = pytest.importorskip("ppo_reference", reason="ppo_reference/ not importable yet")
# Imported from its module: an earlier ppo_reference/__init__.py's lazy top-level `ppo_step`
# turned into the submodule once the submodule had been imported.
reference_ppo_step = pytest.importorskip("ppo_reference.ppo_step").ppo_step
toy_task = pytest.importorskip("ppo_course.toy_task")
from ppo_course.config import PPOConfig  # noqa: E402

# End-to-end: the first test trains the toy SFT policy (cached per process, ~3 s on an idle core).
pytestmark = pytest.mark.slow

STAT_KEYS = {
    "ppo/mean_scores", "objective/kl", "objective/kl_coef", "ppo/policy/approx_kl", "ppo/policy/clipfrac",
    "ppo/loss/total", "ppo/loss/value", "ppo/policy/entropy", "time/ppo/generation", "time/ppo/training",
}


def _config(**overrides) -> PPOConfig:
    with warnings.catch_warnings():  # a small batch is outside the book's band on purpose (speed)
        warnings.simplefilter("ignore")
        return PPOConfig.toy(batch_size=16, mini_batch_size=4, gradient_accumulation_steps=2, ppo_epochs=2, **overrides)


def _run(step_fn, kl_controller_cls, config: PPOConfig, n_steps: int = 1, seed: int = 5, device: str = "cpu"):
    """n_steps PPO steps from the SFT policy (float64, on ``device``); returns (policy, stats of the last step, kl_ctl)."""
    policy = toy_task.sft_policy(seed=0).to(dtype=torch.float64, device=device)
    ref_policy = copy.deepcopy(policy).requires_grad_(False)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    generator = torch.Generator().manual_seed(seed)
    queries = toy_task.sample_queries(config.batch_size, generator).to(device)
    kl_ctl = kl_controller_cls(config.init_kl_coef, config.target_kl, config.kl_horizon)
    for _ in range(n_steps):
        stats = step_fn(policy, ref_policy, optimizer, queries, toy_task.score, kl_ctl, config, generator)
    return policy, stats, kl_ctl


@pytest.mark.parametrize(
    "overrides",
    [
        {},  # the toy preset: per-token KL, whitened rewards
        {"kl_placement": "last_token", "whiten_rewards": False, "cliprange": 0.1, "lam": 0.9, "init_kl_coef": 0.2},
    ],
    ids=["toy-preset", "last-token-unwhitened"],
)
def test_same_parameters_after_ppo_steps(solutions, overrides):
    config = _config(**overrides)
    mine = solutions["ex7_ppo_step"]
    kl_cls = solutions["ex6_kl_reward"].AdaptiveKLController
    policy_mine, stats_mine, ctl_mine = _run(mine.ppo_step, kl_cls, config, n_steps=2)
    policy_ref, stats_ref, ctl_ref = _run(reference_ppo_step, ppo_reference.AdaptiveKLController, config, n_steps=2)

    start = toy_task.sft_policy(seed=0).to(torch.float64).state_dict()
    moved = 0.0
    for (name, p_mine), (_, p_ref) in zip(policy_mine.state_dict().items(), policy_ref.state_dict().items()):
        # float64, 8 Adam steps: independent summation orders differ by ~1e-14 (measured 6e-14).
        torch.testing.assert_close(p_mine, p_ref, rtol=1e-9, atol=1e-10, msg=lambda m, n=name: f"parameter {n}: {m}")
        moved = max(moved, float((p_ref - start[name]).abs().max()))
    assert moved > 1e-4, "the policy did not move: the comparison would be vacuous"

    assert ctl_mine.value == pytest.approx(ctl_ref.value, rel=1e-12)
    assert STAT_KEYS <= stats_mine.keys() and STAT_KEYS <= stats_ref.keys()
    for key in STAT_KEYS - {"time/ppo/generation", "time/ppo/training"}:
        assert isinstance(stats_mine[key], float)
        # 1e-6: the toy reward model returns float32 scores; where a side averages them
        # (float32 or float64) is not fixed, everything else is float64.
        assert stats_mine[key] == pytest.approx(stats_ref[key], rel=1e-6, abs=1e-9), key


def test_ppo_step_is_deterministic_under_a_seed(solutions):
    config = _config()
    kl_cls = solutions["ex6_kl_reward"].AdaptiveKLController
    a, _, _ = _run(solutions["ex7_ppo_step"].ppo_step, kl_cls, config)
    b, _, _ = _run(solutions["ex7_ppo_step"].ppo_step, kl_cls, config)
    for (name, pa), (_, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(pa, pb), name


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_ppo_step_on_cuda_matches_reference_and_cpu(solutions):
    """On CUDA (CPU generator, as ARCHITECTURE.md fixes) the step matches the reference on CUDA and itself on CPU."""
    config = _config()
    kl_cls = solutions["ex6_kl_reward"].AdaptiveKLController
    mine_cuda, stats, _ = _run(solutions["ex7_ppo_step"].ppo_step, kl_cls, config, device="cuda")
    ref_cuda, _, _ = _run(reference_ppo_step, ppo_reference.AdaptiveKLController, config, device="cuda")
    mine_cpu, _, _ = _run(solutions["ex7_ppo_step"].ppo_step, kl_cls, config, device="cpu")
    assert all(isinstance(v, float) for v in stats.values())
    for (name, a), (_, b), (_, c) in zip(mine_cuda.state_dict().items(), ref_cuda.state_dict().items(),
                                         mine_cpu.state_dict().items()):
        assert a.device.type == "cuda", name
        # float64; CUDA and CPU kernels sum in different orders (~1e-15 per op).
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10, msg=lambda m, n=name: f"cuda vs reference, {n}: {m}")
        torch.testing.assert_close(a.cpu(), c, rtol=1e-7, atol=1e-9, msg=lambda m, n=name: f"cuda vs cpu, {n}: {m}")

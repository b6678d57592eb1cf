"""ppo_reference.ppo_step: the fixed order of ARCHITECTURE.md, determinism, r = 1 at the start, learning (Book fig. 5.1)."""

from __future__ import annotations

import copy
import importlib
import math

import pytest
import torch
from ppo_step_support import fresh_setup, small_config

from ppo_course import toy_task
from ppo_reference.ppo_step import ppo_step

# The module itself (the package's top-level name `ppo_step` is the function).
ppo_step_module = importlib.import_module("ppo_reference.ppo_step")

pytestmark = pytest.mark.slow

ARCHITECTURE_STATS = {
    "ppo/mean_scores", "objective/kl", "objective/kl_coef", "ppo/policy/approx_kl", "ppo/policy/clipfrac",
    "ppo/loss/total", "ppo/loss/value", "ppo/policy/entropy", "time/ppo/generation", "time/ppo/training",
}


def _run(config, n_steps=1, seed=3, reward_fn=toy_task.score):
    policy, ref_policy, optimizer, kl_ctl = fresh_setup(config)
    generator = torch.Generator().manual_seed(seed)
    queries = toy_task.sample_queries(config.batch_size, torch.Generator().manual_seed(seed + 100))
    history = [ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator)
               for _ in range(n_steps)]
    return policy, history, kl_ctl


def test_returns_the_architecture_stats_as_floats():
    _, (stats,), _ = _run(small_config())
    assert ARCHITECTURE_STATS <= set(stats)
    assert all(type(v) is float and math.isfinite(v) for v in stats.values())


def test_seeded_step_is_bit_for_bit_repeatable_on_cpu():
    config = small_config()
    policy_a, history_a, ctl_a = _run(config, n_steps=2)
    policy_b, history_b, ctl_b = _run(config, n_steps=2)
    for (name, a), b in zip(policy_a.state_dict().items(), policy_b.state_dict().values()):
        assert torch.equal(a, b), f"{name} differs between two seeded runs"
    for a, b in zip(history_a, history_b):
        assert {k: v for k, v in a.items() if not k.startswith("time/")} == \
               {k: v for k, v in b.items() if not k.startswith("time/")}
    assert ctl_a.value == ctl_b.value


def test_sampling_is_the_first_use_of_the_generator():
    """Step (1) of the fixed order: the rollout is policy.generate(queries, ...) with the fresh generator."""
    config = small_config()
    seen = {}

    def reward_fn(responses, mask):
        seen["responses"], seen["mask"] = responses.clone(), mask.clone()
        return toy_task.score(responses, mask)

    policy, _, _, _ = fresh_setup(config)
    queries = toy_task.sample_queries(config.batch_size, torch.Generator().manual_seed(103))
    expected = copy.deepcopy(policy).generate(queries, config.max_new_tokens, config.temperature, config.top_p,
                                              torch.Generator().manual_seed(3))
    _run(config, reward_fn=reward_fn)
    assert torch.equal(seen["responses"], expected.responses) and torch.equal(seen["mask"], expected.mask)


def test_with_learning_rate_zero_the_first_mini_batch_has_ratio_one(monkeypatch):
    """Book table 5.1: at rollout start θ = θ_old, so r = 1.0 by identity, no clipping, approx_kl 0."""
    calls = []
    real_ppo_loss = ppo_step_module.ppo_loss

    def recording_ppo_loss(logp_new, logp_old, *args, **kwargs):
        calls.append((logp_new.detach().clone(), logp_old.clone(), args[-1].clone()))
        return real_ppo_loss(logp_new, logp_old, *args, **kwargs)

    monkeypatch.setattr(ppo_step_module, "ppo_loss", recording_ppo_loss)
    config = small_config(learning_rate=0.0)
    start = {k: v.clone() for k, v in fresh_setup(config)[0].state_dict().items()}
    policy, (stats,), _ = _run(config)

    logp_new, logp_old, mask = calls[0]
    ratio = torch.exp(logp_new - logp_old)[mask.bool()]
    # Not exactly 1 in general: logp_old comes from a 16-row pass, logp_new from a 4-row
    # mini-batch, and float32 matmuls of different sizes may round differently (~1e-7).
    torch.testing.assert_close(ratio, torch.ones_like(ratio), rtol=0, atol=1e-6)
    assert len(calls) == 2 * 16 // 4  # ppo_epochs × mini-batches per epoch
    assert stats["ppo/policy/clipfrac"] == 0.0
    assert stats["ppo/policy/approx_kl"] < 1e-12
    for name, value in policy.state_dict().items():  # Adam with lr 0 never moves θ
        assert torch.equal(value, start[name]), name


def test_kl_controller_is_updated_once_with_the_mean_summed_kl():
    config = small_config(init_kl_coef=0.05, target_kl=6.0, kl_horizon=100)
    _, (stats,), kl_ctl = _run(config)
    assert stats["objective/kl_coef"] == 0.05  # the β used during this step
    # By hand (Ziegler et al. 2019 / contract): β ← β·(1 + clip(KL/target − 1, ±0.2)·B/horizon).
    error = min(max(stats["objective/kl"] / 6.0 - 1, -0.2), 0.2)
    assert kl_ctl.value == pytest.approx(0.05 * (1 + error * 16 / 100), rel=1e-12)


def test_kl_starts_at_zero_and_grows_once_the_policy_moves():
    _, history, _ = _run(small_config(), n_steps=2)
    assert abs(history[0]["objective/kl"]) < 1e-5  # policy = reference on the first rollout
    assert history[1]["objective/kl"] > 1e-4


def test_queries_not_filling_whole_optimizer_steps_are_refused():
    config = small_config()
    policy, ref_policy, optimizer, kl_ctl = fresh_setup(config)
    with pytest.raises(ValueError, match="multiple of mini_batch_size × gradient_accumulation_steps = 8"):
        ppo_step(policy, ref_policy, optimizer, toy_task.PROMPTS[:12], toy_task.score, kl_ctl, config,
                 torch.Generator().manual_seed(0))


def test_last_token_placement_and_unwhitened_rewards_run():
    _, (stats,), _ = _run(small_config(kl_placement="last_token", whiten_rewards=False))
    assert math.isfinite(stats["ppo/loss/total"])


def _eval_score(policy) -> float:
    """Mean reward-model score of 256 fresh answers (every prompt 16 times, its own seed)."""
    gen = policy.generate(toy_task.PROMPTS.repeat(16, 1), toy_task.MAX_NEW_TOKENS, 1.0, 1.0,
                          torch.Generator().manual_seed(12345))
    return toy_task.score(gen.responses, gen.mask).mean().item()


def test_a_short_seeded_toy_run_raises_the_score():
    """Eight steps of the toy preset lift the score by more than half a positive word per answer."""
    from ppo_course.config import PPOConfig

    config = PPOConfig.toy()
    policy, ref_policy, optimizer, kl_ctl = fresh_setup(config)
    before = _eval_score(policy)
    generator, prompts = torch.Generator().manual_seed(0), torch.Generator().manual_seed(1)
    for _ in range(8):
        stats = ppo_step(policy, ref_policy, optimizer, toy_task.sample_queries(config.batch_size, prompts),
                         toy_task.score, kl_ctl, config, generator)
    after = _eval_score(policy)
    # 256 answers: the score's standard error is ~0.01, so 0.05 is far outside noise.
    assert after > before + 0.05, (before, after)
    assert stats["objective/kl"] < 3 * config.target_kl, "learned, but by leaving the reference far behind"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_ppo_step_runs_on_cuda_and_matches_cpu_statistically():
    config = small_config()
    policy, ref_policy, optimizer, kl_ctl = fresh_setup(config, device="cuda")
    queries = toy_task.sample_queries(config.batch_size, torch.Generator().manual_seed(103))
    start = {k: v.clone() for k, v in policy.state_dict().items()}
    stats = ppo_step(policy, ref_policy, optimizer, queries, toy_task.score, kl_ctl, config,
                     torch.Generator().manual_seed(3))
    assert all(math.isfinite(v) for v in stats.values())
    assert all(p.device.type == "cuda" for p in policy.parameters())
    moved = max((policy.state_dict()[k] - v).abs().max().item() for k, v in start.items())
    assert moved > 1e-6
    # The sampler draws its uniforms from the CPU generator: same draws as on CPU, so the same
    # rollout unless a draw sits within rounding of a CDF boundary (then one token differs).
    _, (cpu_stats,), _ = _run(config)
    assert stats["ppo/mean_scores"] == pytest.approx(cpu_stats["ppo/mean_scores"], abs=0.05)

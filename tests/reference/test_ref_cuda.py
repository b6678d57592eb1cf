"""Every reference function on CUDA: same results as on CPU, outputs stay on the device.

Skipped cleanly (one reason line) where no CUDA device is present.
"""

import pytest
import torch
from ref_inputs import prefix_mask

import ppo_reference as R

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (none present)"),
]

LENGTHS = [7, 1, 4, 7, 2]
T, V = 7, 11


def inputs(device, dtype, mask_dtype):
    gen = torch.Generator().manual_seed(0)
    data = [torch.randn(len(LENGTHS), T, generator=gen, dtype=torch.float64).to(dtype) for _ in range(7)]
    logits = torch.randn(len(LENGTHS), T, V, generator=gen, dtype=torch.float64).to(dtype)
    tokens = torch.randint(0, V, (len(LENGTHS), T), generator=gen)
    scores = torch.randn(len(LENGTHS), generator=gen, dtype=torch.float64).to(dtype)
    mask = prefix_mask(LENGTHS, T, mask_dtype)
    return [x.to(device) for x in (*data, logits, tokens, scores, mask)]


def run_all(device, dtype, mask_dtype):
    logp_new, logp_old, adv, values, old_values, returns, rewards, logits, tokens, scores, mask = inputs(
        device, dtype, mask_dtype)
    logits.requires_grad_(True)
    loss, stats = R.ppo_loss(logp_new, logp_old, adv, values, old_values, returns, logits, mask,
                             clip_eps=0.15, vf_coef=0.2)
    (grad,) = torch.autograd.grad(loss, logits)
    logits = logits.detach()
    gae_adv, gae_ret = R.compute_gae(rewards, values, mask, gamma=0.99, lam=0.9)
    out = {
        "logprobs": R.logprobs_from_logits(logits, tokens),
        "ratio": R.probability_ratio(logp_new, logp_old),
        "surrogate": R.clipped_surrogate_loss(logp_new, logp_old, adv, mask),
        "value_loss": R.clipped_value_loss(values, old_values, returns, mask),
        "entropy": R.entropy_from_logits(logits, mask),
        "ppo_loss": loss.detach(),
        "ppo_loss_grad": grad,
        "gae_adv": gae_adv,
        "gae_ret": gae_ret,
        "whiten": R.whiten(gae_adv, mask),
        "masked_mean": R.masked_mean(adv, mask),
        "masked_var": R.masked_var(adv, mask),
        "masked_whiten": R.masked_whiten(adv, mask, shift_mean=False),
        "kl": R.per_token_kl(logp_new, logp_old, mask),
        "rewards_per_token": R.kl_shaped_rewards(scores, logp_new, logp_old, mask, 0.05),
        "rewards_last_token": R.kl_shaped_rewards(scores, logp_new, logp_old, mask, 0.05, "last_token"),
    }
    return out, stats


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mask_dtype", [torch.bool, torch.int64, torch.float32])
def test_every_function_on_cuda_matches_cpu(dtype, mask_dtype):
    cpu, cpu_stats = run_all("cpu", dtype, mask_dtype)
    gpu, gpu_stats = run_all("cuda", dtype, mask_dtype)
    real = prefix_mask(LENGTHS, T, torch.bool)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    for name, want in cpu.items():
        got = gpu[name]
        assert got.device.type == "cuda" and got.dtype == dtype, name
        got = got.cpu()
        if got.dim() == 2:
            got, want = got[real], want[real]
        torch.testing.assert_close(got, want, **tol, msg=name)
    assert cpu_stats.keys() == gpu_stats.keys()
    for key in cpu_stats:
        assert gpu_stats[key] == pytest.approx(cpu_stats[key], rel=1e-5, abs=1e-6), key


def test_adaptive_kl_accepts_a_cuda_scalar():
    ctl = R.AdaptiveKLController(0.05, 6.0, 10000)
    ctl.update(torch.tensor(9.0, device="cuda"), 128)
    assert ctl.value == pytest.approx(0.050128, rel=1e-6)


def test_rollout_buffer_on_cuda_with_a_cuda_generator():
    buf = R.RolloutBuffer()
    buf.add(responses=torch.arange(10, device="cuda").unsqueeze(1), logp_old=torch.zeros(10, 3, device="cuda"))
    buf.start_training()
    gen = torch.Generator(device="cuda").manual_seed(0)
    batches = list(buf.minibatches(4, generator=gen))
    assert [b["responses"].device.type for b in batches] == ["cuda"] * 3
    ids = torch.cat([b["responses"][:, 0] for b in batches]).cpu()
    assert sorted(ids.tolist()) == list(range(10))


def test_bad_token_id_is_a_clear_error_not_a_device_assert():
    with pytest.raises(ValueError, match="outside the vocabulary"):
        R.logprobs_from_logits(torch.zeros(1, 2, 3, device="cuda"), torch.tensor([[0, 3]], device="cuda"))
    # The context is still usable afterwards.
    assert torch.ones(1, device="cuda").item() == 1.0

"""ppo_course.model: shapes, causality, sampling, EOS/PAD, alignment, LoRA and r = 1 before the first update."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from model_support import EOS, PAD, fixed_distribution_model

from ppo_course.model import CausalLMWithValueHead, Generation, PolicyConfig


def _queries(batch=6, prompt_len=5, vocab=12, seed=1):
    return torch.randint(2, vocab, (batch, prompt_len), generator=torch.Generator().manual_seed(seed))


def test_forward_shapes_and_dtypes(random_model):
    ids = _queries(batch=3, prompt_len=7)
    logits, values = random_model(ids)
    assert logits.shape == (3, 7, 12) and values.shape == (3, 7)
    assert logits.dtype == values.dtype == torch.float32


def test_forward_response_shapes(random_model):
    logits, values = random_model.forward_response(_queries(), _queries(prompt_len=4, seed=2))
    assert logits.shape == (6, 4, 12) and values.shape == (6, 4)


def test_generate_shapes_and_dtypes(random_model):
    gen = random_model.generate(_queries(), max_new_tokens=9, generator=torch.Generator().manual_seed(0))
    assert isinstance(gen, Generation)
    assert gen.responses.shape == gen.mask.shape == gen.logprobs.shape == gen.values.shape == (6, 9)
    assert gen.responses.dtype == torch.long and gen.mask.dtype == torch.bool
    assert not gen.logprobs.requires_grad and not gen.values.requires_grad


def test_causal_masking_later_token_never_changes_earlier_outputs(random_model):
    ids = _queries(batch=4, prompt_len=10)
    changed = ids.clone()
    changed[:, 6] = (changed[:, 6] + 3) % 12
    logits_a, values_a = random_model(ids)
    logits_b, values_b = random_model(changed)
    # Same kernels on the same shapes: the earlier positions must agree to rounding at most.
    torch.testing.assert_close(logits_a[:, :6], logits_b[:, :6], rtol=0, atol=1e-6)
    torch.testing.assert_close(values_a[:, :6], values_b[:, :6], rtol=0, atol=1e-6)
    # ...and the change must be visible from position 6 on, or the check is vacuous.
    assert (logits_a[:, 6:] - logits_b[:, 6:]).abs().max() > 1e-3


def test_forward_response_alignment_matches_forward_on_concatenation(random_model):
    # float64: a pass over 11 and one over 12 tokens round differently in float32 (~1e-6);
    # an off-by-one alignment error would differ by O(1).
    model = random_model.double()
    queries, responses = _queries(prompt_len=5), _queries(prompt_len=7, seed=3)
    temperature = 0.7
    logits, values = model.forward_response(queries, responses, temperature)
    full_logits, full_values = model(torch.cat([queries, responses], dim=1))  # (B, 12, V)
    # Position P-1+t has read the query and responses[:, :t]: it produced responses[:, t].
    torch.testing.assert_close(logits, full_logits[:, 4:11] / temperature, rtol=0, atol=1e-10)
    torch.testing.assert_close(values, full_values[:, 4:11], rtol=0, atol=1e-10)


def test_generate_is_deterministic_under_a_seed(random_model):
    queries = _queries()
    a = random_model.generate(queries, 12, temperature=0.9, top_p=0.8, generator=torch.Generator().manual_seed(7))
    b = random_model.generate(queries, 12, temperature=0.9, top_p=0.8, generator=torch.Generator().manual_seed(7))
    c = random_model.generate(queries, 12, temperature=0.9, top_p=0.8, generator=torch.Generator().manual_seed(8))
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    assert not torch.equal(a.responses, c.responses), "another seed gave the same samples"


def test_generate_draws_exactly_batch_times_length_uniforms(random_model):
    """The generator is left where B × T uniform draws leave it, whatever the rows do (ppo_step's fixed order)."""
    generator = torch.Generator().manual_seed(3)
    random_model.generate(_queries(), 5, generator=generator)
    expected = torch.Generator().manual_seed(3)
    torch.rand(6 * 5, generator=expected)
    assert torch.equal(torch.rand(4, generator=generator), torch.rand(4, generator=expected))


def test_after_eos_rows_hold_pad_and_the_mask_is_zero():
    # EOS has probability 0.3 at every step: rows end at random places.
    model = fixed_distribution_model([1e-9, 0.3, 0.3, 0.2, 0.2 - 1e-9])
    gen = model.generate(torch.full((200, 3), 2), 8, generator=torch.Generator().manual_seed(0))
    responses, mask = gen.responses, gen.mask
    for row, row_mask in zip(responses.tolist(), mask.tolist()):
        first_eos = row.index(EOS) if EOS in row else len(row) - 1
        assert row_mask == [True] * (first_eos + 1) + [False] * (len(row) - first_eos - 1)
        assert all(tok == PAD for tok in row[first_eos + 1 :])
    ended = (responses == EOS).any(1)
    assert 0 < ended.sum() < 200 and (~ended).any(), "need both ended and truncated rows"
    assert mask[~ended].all(), "a row without EOS is real to its last token"


def test_logprobs_are_those_of_the_tempered_distribution():
    probs = torch.tensor([1e-9, 0.1, 0.5, 0.25, 0.15 - 1e-9], dtype=torch.float64)
    model = fixed_distribution_model(probs.tolist())
    for temperature in (1.0, 0.5):
        gen = model.generate(torch.full((50, 2), 2), 6, temperature=temperature, generator=torch.Generator().manual_seed(1))
        # By hand: softmax(log p / τ) = p^(1/τ) / Σ p^(1/τ).
        tempered = probs ** (1 / temperature) / (probs ** (1 / temperature)).sum()
        want = tempered.log()[gen.responses].float()
        torch.testing.assert_close(gen.logprobs[gen.mask], want[gen.mask], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("temperature, top_p, allowed, share_of_2", [
    (1.0, 1.0, {1, 2, 3, 4}, 0.5),
    # Nucleus 0.7: sorted masses .5, .25, .1, ...; the mass before "3" is .5 < .7, before the next .75 ≥ .7.
    (1.0, 0.7, {2, 3}, 0.5 / 0.75),
    # τ = 2: p^(1/2) normalised; the share of token 2 is √.5 / Σ√p.
    (2.0, 1.0, {1, 2, 3, 4}, math.sqrt(0.5) / sum(math.sqrt(p) for p in (0.1, 0.5, 0.25, 0.15))),
])
def test_sampling_frequencies_follow_temperature_and_top_p(temperature, top_p, allowed, share_of_2):
    model = fixed_distribution_model([1e-12, 0.1, 0.5, 0.25, 0.15])
    gen = model.generate(torch.full((4000, 1), 2), 1, temperature=temperature, top_p=top_p,
                         generator=torch.Generator().manual_seed(0))
    tokens = gen.responses[:, 0]
    assert set(tokens.unique().tolist()) <= allowed
    # 4000 draws: the standard error of a share near 0.5 is < 0.008; 0.03 is ~4 sigma.
    assert abs((tokens == 2).float().mean().item() - share_of_2) < 0.03


def test_r_is_one_before_the_first_update(random_model):
    """Rollout log-probs versus a training-time pass on a mini-batch of other size (Book table 5.1: r = 1.0)."""
    queries = _queries(batch=16)
    gen = random_model.generate(queries, 10, generator=torch.Generator().manual_seed(2))
    rows = torch.tensor([3, 0, 11, 7])
    logits, values = random_model.forward_response(queries[rows], gen.responses[rows])
    logp = torch.log_softmax(logits, -1).gather(-1, gen.responses[rows, :, None]).squeeze(-1)
    ratio = torch.exp(logp - gen.logprobs[rows])
    mask = gen.mask[rows]
    # Not always bit-exact: a 4-row and a 16-row matmul may block (and so round) differently.
    torch.testing.assert_close(ratio[mask], torch.ones_like(ratio[mask]), rtol=0, atol=1e-6)
    torch.testing.assert_close(values[mask], gen.values[rows][mask], rtol=0, atol=1e-6)


def test_lora_rank_zero_is_the_plain_model(small_config):
    model = CausalLMWithValueHead(small_config)
    assert not [n for n, _ in model.named_parameters() if "lora_" in n]
    assert all(p.requires_grad for p in model.parameters())


def test_lora_starts_equal_to_the_base_and_only_adapters_and_value_head_train(random_model):
    lora = random_model.with_lora(rank=4, alpha=8.0)
    ids = _queries(batch=3, prompt_len=9)
    base_logits, base_values = random_model(ids)
    lora_logits, lora_values = lora(ids)
    # B = 0 at initialisation: the adapters add exactly 0.
    assert torch.equal(base_logits, lora_logits) and torch.equal(base_values, lora_values)

    trainable = {n for n, p in lora.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n or n.startswith("value_head.") for n in trainable)
    assert sum("lora_" in n for n in trainable) == 2 * 4 * lora.config.n_layer  # A and B on q/k/v/o per layer

    before = {n: p.detach().clone() for n, p in lora.named_parameters()}
    optimizer = torch.optim.Adam([p for p in lora.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(2):  # B is 0 at first, so A only moves from the second step on
        logits, values = lora(ids)
        loss = F.cross_entropy(logits.flatten(0, 1), ids.flatten()) + values.square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    for n, p in lora.named_parameters():
        moved = not torch.equal(p, before[n])
        assert moved == (n in trainable), f"{n}: moved={moved}, trainable={n in trainable}"


def test_lora_scaling_is_alpha_over_rank(small_config):
    torch.manual_seed(0)
    layer = CausalLMWithValueHead(small_config.model_copy(update={"lora_rank": 2, "lora_alpha": 6.0})).blocks[0].attn.q
    with torch.no_grad():
        layer.lora_B.normal_()
    x = torch.randn(5, small_config.d_model)
    # By hand (Hu et al. 2021): y = x Wᵀ + b + (α / r) x Aᵀ Bᵀ with α / r = 3.
    want = x @ layer.weight.T + layer.bias + 3.0 * (x @ layer.lora_A.T @ layer.lora_B.T)
    torch.testing.assert_close(layer(x), want)


def test_float64_model_generates_float64_outputs(random_model):
    gen = random_model.double().generate(_queries(), 4, generator=torch.Generator().manual_seed(0))
    assert gen.logprobs.dtype == gen.values.dtype == torch.float64


@pytest.mark.parametrize("bad", [
    dict(pad_token_id=1, eos_token_id=1),
    dict(d_model=30, n_head=4),
    dict(vocab_size=5, eos_token_id=7),
])
def test_policy_config_rejects_bad_shapes(bad):
    with pytest.raises(ValueError, match="PolicyConfig"):
        PolicyConfig(**bad)


def test_too_long_sequences_are_refused_with_a_clear_message(random_model):
    with pytest.raises(ValueError, match="max_seq_len"):
        random_model(torch.zeros(1, 33, dtype=torch.long))
    with pytest.raises(ValueError, match="max_seq_len"):
        random_model.generate(_queries(prompt_len=20), 14)


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(max_new_tokens=3, temperature=0.0), "temperature"),
    (dict(max_new_tokens=3, top_p=1.5), "top_p"),
])
def test_generate_rejects_bad_arguments(random_model, kwargs, match):
    with pytest.raises(ValueError, match=match):
        random_model.generate(_queries(), **kwargs)

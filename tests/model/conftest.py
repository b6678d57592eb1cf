"""Fixtures for the tests of ppo_course.model, ppo_course.config and ppo_course.toy_task."""

from __future__ import annotations

import math

import pytest
import torch

from ppo_course.model import CausalLMWithValueHead, PolicyConfig

# The machine is shared and the model is tiny: one thread is fastest and fair.
torch.set_num_threads(1)

PAD, EOS = 0, 1


@pytest.fixture
def small_config() -> PolicyConfig:
    """A 2-layer, d_model 32 model over 12 token ids (PAD 0, EOS 1)."""
    return PolicyConfig(vocab_size=12, n_layer=2, n_head=4, d_model=32, max_seq_len=32, pad_token_id=PAD, eos_token_id=EOS)


@pytest.fixture
def random_model(small_config) -> CausalLMWithValueHead:
    """A randomly initialised model (seed 0) with larger-than-default weights, so that outputs depend on the input."""
    torch.manual_seed(0)
    model = CausalLMWithValueHead(small_config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


def fixed_distribution_model(probs: list[float]) -> CausalLMWithValueHead:
    """A model whose next-token distribution is ``probs`` at every position, whatever the input.

    ln_f maps every hidden state to the constant unit vector e₀ (weight 0, bias e₀),
    and the LM head's column 0 holds log(probs), so the logits are exactly
    log(probs): the expected sampling frequencies and log-probs are known by hand.
    """
    config = PolicyConfig(vocab_size=len(probs), n_layer=1, n_head=2, d_model=8, max_seq_len=40,
                          pad_token_id=PAD, eos_token_id=EOS)
    model = CausalLMWithValueHead(config)
    with torch.no_grad():
        model.ln_f.weight.zero_()
        model.ln_f.bias.zero_()
        model.ln_f.bias[0] = 1.0
        model.lm_head.weight.zero_()
        model.lm_head.weight[:, 0] = torch.tensor([math.log(p) for p in probs])
    return model

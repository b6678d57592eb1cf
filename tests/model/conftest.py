"""Fixtures for the tests of ppo_course.model, ppo_course.config and ppo_course.toy_task (helpers: model_support.py)."""

from __future__ import annotations

import pytest
import torch
from model_support import EOS, PAD

from ppo_course.model import CausalLMWithValueHead, PolicyConfig

# The machine is shared and the model is tiny: one thread is fastest and fair.
torch.set_num_threads(1)


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

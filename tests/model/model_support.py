"""Helpers of the tests in tests/model (named apart from every other test folder's helpers)."""

from __future__ import annotations

import math

import torch

from ppo_course.model import CausalLMWithValueHead, PolicyConfig

PAD, EOS = 0, 1


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

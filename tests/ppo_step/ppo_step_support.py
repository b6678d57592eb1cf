"""Helpers of the tests in tests/ppo_step (named apart from every other test folder's helpers)."""

from __future__ import annotations

import copy
import warnings

import torch

from ppo_course import toy_task
from ppo_course.config import PPOConfig


def small_config(**overrides) -> PPOConfig:
    """The toy preset shrunk for speed: 16 sequences, mini-batches of 4, 2 accumulated, 2 epochs."""
    with warnings.catch_warnings():  # a batch of 16 and 2 epochs leave the book's band on purpose
        warnings.simplefilter("ignore")
        return PPOConfig.toy(batch_size=16, mini_batch_size=4, gradient_accumulation_steps=2, ppo_epochs=2, **overrides)


def fresh_setup(config: PPOConfig, device: str = "cpu", dtype=torch.float32):
    """(policy, ref_policy, optimizer, kl_ctl) from the toy SFT policy, as ``ppo-course train`` builds them."""
    from ppo_reference.kl import AdaptiveKLController

    policy = toy_task.sft_policy(seed=0).to(device=device, dtype=dtype)
    ref_policy = copy.deepcopy(policy).requires_grad_(False)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    kl_ctl = AdaptiveKLController(config.init_kl_coef, config.target_kl, config.kl_horizon)
    return policy, ref_policy, optimizer, kl_ctl

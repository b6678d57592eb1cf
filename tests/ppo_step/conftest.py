"""Fixtures for the tests of ppo_reference.ppo_step and ``ppo-course train`` (helpers: ppo_step_support.py)."""

from __future__ import annotations

import torch

# The machine is shared and the model is tiny: one thread is fastest and fair.
torch.set_num_threads(1)

"""The hidden inputs of exercise 5's tests: rollouts and mini-batch generators drawn from the grader's secret.

Grader side only (`grader.hidden.draws`): the values change with the secret and ``grader_version`` and are
never fixed in the source. Fields follow Book eq. 5.13; ``ids`` numbers the sequences so that order can be
checked.
"""

from __future__ import annotations

import torch

from grader.hidden.draws import draw_seed
from ppo_course.grading_kit.buffer_data import drain


def mb_generator(salt: int) -> torch.Generator:
    """The mini-batch generator number `salt` of these tests, seeded from the grader's secret (`grader.hidden.draws`)."""
    return torch.Generator().manual_seed(draw_seed(f"ex5.minibatches.{salt}"))


def rollout(B: int, T: int = 4, seed: int = 0, start: int = 0) -> dict[str, torch.Tensor]:
    """Per-sequence fields of eq. 5.13; `ids` numbers the sequences so that order can be checked.

    `seed` names the draw (`grader.hidden.draws`): the values are drawn per grader version, never fixed here.
    """
    g = torch.Generator().manual_seed(draw_seed(f"ex5.rollout.{seed}"))
    return {
        "ids": torch.arange(start, start + B),                                  # (B,) long
        "responses": torch.randint(0, 50, (B, T), generator=g),                # (B, T) long
        "logp_old": -torch.rand(B, T, generator=g, dtype=torch.float64) * 3,   # (B, T)
        "values": torch.randn(B, T, generator=g, dtype=torch.float64),         # (B, T)
        "mask": torch.arange(T)[None, :] < torch.randint(1, T + 1, (B, 1), generator=g),  # (B, T) bool
    }


def epochs_of(buffer_factory, fields_list, plan):
    """Several epochs over ONE buffer: plan = [(mini_batch_size, generator seed), ...]."""
    buf = buffer_factory()
    for fields in fields_list:
        buf.add(**fields)
    buf.start_training()
    return [drain(buf.minibatches(mbs, generator=mb_generator(seed))) for mbs, seed in plan]

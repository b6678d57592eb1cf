"""The course's exercise modules, in teaching order: the one list every side imports.

The contract (CONTRACT.md, "Exercises") names seven modules, one per exercise;
a submission holds any of them. Everything that walks the exercises (the
public tests and `ppo-course check`, the hidden graders and `points.yaml`'s
validation, the intake, the gradebook's columns, the similarity report, the
benchmarks) takes this tuple, so the order is the same everywhere: the order
in which the chapter builds them (Book §5.2-§5.8, stops 2-7).

Student side: ships in the bundle and imports nothing.
"""

from __future__ import annotations

#: The seven exercise module stems of the contract, in teaching order (``ex7_ppo_step`` imports the others).
EXERCISES: tuple[str, ...] = (
    "ex1_ratio",
    "ex2_clipped_loss",
    "ex3_full_loss",
    "ex4_gae",
    "ex5_rollout_buffer",
    "ex6_kl_reward",
    "ex7_ppo_step",
)

__all__ = ["EXERCISES"]

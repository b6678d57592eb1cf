"""The chapter's structure every side imports: the exercise modules in teaching order, and the quiz stops.

The contract (CONTRACT.md, "Exercises") names seven modules, one per exercise;
a submission holds any of them. Everything that walks the exercises (the
public tests and `ppo-course check`, the hidden graders and `points.yaml`'s
validation, the intake, the gradebook's columns, the similarity report, the
benchmarks) takes this tuple, so the order is the same everywhere: the order
in which the chapter builds them (Book §5.2-§5.8, stops 2-7).

The quiz has ``N_STOPS`` stops, numbered from 1 (``STOPS``).

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

#: The number of quiz stops of the chapter (Book ch. 5, §5.1-§5.9): stops 1..N_STOPS, one ``stop<N>.yaml`` each
#: in ``quiz_bank``. The one definition: the quiz bank, its gradebooks, Gradescope, nbgrader and LTI import it.
N_STOPS: int = 8
#: The stop numbers in order, ``1 .. N_STOPS``.
STOPS: tuple[int, ...] = tuple(range(1, N_STOPS + 1))

__all__ = ["EXERCISES", "N_STOPS", "STOPS"]

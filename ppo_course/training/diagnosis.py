"""Which of the student's pieces first differs from the reference on one step's batch: the finding and its words.

The comparison itself needs the reference, so it is the ``ReferenceSide``'s
(``ppo_course.training.pieces``); this module holds only what the student
side prints: a ``Finding`` names the exercise, the piece and, where a known
mistake matches, its diagnosis id, whose words are the ones ``ppo-course
check`` prints (``ppo_course.grading_kit.diagnoses.describe``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ppo_course.grading_kit.diagnoses import DIAGNOSES, describe

__all__ = ["Finding"]


@dataclass(frozen=True)
class Finding:
    """The first of the student's pieces that differs from the reference's on one step's batch.

    Attributes:
        step: the 1-based step whose batch was replayed.
        exercise: the module stem (``"ex4_gae"``), or None when every piece agrees with the reference.
        piece: the function or class (``"compute_gae"``), or None with ``exercise``.
        diagnosis: a known mistake's id (a key of ``DIAGNOSES``), or None.
        detail: one sentence on what differs (numbers, the stage of exercise 7).
    """

    step: int
    exercise: str | None
    piece: str | None
    diagnosis: str | None
    detail: str

    def words(self) -> str:
        """The sentence the student reads: the piece, what differs and, for a known mistake, ``check``'s words."""
        if self.exercise is None:
            return (f"on step {self.step}'s batch every one of your pieces agrees with the reference's: "
                    f"{self.detail}")
        head = f"on step {self.step}'s batch, the first of your pieces that differs from the reference's is " \
               f"{self.exercise}.{self.piece}: {self.detail}"
        if self.diagnosis in DIAGNOSES:
            return f"{head}\n    {describe(self.diagnosis)}"
        return head

"""Stable diagnosis ids and the plain-words message a student can act on.

A *diagnosis* names a known mistake. When a hidden or public comparison fails,
the grader computes what each known buggy variant of the function would have
returned on the same input (trusted code in `grader/mistakes/buggy_variants.py`) and,
if the student's output matches one, reports that variant's id and message
instead of a bare "wrong value".

`DIAGNOSES` (id -> message) is the team's stable list: the mistake catalogue
(`tests/catalogue/`), the class report and the feedback all use these ids.
Never rename or remove an id; add new ones freely. The table itself lives in
`ppo_course/grading_kit/diagnoses.py` because `ppo-course check` (student
side, which ships without `grader/`) prints the same messages; this module is
the instructor-side name for it.
"""

from __future__ import annotations

from ppo_course.grading_kit.diagnoses import DIAGNOSES, describe, message

__all__ = ["DIAGNOSES", "describe", "message"]

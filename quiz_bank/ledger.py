"""The grader's own record of quiz submissions: the attempt count and the stops already passed.

Why: a responses file's variants must come from the student's
identity and an attempt count the *grader* keeps, not a number the student
writes (a student who could resubmit the same attempt could flip, one by one,
the answers the feedback called wrong). ``quiz grade`` keeps this ledger (a
JSON file; ``--ledger``, default ``quiz_ledger.json`` beside ``--out``):

- each distinct submission of a student (its SHA-256) gets the next attempt
  number; grading the same files again (a regrade) finds its number, so the
  grade is the same;
- the stops a student has passed stay passed (a later submission never
  lowers a completed stop).

Gradescope keeps the same count itself (``submission_metadata.json``'s
``previous_submissions``; ``grader.platforms.gradescope.quiz``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


class Ledger:
    """The ledger file at ``path`` (empty when it does not exist yet).

    Raises:
        ValueError: if the file exists but is not a ledger (the message names it).
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.data: dict = {"students": {}}
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                if not isinstance(data.get("students"), dict):
                    raise ValueError("no 'students' mapping")
            except (OSError, ValueError, AttributeError) as exc:
                raise ValueError(f"{self.path}: not a quiz ledger: {exc}") from None
            self.data = data

    def _student(self, student_id: str) -> dict:
        return self.data["students"].setdefault(student_id, {"submissions": {}, "passed": []})

    def attempt_for(self, student_id: str, digest: str) -> int:
        """The attempt number of this submission (a new one gets 1 + the student's count)."""
        subs = self._student(student_id)["submissions"]
        if digest not in subs:
            subs[digest] = len(subs) + 1
        return int(subs[digest])

    def passed(self, student_id: str) -> set[int]:
        """The stops this student has passed in an earlier submission."""
        return set(self._student(student_id)["passed"])

    def add_passed(self, student_id: str, stops) -> None:
        """Remember passed stops (never removes one)."""
        entry = self._student(student_id)
        entry["passed"] = sorted(set(entry["passed"]) | set(stops))

    def save(self, write_json) -> None:
        """Write the ledger with ``write_json(path, data)`` (the commands' atomic writer)."""
        write_json(self.path, self.data)


def digest_of(paths) -> str:
    """SHA-256 over the files' bytes, in the order given (identifies one submission)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
        h.update(b"\0")
    return h.hexdigest()

"""The mastery quiz without a server: the attempts of the responses-file path, drawn the same on both sides.

The student bundle's ``quiz take`` (no keys) and the grader of its responses file (``quiz grade``, Gradescope)
must agree on which questions an attempt asks without talking to each other. They do, because under
``quiz_bank.mastery`` an attempt's draw depends only on the student id, the stop, the attempt number and the
facts shown in the earlier attempts, and on this path **every attempt shows its whole draw**: attempt ``n`` is
the ``n``-th submission the grader counts (``quiz_bank.ledger``; Gradescope's ``previous_submissions``), and its
draw for every stop counts as shown, answered or not. The history is therefore a function of (student id, stop,
attempt) alone, recomputed here from attempt 1 on; the grader needs no record of what the bundle displayed, and
the bundle needs no keys. Draws use the student id itself as the seed (the public seed: the bundle must
reproduce them), so a student can compute any attempt's questions ahead; they cannot compute a verdict, which
is only told for graded attempts, and a question told about is stale from then on (``mastery.needs``).

Pure functions of the bank; a small memo keeps the histories of up to 64 (bank, stop, student) so that grading
attempt after attempt does not redraw the earlier ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from quiz_bank import mastery


@dataclass(frozen=True)
class OfflineAttempt:
    """One responses-file attempt at one stop.

    Attributes:
        attempt: the attempt number (1-based, the grader's count).
        order: the question ids it asks, in order (``mastery.draw``).
        stale: those of ``order`` whose fact an earlier attempt showed (a right answer on them does not count).
    """

    attempt: int
    order: tuple[str, ...]
    stale: frozenset[str]


_MEMO: dict = {}


def _history(bank, stop: int, student_id: str, attempt: int) -> list[tuple[int, tuple[str, ...], dict]]:
    """[(n, order of attempt n, facts last seen before n)] for n = 1 … ``attempt``, extended from the memo."""
    key = (id(bank), stop, student_id)
    held = _MEMO.get(key)
    if held is None or held[0] is not bank:
        if len(_MEMO) >= 64:
            _MEMO.clear()
        held = _MEMO[key] = (bank, [])
    rows = held[1]
    while len(rows) < attempt:
        n = len(rows) + 1
        seen = dict(rows[-1][2]) if rows else {}
        if rows:
            for fact, last in mastery.last_seen_from([(n - 1, rows[-1][1])], bank, student_id).items():
                seen[fact] = max(seen.get(fact, 0), last)
        rows.append((n, tuple(mastery.draw(bank, stop, student_id, n, seen)), seen))
    return rows[:attempt]


def attempt_at(bank, stop: int, student_id: str, attempt: int) -> OfflineAttempt:
    """The questions attempt ``attempt`` asks ``student_id`` at ``stop``, and which of them were seen before.

    Raises:
        ValueError: if ``attempt`` < 1 or ``student_id`` is empty (``variants.variant_seed``).
    """
    if attempt < 1:
        raise ValueError(f"attempt numbers start at 1, got {attempt}")
    if not student_id:
        raise ValueError("student_id must be a non-empty string")
    n, order, seen = _history(bank, stop, student_id, attempt)[-1]
    stale = mastery.stale_items(bank, order, seen, student_id, n)
    return OfflineAttempt(n, order, frozenset(stale))

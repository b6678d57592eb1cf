"""Attempts and completions of the terminal quiz, stored atomically in SQLite.

A completion is never removed: a passed stop stays passed whatever a later
(practice) attempt scores.

Every answer is one transaction (``with connection:`` commits or rolls back
as a whole), and a stop's completion row is written in the *same* transaction
as the answer that completed it, so a crash at any point leaves either the
whole answer or none of it; answers recorded before the crash are kept and the
next ``quiz take`` resumes after them. SQLite's default rollback journal with
``synchronous=FULL`` makes a committed answer survive a power cut too.

Default location: ``$PPO_COURSE_QUIZ_STORE`` or ``~/.ppo_course/quiz.sqlite3``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS attempts (
    student_id  TEXT    NOT NULL,
    question_id TEXT    NOT NULL,
    attempt     INTEGER NOT NULL CHECK (attempt >= 1),
    response    TEXT    NOT NULL,            -- JSON
    status      TEXT    NOT NULL,            -- correct | wrong | recorded (no keys installed)
    recorded_at TEXT    NOT NULL,
    PRIMARY KEY (student_id, question_id, attempt)
);
CREATE TABLE IF NOT EXISTS stop_attempts (    -- one row per attempt at a stop (the questions it asks)
    student_id     TEXT    NOT NULL,
    stop           INTEGER NOT NULL,
    attempt        INTEGER NOT NULL CHECK (attempt >= 1),
    question_order TEXT    NOT NULL,         -- JSON list of question ids
    started_at     REAL    NOT NULL,
    PRIMARY KEY (student_id, stop, attempt)
);
CREATE TABLE IF NOT EXISTS completions (
    student_id   TEXT    NOT NULL,
    stop         INTEGER NOT NULL,
    completed_at TEXT    NOT NULL,
    PRIMARY KEY (student_id, stop)
);
"""


def default_store_path() -> Path:
    """``$PPO_COURSE_QUIZ_STORE`` if set, else ``~/.ppo_course/quiz.sqlite3``."""
    env = os.environ.get("PPO_COURSE_QUIZ_STORE")
    return Path(env) if env else Path.home() / ".ppo_course" / "quiz.sqlite3"


@dataclass(frozen=True)
class Attempt:
    """One stored answer."""

    question_id: str
    attempt: int
    response: Any
    status: str
    recorded_at: str


class AttemptStore:
    """The attempts/completions database of one machine (one file, many students).

    Raises:
        sqlite3.DatabaseError: if ``path`` exists but is not a database.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=30.0)
        self._db.execute("PRAGMA synchronous=FULL")
        with self._db:
            self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the connection (committed answers are already on disk)."""
        self._db.close()

    def __enter__(self) -> "AttemptStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def record(self, student_id: str, question_id: str, attempt: int, response: Any, status: str, completed_stop: int | None = None) -> None:
        """Store one answer (and, atomically with it, the completion of ``completed_stop``).

        Raises:
            sqlite3.IntegrityError: if this (student, question, attempt) is already stored.
        """
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with self._db:  # one transaction: all or nothing
            self._db.execute(
                "INSERT INTO attempts VALUES (?, ?, ?, ?, ?, ?)",
                (student_id, question_id, int(attempt), json.dumps(response), status, now),
            )
            if completed_stop is not None:
                self._db.execute(
                    "INSERT OR IGNORE INTO completions VALUES (?, ?, ?)", (student_id, int(completed_stop), now)
                )

    def attempts(self, student_id: str, question_id: str | None = None) -> list[Attempt]:
        """Stored answers of a student (optionally one question), oldest attempt first."""
        sql = "SELECT question_id, attempt, response, status, recorded_at FROM attempts WHERE student_id = ?"
        args: list[Any] = [student_id]
        if question_id is not None:
            sql += " AND question_id = ?"
            args.append(question_id)
        rows = self._db.execute(sql + " ORDER BY question_id, attempt", args).fetchall()
        return [Attempt(q, a, json.loads(r), s, t) for q, a, r, s, t in rows]

    def latest(self, student_id: str) -> dict[str, Attempt]:
        """Question id → the student's latest stored attempt."""
        out: dict[str, Attempt] = {}
        for a in self.attempts(student_id):
            out[a.question_id] = a  # ordered by attempt, so the last one wins
        return out

    def next_attempt(self, student_id: str, question_id: str) -> int:
        """1 + the highest stored attempt of this question (1 when none)."""
        row = self._db.execute(
            "SELECT MAX(attempt) FROM attempts WHERE student_id = ? AND question_id = ?", (student_id, question_id)
        ).fetchone()
        return (row[0] or 0) + 1

    def start_stop_attempt(self, student_id: str, stop: int, attempt: int, order: list[str], now: float) -> None:
        """Record that ``attempt`` at ``stop`` asks ``order`` (one transaction).

        Raises:
            sqlite3.IntegrityError: if this attempt is already recorded.
        """
        with self._db:
            self._db.execute("INSERT INTO stop_attempts VALUES (?, ?, ?, ?, ?)",
                             (student_id, int(stop), int(attempt), json.dumps(list(order)), float(now)))

    def stop_attempts(self, student_id: str, stop: int) -> list[tuple[int, tuple[str, ...], float]]:
        """(attempt, question ids asked, started at) of each recorded attempt at ``stop``, oldest first."""
        rows = self._db.execute("SELECT attempt, question_order, started_at FROM stop_attempts "
                                "WHERE student_id = ? AND stop = ? ORDER BY attempt", (student_id, int(stop))).fetchall()
        return [(a, tuple(json.loads(o)), t) for a, o, t in rows]

    def completed_stops(self, student_id: str) -> set[int]:
        """Stops this student has passed (all questions right)."""
        rows = self._db.execute("SELECT stop FROM completions WHERE student_id = ?", (student_id,)).fetchall()
        return {r[0] for r in rows}

    def students(self) -> list[str]:
        """Every student with at least one stored answer."""
        return [r[0] for r in self._db.execute("SELECT DISTINCT student_id FROM attempts ORDER BY student_id")]

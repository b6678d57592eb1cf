"""The quiz server's SQLite store: roster, stop attempts, answers, completions (one file, WAL).

Every answer is one ``BEGIN IMMEDIATE`` transaction that checks the attempt is
still open and the question is the next one of the attempt, inserts the answer
and, when it was the attempt's last, closes the attempt (and records the
stop's completion when every answer was right) — all before the reply is
sent. WAL with ``synchronous=FULL`` makes a committed answer survive the
server process being killed (and a power cut). The primary keys make an
answer or an attempt impossible to store twice: a replayed request after a
crash finds its row and is told so, nothing is double-counted.

Connections are per thread (FastAPI runs sync endpoints in a thread pool);
``BEGIN IMMEDIATE`` serialises writers, and WAL lets readers run alongside.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS students (
    student_id   TEXT PRIMARY KEY,
    name         TEXT NOT NULL DEFAULT '',
    section      TEXT NOT NULL DEFAULT '',
    sis_user_id  TEXT NOT NULL DEFAULT '',
    sis_login_id TEXT NOT NULL DEFAULT '',
    canvas_id    TEXT NOT NULL DEFAULT '',
    email        TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS stop_attempts (
    student_id  TEXT    NOT NULL,
    stop        INTEGER NOT NULL CHECK (stop BETWEEN 1 AND 8),
    attempt     INTEGER NOT NULL CHECK (attempt >= 1),
    question_order TEXT NOT NULL,           -- JSON list of question ids, as shown
    started_at  REAL    NOT NULL,
    finished_at REAL,                       -- NULL while open
    n_correct   INTEGER,
    passed      INTEGER,
    PRIMARY KEY (student_id, stop, attempt)
);
CREATE TABLE IF NOT EXISTS answers (
    student_id  TEXT    NOT NULL,
    stop        INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    question_id TEXT    NOT NULL,
    position    INTEGER NOT NULL,           -- 1-based place in the attempt's order
    response    TEXT    NOT NULL,           -- JSON, canonical ids (engine.normalise_response)
    correct     INTEGER NOT NULL,
    answered_at REAL    NOT NULL,
    PRIMARY KEY (student_id, stop, attempt, question_id),
    FOREIGN KEY (student_id, stop, attempt) REFERENCES stop_attempts (student_id, stop, attempt)
);
CREATE TABLE IF NOT EXISTS revocations (      -- tokens of this id issued before not_before are refused
    student_id  TEXT PRIMARY KEY,
    not_before  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS completions (
    student_id   TEXT    NOT NULL,
    stop         INTEGER NOT NULL,
    attempt      INTEGER NOT NULL,
    completed_at REAL    NOT NULL,
    PRIMARY KEY (student_id, stop)
);
"""


class Conflict(Exception):
    """A request that contradicts the stored state (stale or forged attempt, answer given twice)."""


@dataclass(frozen=True)
class StopAttempt:
    """One row of ``stop_attempts``: an attempt at a stop, open while ``finished_at`` is None."""

    student_id: str
    stop: int
    attempt: int
    question_order: tuple[str, ...]
    started_at: float
    finished_at: float | None
    n_correct: int | None
    passed: bool | None

    @property
    def is_open(self) -> bool:
        """True until the attempt's last question is answered."""
        return self.finished_at is None


@dataclass(frozen=True)
class StoredAnswer:
    """One answer as stored: canonical response (ids), verdict, place in the attempt."""

    question_id: str
    position: int
    response: Any
    correct: bool
    answered_at: float


def _attempt(row) -> StopAttempt:
    sid, stop, attempt, order, started, finished, n_correct, passed = row
    return StopAttempt(sid, stop, attempt, tuple(json.loads(order)), started, finished, n_correct,
                       None if passed is None else bool(passed))


class QuizDB:
    """The server's database (see the module docstring).

    Args:
        path: the SQLite file (created with its folder when missing).

    Raises:
        sqlite3.DatabaseError: if ``path`` exists but is not a database.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connection().executescript(_SCHEMA)  # idempotent (IF NOT EXISTS); executescript commits itself
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    # ------------------------------------------------------------------ plumbing

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)  # explicit BEGIN/COMMIT
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            self._local.db = db
        return db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on any exception)."""
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def read(self, sql: str, args: tuple = ()) -> list[tuple]:
        """Run one read-only query."""
        return self._connection().execute(sql, args).fetchall()

    # ------------------------------------------------------------------ roster

    def load_roster(self, rows: list[dict[str, str]]) -> int:
        """Insert or update the roster's students; returns how many rows were given."""
        cols = ("student_id", "name", "section", "sis_user_id", "sis_login_id", "canvas_id", "email")
        with self.transaction() as db:
            for row in rows:
                values = tuple(row.get(c, "") or "" for c in cols)
                db.execute(
                    f"INSERT INTO students ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
                    "ON CONFLICT(student_id) DO UPDATE SET "
                    + ", ".join(f"{c} = excluded.{c}" for c in cols[1:]),
                    values,
                )
        return len(rows)

    def has_roster(self) -> bool:
        """True when any student is on the roster (then only they may sign in)."""
        return bool(self.read("SELECT 1 FROM students LIMIT 1"))

    def on_roster(self, student_id: str) -> bool:
        """True when ``student_id`` is on the roster."""
        return bool(self.read("SELECT 1 FROM students WHERE student_id = ?", (student_id,)))

    def roster(self) -> list[dict[str, str]]:
        """Every student of the roster plus every student with an attempt, sorted by id."""
        cols = ("student_id", "name", "section", "sis_user_id", "sis_login_id", "canvas_id", "email")
        rows = {r[0]: dict(zip(cols, r)) for r in self.read(f"SELECT {', '.join(cols)} FROM students")}
        for (sid,) in self.read("SELECT DISTINCT student_id FROM stop_attempts"):
            rows.setdefault(sid, {c: "" for c in cols} | {"student_id": sid})
        return [rows[k] for k in sorted(rows)]

    # ------------------------------------------------------------------ attempts

    def attempts(self, student_id: str, stop: int | None = None) -> list[StopAttempt]:
        """A student's stop attempts, oldest first (optionally of one stop)."""
        sql = "SELECT * FROM stop_attempts WHERE student_id = ?"
        args: tuple = (student_id,)
        if stop is not None:
            sql += " AND stop = ?"
            args += (stop,)
        return [_attempt(r) for r in self.read(sql + " ORDER BY stop, attempt", args)]

    def all_attempts(self) -> list[StopAttempt]:
        """Every stop attempt of every student."""
        return [_attempt(r) for r in self.read("SELECT * FROM stop_attempts ORDER BY student_id, stop, attempt")]

    def start_attempt(self, student_id: str, stop: int, order_for, now: float | None = None, may_start=None) -> StopAttempt:
        """The open attempt of (student, stop), or a new one numbered last + 1.

        ``order_for(attempt) -> list[question id]`` gives a new attempt's order;
        ``may_start(previous attempts) -> str | None`` (the attempt policy) may
        refuse with a reason, raised as :class:`Conflict`. Idempotent: two
        concurrent starts yield one attempt.
        """
        now = time.time() if now is None else now
        with self.transaction() as db:
            rows = [_attempt(r) for r in db.execute(
                "SELECT * FROM stop_attempts WHERE student_id = ? AND stop = ? ORDER BY attempt", (student_id, stop))]
            if rows and rows[-1].is_open:
                return rows[-1]
            if may_start is not None:
                reason = may_start(rows, now)
                if reason:
                    raise Conflict(reason)
            number = (rows[-1].attempt if rows else 0) + 1
            order = list(order_for(number))
            db.execute("INSERT INTO stop_attempts VALUES (?, ?, ?, ?, ?, NULL, NULL, NULL)",
                       (student_id, stop, number, json.dumps(order), now))
            return StopAttempt(student_id, stop, number, tuple(order), now, None, None, None)

    def answers(self, student_id: str, stop: int, attempt: int) -> dict[str, StoredAnswer]:
        """Question id → stored answer, for one attempt."""
        rows = self.read(
            "SELECT question_id, position, response, correct, answered_at FROM answers "
            "WHERE student_id = ? AND stop = ? AND attempt = ? ORDER BY position", (student_id, stop, attempt))
        return {q: StoredAnswer(q, p, json.loads(r), bool(c), t) for q, p, r, c, t in rows}

    def record_answer(self, student_id: str, stop: int, attempt: int, question_id: str,
                      response: Any, correct: bool, now: float | None = None, passes=None) -> StopAttempt:
        """Store one answer (one transaction) and close the attempt after its last question.

        ``passes(order, {question id: correct}) -> bool`` decides whether the
        closed attempt passes the stop (default: every answer right; the mastery
        policy also requires every question to be one not seen before).

        Returns:
            The attempt as it stands after this answer.

        Raises:
            Conflict: the attempt is not this student's open attempt of ``stop``,
                the question is not the attempt's next one, or it is already answered.
        """
        now = time.time() if now is None else now
        with self.transaction() as db:
            row = db.execute("SELECT * FROM stop_attempts WHERE student_id = ? AND stop = ? AND attempt = ?",
                             (student_id, stop, attempt)).fetchone()
            if row is None:
                raise Conflict(f"attempt {attempt} of stop {stop} does not exist for you; reload the stop's page")
            current = _attempt(row)
            if not current.is_open:
                raise Conflict(f"attempt {attempt} of stop {stop} is already over; your answers to it stand")
            done = {q for (q,) in db.execute(
                "SELECT question_id FROM answers WHERE student_id = ? AND stop = ? AND attempt = ?",
                (student_id, stop, attempt))}
            if question_id in done:
                raise Conflict(f"question {question_id} is already answered in attempt {attempt}; your first answer stands")
            pending = [q for q in current.question_order if q not in done]
            if question_id not in current.question_order:
                raise Conflict(f"question {question_id!r} is not in your attempt {attempt} of stop {stop}")
            if pending[0] != question_id:
                raise Conflict(f"question {question_id} is not the next question of attempt {attempt}; reload the stop's page")
            position = current.question_order.index(question_id) + 1
            db.execute("INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (student_id, stop, attempt, question_id, position, json.dumps(response), int(correct), now))
            if len(pending) > 1:
                return current
            (n_correct,) = db.execute(
                "SELECT SUM(correct) FROM answers WHERE student_id = ? AND stop = ? AND attempt = ?",
                (student_id, stop, attempt)).fetchone()
            if passes is None:
                passed = n_correct == len(current.question_order)
            else:
                marks = {q: bool(c) for q, c in db.execute(
                    "SELECT question_id, correct FROM answers WHERE student_id = ? AND stop = ? AND attempt = ?",
                    (student_id, stop, attempt))}
                passed = bool(passes(current.question_order, marks))
            db.execute("UPDATE stop_attempts SET finished_at = ?, n_correct = ?, passed = ? "
                       "WHERE student_id = ? AND stop = ? AND attempt = ?",
                       (now, n_correct, int(passed), student_id, stop, attempt))
            if passed:
                db.execute("INSERT OR IGNORE INTO completions VALUES (?, ?, ?, ?)", (student_id, stop, attempt, now))
            return StopAttempt(student_id, stop, attempt, current.question_order, current.started_at, now,
                               n_correct, passed)

    def revoke(self, student_id: str, now: float | None = None) -> None:
        """Refuse every token of ``student_id`` issued until ``now`` (a new token issued later works)."""
        now = time.time() if now is None else now
        with self.transaction() as db:
            db.execute("INSERT INTO revocations VALUES (?, ?) ON CONFLICT(student_id) DO UPDATE SET "
                       "not_before = excluded.not_before", (student_id, now))

    def revoked_before(self, student_id: str) -> float | None:
        """The time before which this id's tokens are revoked (None when never revoked)."""
        rows = self.read("SELECT not_before FROM revocations WHERE student_id = ?", (student_id,))
        return rows[0][0] if rows else None

    def completed_stops(self, student_id: str) -> set[int]:
        """Stops the student has passed at 100%."""
        return {s for (s,) in self.read("SELECT stop FROM completions WHERE student_id = ?", (student_id,))}

    def all_answers(self) -> list[tuple[str, int, int, str, Any, bool]]:
        """(student, stop, attempt, question id, response, correct) for every stored answer."""
        rows = self.read("SELECT student_id, stop, attempt, question_id, response, correct FROM answers "
                         "ORDER BY student_id, stop, attempt, position")
        return [(s, st, a, q, json.loads(r), bool(c)) for s, st, a, q, r, c in rows]

    def count_answers(self) -> int:
        """How many answers are stored (tests and benchmarks)."""
        return self.read("SELECT COUNT(*) FROM answers")[0][0]

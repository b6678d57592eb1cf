"""The quiz server's store: roster, stop attempts, answers, completions, on SQLite or PostgreSQL.

Every answer is one write transaction that checks the attempt is still open
and the question is the next one of the attempt, inserts the answer and, when
it was the attempt's last, closes the attempt (and records the stop's
completion when every answer was right) — all before the reply is sent. On
SQLite the transaction is ``BEGIN IMMEDIATE`` (writers serialised across
threads and processes) in WAL with ``synchronous=FULL``; on PostgreSQL it
locks the attempt's row (``SELECT … FOR UPDATE``) first, so two processes
answering the same attempt take turns. Either way a committed answer
survives the server process being killed (and a power cut). The primary keys
make an answer or an attempt impossible to store twice: a replayed request
after a crash finds its row and is told so, nothing is double-counted; two
concurrent starts of an attempt insert the same key, one of them fails and is
retried, finding the other's open attempt.

Every rule that decides what may be stored (the attempt policy, the single
answer per question, the cooldown, token revocation) reads the database
inside the transaction, never a process's memory, so it holds with several
server processes (``--workers N``) behind one database. The engine, its
settings and the migrations are ``quiz_bank.instructor.server.database``; the tables
``quiz_bank.instructor.server.schema``.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from sqlalchemy import Connection, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from lms.engine import WRITE, engine_for
from quiz_bank.instructor.server import database
from quiz_bank.instructor.server.schema import completions as C
from quiz_bank.instructor.server.schema import revocations as R
from quiz_bank.instructor.server.schema import stop_attempts as S
from quiz_bank.instructor.server.schema import students as ST

SCHEMA_VERSION = 1  # meta.schema_version of the tables (Alembic revisions: quiz_bank/instructor/server/migrations)
ROSTER_COLUMNS = ("student_id", "name", "section", "sis_user_id", "sis_login_id", "canvas_id", "email")
_START_RETRIES = 20
_ATTEMPT_COLUMNS = "student_id, stop, attempt, question_order, started_at, finished_at, n_correct, passed"


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


def answer_refusal(current: "StopAttempt", answered: set[str], question_id: str) -> str | None:
    """Why an answer to ``question_id`` cannot be recorded in ``current`` (None when it can): the attempt is over,
    the question is not in it, already answered, or not its next one.

    The one rule of :meth:`QuizDB.record_answer` (inside its transaction) and of the quiz service, which asks it
    before checking an answer, so that an answer that cannot count never costs the shared checker anything.
    """
    attempt, stop = current.attempt, current.stop
    if not current.is_open:
        return f"attempt {attempt} of stop {stop} is already over; your answers to it stand"
    if question_id in answered:
        return f"question {question_id} is already answered in attempt {attempt}; your first answer stands"
    if question_id not in current.question_order:
        return f"question {question_id!r} is not in your attempt {attempt} of stop {stop}"
    pending = [q for q in current.question_order if q not in answered]
    if pending[0] != question_id:
        return f"question {question_id} is not the next question of attempt {attempt}; reload the stop's page"
    return None


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


def _key(student_id: str, stop: int, attempt: int | None = None):
    where = [S.c.student_id == student_id, S.c.stop == stop]
    return where + ([S.c.attempt == attempt] if attempt is not None else [])


class QuizDB:
    """The server's database (see the module docstring).

    Args:
        target: an SQLite file (created with its folder when missing) or a ``postgresql://`` URL.
        migrate: bring the schema to the newest revision first (default; cheap when it is there).
        pool_size: connections kept open per process.
        durable: False only for throw-away benchmark stores (no flush per commit; ``engine_for``).

    Raises:
        sqlalchemy.exc.DatabaseError: if ``target`` exists but is not a database.
        ValueError: a URL of a database other than PostgreSQL.
    """

    def __init__(self, target: Path | str, *, migrate: bool = True, pool_size: int = 8, durable: bool = True) -> None:
        self.target = target
        self.engine = engine_for(target, pool_size=pool_size, durable=durable)
        self.dialect = self.engine.dialect.name
        if migrate:
            database.migrate(self.engine)

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One write transaction: committed on exit, rolled back on any exception."""
        with self.engine.connect().execution_options(**WRITE) as conn:
            with conn.begin():
                yield conn

    def read(self, sql: str, args: tuple = ()) -> list[tuple]:
        """Run one read-only query (standard SQL, ``?`` placeholders) and return its rows.

        The hot path of every page: the query goes straight to a pooled DBAPI connection
        (``engine.raw_connection()``), with no statement compilation, in autocommit (SQLite:
        no BEGIN; PostgreSQL: autocommit while it reads), so a read never holds a transaction open.
        """
        pg = self.dialect == "postgresql"
        raw = self.engine.raw_connection()
        try:
            if pg:  # one round trip: no BEGIN, and nothing for the pool's rollback to send back
                raw.driver_connection.autocommit = True
            cursor = raw.cursor()
            cursor.execute(sql.replace("?", "%s") if pg else sql, args)
            rows = [tuple(r) for r in cursor.fetchall()]
            cursor.close()
            return rows
        finally:
            if pg and not raw.driver_connection.closed:
                raw.driver_connection.autocommit = False
            raw.close()

    def _sql(self, db: Connection, sql: str, args: tuple):
        """One statement of the answer's hot path as driver SQL (``?`` placeholders, no compilation)."""
        return db.exec_driver_sql(sql.replace("?", "%s") if self.dialect == "postgresql" else sql, args)

    def _insert(self, table):
        return (postgresql.insert if self.dialect == "postgresql" else sqlite.insert)(table)

    # ------------------------------------------------------------------ roster

    def load_roster(self, rows: list[dict[str, str]]) -> int:
        """Insert or update the roster's students; returns how many rows were given."""
        values = [{c: row.get(c, "") or "" for c in ROSTER_COLUMNS} for row in rows]
        if values:
            stmt = self._insert(ST)
            stmt = stmt.on_conflict_do_update(index_elements=["student_id"],
                                              set_={c: stmt.excluded[c] for c in ROSTER_COLUMNS[1:]})
            with self.transaction() as db:
                db.execute(stmt, values)
        return len(rows)

    def prune_roster(self, keep: list[dict[str, str]]) -> list[str]:
        """Remove from the roster every student not in ``keep`` (the course's roster as it is now).

        A student taken off the roster CSV must lose access at the next start: the server checks the roster on
        every request, and :meth:`load_roster` only adds or updates. Their attempts, answers and completions
        stay (the gradebook still lists them). Returns the removed ids, sorted.
        """
        wanted = {row.get("student_id", "") for row in keep}
        stored = {sid for (sid,) in self.read("SELECT student_id FROM students")}
        gone = sorted(stored - wanted)
        if gone:
            with self.transaction() as db:
                db.execute(ST.delete().where(ST.c.student_id.in_(gone)))
        return gone

    def has_roster(self) -> bool:
        """True when any student is on the roster (then only they may sign in)."""
        return bool(self.read("SELECT 1 FROM students LIMIT 1"))

    def on_roster(self, student_id: str) -> bool:
        """True when ``student_id`` is on the roster."""
        return bool(self.read("SELECT 1 FROM students WHERE student_id = ?", (student_id,)))

    def may_sign_in(self, student_id: str) -> bool:
        """``not has_roster() or on_roster(student_id)`` in one query (every page asks: one round trip, not two)."""
        rows = self.read("SELECT CASE WHEN EXISTS (SELECT 1 FROM students WHERE student_id = ?) THEN 1"
                         " WHEN EXISTS (SELECT 1 FROM students) THEN 0 ELSE 1 END", (student_id,))
        return bool(rows[0][0])

    def roster(self) -> list[dict[str, str]]:
        """Every student of the roster plus every student with an attempt, sorted by id."""
        rows = {r[0]: dict(zip(ROSTER_COLUMNS, r)) for r in self.read(f"SELECT {', '.join(ROSTER_COLUMNS)} FROM students")}
        for (sid,) in self.read("SELECT DISTINCT student_id FROM stop_attempts"):
            rows.setdefault(sid, {c: "" for c in ROSTER_COLUMNS} | {"student_id": sid})
        return [rows[k] for k in sorted(rows)]

    # ------------------------------------------------------------------ attempts

    def attempts(self, student_id: str, stop: int | None = None) -> list[StopAttempt]:
        """A student's stop attempts, oldest first (optionally of one stop)."""
        sql, args = f"SELECT {_ATTEMPT_COLUMNS} FROM stop_attempts WHERE student_id = ?", (student_id,)
        if stop is not None:
            sql, args = sql + " AND stop = ?", args + (stop,)
        return [_attempt(r) for r in self.read(sql + " ORDER BY stop, attempt", args)]

    def all_attempts(self) -> list[StopAttempt]:
        """Every stop attempt of every student."""
        return [_attempt(r) for r in self.read(f"SELECT {_ATTEMPT_COLUMNS} FROM stop_attempts "
                                               "ORDER BY student_id, stop, attempt")]

    def start_attempt(self, student_id: str, stop: int, order_for, now: float | None = None, may_start=None) -> StopAttempt:
        """The open attempt of (student, stop), or a new one numbered last + 1.

        ``order_for(attempt) -> list[question id]`` gives a new attempt's order;
        ``may_start(previous attempts, now) -> str | None`` (the attempt policy) may
        refuse with a reason, raised as :class:`Conflict`. Idempotent: two
        concurrent starts (threads or processes) yield one attempt — the
        primary key refuses the second insert, which is retried and finds the first.
        """
        now = time.time() if now is None else now
        for _ in range(_START_RETRIES):
            try:
                return self._start_once(student_id, stop, order_for, now, may_start)
            except IntegrityError:
                continue  # another process inserted this attempt number first: look again
        raise Conflict(f"stop {stop} is being started elsewhere at this moment; reload the stop's page")

    def _start_once(self, student_id, stop, order_for, now, may_start) -> StopAttempt:
        with self.transaction() as db:
            rows = [_attempt(r) for r in db.execute(select(S).where(*_key(student_id, stop)).order_by(S.c.attempt))]
            if rows and rows[-1].is_open:
                return rows[-1]
            if may_start is not None:
                reason = may_start(rows, now)
                if reason:
                    raise Conflict(reason)
            number = (rows[-1].attempt if rows else 0) + 1
            order = list(order_for(number))
            db.execute(S.insert().values(student_id=student_id, stop=stop, attempt=number,
                                         question_order=json.dumps(order), started_at=now))
            return StopAttempt(student_id, stop, number, tuple(order), now, None, None, None)

    def answers(self, student_id: str, stop: int, attempt: int) -> dict[str, StoredAnswer]:
        """Question id → stored answer, for one attempt."""
        rows = self.read("SELECT question_id, position, response, correct, answered_at FROM answers "
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
        try:
            with self.transaction() as db:
                return self._record(db, student_id, stop, attempt, question_id, response, correct, now, passes)
        except IntegrityError:  # a twin of this answer committed between our check and our insert
            raise Conflict(f"question {question_id} is already answered in attempt {attempt}; "
                           "your first answer stands") from None

    def _record(self, db: Connection, student_id, stop, attempt, question_id, response, correct, now, passes):
        lock = " FOR UPDATE" if self.dialect == "postgresql" else ""  # SQLite: BEGIN IMMEDIATE already holds the lock
        row = self._sql(db, f"SELECT {_ATTEMPT_COLUMNS} FROM stop_attempts WHERE student_id = ? AND stop = ? "
                            f"AND attempt = ?{lock}", (student_id, stop, attempt)).first()
        if row is None:
            raise Conflict(f"attempt {attempt} of stop {stop} does not exist for you; reload the stop's page")
        current = _attempt(row)
        marks = {q: bool(c) for q, c in self._sql(
            db, "SELECT question_id, correct FROM answers WHERE student_id = ? AND stop = ? AND attempt = ?",
            (student_id, stop, attempt))}
        refusal = answer_refusal(current, set(marks), question_id)
        if refusal:
            raise Conflict(refusal)
        pending = [q for q in current.question_order if q not in marks]
        self._sql(db, "INSERT INTO answers (student_id, stop, attempt, question_id, position, response, correct, "
                      "answered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                  (student_id, stop, attempt, question_id, current.question_order.index(question_id) + 1,
                   json.dumps(response), int(correct), now))
        if len(pending) > 1:
            return current
        marks[question_id] = bool(correct)
        n_correct = sum(marks.values())
        passed = (n_correct == len(current.question_order)) if passes is None else bool(passes(current.question_order, marks))
        db.execute(S.update().where(*_key(student_id, stop, attempt))
                   .values(finished_at=now, n_correct=n_correct, passed=int(passed)))
        if passed:
            db.execute(self._insert(C).values(student_id=student_id, stop=stop, attempt=attempt, completed_at=now)
                       .on_conflict_do_nothing(index_elements=["student_id", "stop"]))
        return StopAttempt(student_id, stop, attempt, current.question_order, current.started_at, now,
                           n_correct, passed)

    def revoke(self, student_id: str, now: float | None = None) -> None:
        """Refuse every token of ``student_id`` issued until ``now`` (a new token issued later works)."""
        now = time.time() if now is None else now
        stmt = self._insert(R).values(student_id=student_id, not_before=now)
        with self.transaction() as db:
            db.execute(stmt.on_conflict_do_update(index_elements=["student_id"],
                                                  set_={"not_before": stmt.excluded.not_before}))

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

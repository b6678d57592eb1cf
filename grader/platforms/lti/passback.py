"""Grade passback with a record: every score the tool posts, posted once, retried, never lost.

A row per (platform, client, line item, user) in SQLite holds the last score the
platform acknowledged. :meth:`Passback.post` skips a score the platform already
has (idempotent: a rerun of ``post-grades`` or a student reopening a completed stop
posts nothing new), retries a retryable failure (5xx, 429, network) with
exponential back-off, and leaves a failed row ``pending`` with its error:
``ppo-course lti retry`` lists them, and the next ``post-grades`` run (or, for a
quiz score, the student's next answer) posts them again (AGS 2.0 §3.4: the
platform keeps the latest score by timestamp, so a retry is safe).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.platforms.lti.services import PlatformServices, ServiceError


@dataclass(frozen=True)
class PostOutcome:
    """What happened to one score: ``posted``, ``unchanged`` (already there) or ``pending`` (failed; error says why)."""

    user_id: str
    status: str
    attempts: int
    error: str = ""


class Passback:
    """The record of posted scores in ``path`` (SQLite, safe across processes).

    Args:
        path: the SQLite file (created when missing).
        retries: tries per score for a retryable failure.
        sleep: the back-off's sleep (tests pass a stub).
    """

    def __init__(self, path: Path | str, *, retries: int = 4, sleep: Callable[[float], None] = time.sleep) -> None:
        self.path, self.retries, self.sleep = str(path), retries, sleep
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS lti_score (issuer TEXT, client_id TEXT, lineitem TEXT, user_id TEXT,"
                       " score REAL, maximum REAL, status TEXT, attempts INTEGER, error TEXT, updated REAL,"
                       " PRIMARY KEY (issuer, client_id, lineitem, user_id))")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        return db

    def post(self, services: PlatformServices, lineitem_url: str, user_id: str, score: float, maximum: float,
             comment: str = "") -> PostOutcome:
        """Post ``score``/``maximum`` for ``user_id`` unless the platform already acknowledged exactly that.

        Raises:
            ValueError: if the score is outside [0, maximum] (nothing is posted or recorded).
        """
        if not 0 <= score <= maximum:
            raise ValueError(f"score {score} outside [0, {maximum}] for user {user_id}")
        key = (services.platform.issuer, services.platform.client_id, lineitem_url, user_id)
        with self._connect() as db:
            row = db.execute("SELECT score, maximum, status FROM lti_score WHERE issuer=? AND client_id=? AND"
                             " lineitem=? AND user_id=?", key).fetchone()
        if row is not None and row[2] == "posted" and row[0] == score and row[1] == maximum:
            return PostOutcome(user_id, "unchanged", 0)
        attempts, error = 0, ""
        while attempts < self.retries:
            attempts += 1
            try:
                services.post_score(lineitem_url, user_id, score, maximum, comment=comment)
                self._record(key, score, maximum, "posted", attempts, "")
                return PostOutcome(user_id, "posted", attempts)
            except ServiceError as exc:
                error = str(exc)
                if not exc.retryable:
                    break
                self.sleep(min(30.0, 0.5 * 2 ** (attempts - 1)))
        self._record(key, score, maximum, "pending", attempts, error)
        return PostOutcome(user_id, "pending", attempts, error)

    def pending(self) -> list[tuple[str, str, str, str, float, float, str]]:
        """Rows not yet acknowledged: (issuer, client_id, lineitem, user_id, score, maximum, error)."""
        with self._connect() as db:
            return db.execute("SELECT issuer, client_id, lineitem, user_id, score, maximum, error FROM lti_score"
                              " WHERE status = 'pending' ORDER BY issuer, lineitem, user_id").fetchall()

    def posted_score(self, issuer: str, client_id: str, lineitem_url: str, user_id: str) -> float | None:
        """The score the platform acknowledged for this user and line item, or None."""
        with self._connect() as db:
            row = db.execute("SELECT score FROM lti_score WHERE issuer=? AND client_id=? AND lineitem=? AND"
                             " user_id=? AND status='posted'", (issuer, client_id, lineitem_url, user_id)).fetchone()
        return None if row is None else row[0]

    def _record(self, key: tuple, score: float, maximum: float, status: str, attempts: int, error: str) -> None:
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO lti_score VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (*key, score, maximum, status, attempts, error[:500], time.time()))

"""Grade passback with a record: every score the tool posts, posted once, retried, never lost.

A row per (platform, client, line item, user) in the quiz store's ``lti_score`` table
(``lms.lti.tables``) holds the last score the
platform acknowledged. :meth:`Passback.post` skips a score the platform already
has (idempotent: a rerun of ``post-grades`` or a student reopening a completed stop
posts nothing new), retries a retryable failure (5xx, 429, network) with
exponential back-off, and leaves a failed row ``pending`` with its error:
``ppo-course lti retry`` lists them, and the next ``post-grades`` run posts them
again (quiz scores take the server's queue instead: ``lms.lti.outbox``) (AGS 2.0 §3.4: the
platform keeps the latest score by timestamp, so a retry is safe).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, select

from lms.lti import tables
from lms.lti.services import PlatformServices, ServiceError


@dataclass(frozen=True)
class PostOutcome:
    """What happened to one score: ``posted``, ``unchanged`` (already there) or ``pending`` (failed; error says why)."""

    user_id: str
    status: str
    attempts: int
    error: str = ""


class Passback:
    """The record of posted scores, in the quiz store (or an SQLite file), safe across processes and machines.

    Args:
        target: the quiz store's engine, or an SQLite file path (created when missing).
        retries: tries per score for a retryable failure.
        sleep: the back-off's sleep (tests pass a stub).
    """

    def __init__(self, target: Engine | Path | str, *, retries: int = 4,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.engine, self.retries, self.sleep = tables.engine_of(target), retries, sleep

    def post(self, services: PlatformServices, lineitem_url: str, user_id: str, score: float, maximum: float,
             comment: str = "") -> PostOutcome:
        """Post ``score``/``maximum`` for ``user_id`` unless the platform already acknowledged exactly that.

        Raises:
            ValueError: if the score is outside [0, maximum] (nothing is posted or recorded).
        """
        if not 0 <= score <= maximum:
            raise ValueError(f"score {score} outside [0, {maximum}] for user {user_id}")
        key = (services.platform.issuer, services.platform.client_id, lineitem_url, user_id)
        t = tables.lti_score
        with self.engine.connect() as conn:
            row = conn.execute(select(t.c.score, t.c.maximum, t.c.status).where(*_key_is(key))).first()
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
        t = tables.lti_score
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.c.issuer, t.c.client_id, t.c.lineitem, t.c.user_id, t.c.score, t.c.maximum,
                                       t.c.error).where(t.c.status == "pending")
                                .order_by(t.c.issuer, t.c.lineitem, t.c.user_id)).all()
        return [tuple(r) for r in rows]

    def posted_score(self, issuer: str, client_id: str, lineitem_url: str, user_id: str) -> float | None:
        """The score the platform acknowledged for this user and line item, or None."""
        t = tables.lti_score
        with self.engine.connect() as conn:
            return conn.execute(select(t.c.score).where(*_key_is((issuer, client_id, lineitem_url, user_id)),
                                                        t.c.status == "posted")).scalar()

    def _record(self, key: tuple, score: float, maximum: float, status: str, attempts: int, error: str) -> None:
        row = dict(zip(_KEY, key), score=score, maximum=maximum, status=status, attempts=attempts, error=error[:500],
                   updated=time.time())
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            tables.upsert(conn, tables.lti_score, row, _KEY)


_KEY = ("issuer", "client_id", "lineitem", "user_id")


def _key_is(key: tuple) -> list:
    return [tables.lti_score.c[name] == value for name, value in zip(_KEY, key)]

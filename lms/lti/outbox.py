"""Grade passback off the request path: a durable queue of scores in the quiz store, drained by a worker.

A student's request only *queues* a score (:meth:`ScoreOutbox.enqueue`: one short write in
the quiz store, table ``lti_outbox``); the server's own :class:`PassbackWorker` (a thread
in each server process) posts what is due to the platform (AGS 2.0 §3.4), so an LMS that
hangs or fails never delays a student. Each score is posted once: a score the platform
already acknowledged (``lti_score``, ``lms.lti.passback``) or already queued is
not queued again, and a worker *claims* a row before posting it (a conditional update),
so two server processes never post the same row at once. A retryable failure (5xx, 429,
network) is tried again after an exponential back-off (``base_delay_s`` · 2^(attempts−1),
at most ``max_delay_s``); a refusal (other 4xx) marks the row ``failed``. The instructor's
page lists the rows (:meth:`ScoreOutbox.rows`). One ``PlatformServices`` per registration
keeps one OAuth token per scope set until it expires (``services.PlatformServices.access_token``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine, delete, select, update

from lms.lti import tables
from lms.lti.services import PlatformServices, ServiceError

_KEY = ("issuer", "client_id", "lineitem", "user_id")


@dataclass(frozen=True)
class QueuedScore:
    """One queued score: where it goes (issuer, client id, line item URL, the platform's user id), the score
    and its maximum (floats, 0 ≤ score ≤ maximum), ``status`` (``pending``/``failed``), ``attempts`` so far,
    ``next_try`` (Unix seconds), the last ``error`` (text, empty when none) and when it was ``queued``."""

    issuer: str
    client_id: str
    lineitem: str
    user_id: str
    score: float
    maximum: float
    status: str
    attempts: int
    next_try: float
    error: str
    queued: float

    @property
    def key(self) -> tuple[str, str, str, str]:
        """(issuer, client_id, lineitem, user_id): the row's primary key."""
        return (self.issuer, self.client_id, self.lineitem, self.user_id)


class ScoreOutbox:
    """The ``lti_outbox`` table of the quiz store (SQLite or PostgreSQL; safe across processes).

    Args:
        engine: the store's engine (its Alembic revision ``0004`` made the table).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def enqueue(self, issuer: str, client_id: str, lineitem: str, user_id: str, score: float,
                maximum: float) -> bool:
        """Queue ``score``/``maximum`` unless the platform already has it or it is already queued; True if queued.

        A different score for the same key replaces the queued one (the platform keeps the latest).

        Raises:
            ValueError: if the score is outside [0, maximum] (nothing is queued).
        """
        if not 0 <= score <= maximum:
            raise ValueError(f"score {score} outside [0, {maximum}] for user {user_id}")
        key, o, s = (issuer, client_id, lineitem, user_id), tables.lti_outbox, tables.lti_score
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            posted = conn.execute(select(s.c.score, s.c.maximum).where(*_key_is(s, key), s.c.status == "posted")).first()
            queued = conn.execute(select(o.c.score, o.c.maximum).where(*_key_is(o, key))).first()
            if queued is None and posted is not None and tuple(posted) == (score, maximum):
                return False
            if queued is not None and tuple(queued) == (score, maximum):
                return False
            now = time.time()
            row = dict(zip(_KEY, key), score=score, maximum=maximum, status="pending", attempts=0, next_try=now,
                       error="", queued=now)
            tables.upsert(conn, o, row, _KEY)
        return True

    def claim_due(self, now: float, lease_s: float, limit: int = 20) -> list[QueuedScore]:
        """The pending rows due at ``now``, each claimed for ``lease_s`` seconds (no other worker takes it meanwhile)."""
        o = tables.lti_outbox
        with self.engine.connect() as conn:
            rows = conn.execute(select(o).where(o.c.status == "pending", o.c.next_try <= now)
                                .order_by(o.c.next_try).limit(limit)).all()
        claimed = []
        for r in rows:
            item = QueuedScore(*r)
            with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
                won = conn.execute(update(o).where(*_key_is(o, item.key), o.c.next_try == item.next_try,
                                                   o.c.status == "pending").values(next_try=now + lease_s)).rowcount
            if won == 1:
                claimed.append(item)
        return claimed

    def settle_posted(self, item: QueuedScore, attempts: int) -> None:
        """Record ``item`` as acknowledged (``lti_score``) and drop it from the queue unless a newer score replaced it."""
        o = tables.lti_outbox
        record = dict(zip(_KEY, item.key), score=item.score, maximum=item.maximum, status="posted",
                      attempts=attempts, error="", updated=time.time())
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            tables.upsert(conn, tables.lti_score, record, _KEY)
            conn.execute(delete(o).where(*_key_is(o, item.key), o.c.score == item.score, o.c.maximum == item.maximum))

    def settle_failed(self, item: QueuedScore, error: str, retry_at: float | None) -> None:
        """Count a failed try of ``item``: tried again at ``retry_at``, or ``failed`` for good when it is None."""
        o = tables.lti_outbox
        values = dict(attempts=item.attempts + 1, error=error[:500],
                      status="pending" if retry_at is not None else "failed", next_try=retry_at or time.time())
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            conn.execute(update(o).where(*_key_is(o, item.key), o.c.score == item.score,
                                         o.c.maximum == item.maximum).values(**values))

    def rows(self) -> list[QueuedScore]:
        """Every queued row (pending and failed), oldest first: what the instructor's page shows."""
        o = tables.lti_outbox
        with self.engine.connect() as conn:
            return [QueuedScore(*r) for r in conn.execute(select(o).order_by(o.c.queued, *(o.c[k] for k in _KEY)))]


class PassbackWorker:
    """Drains a :class:`ScoreOutbox` in a daemon thread of the server process.

    Args:
        outbox: the queue.
        services_for: ``(issuer, client_id) -> PlatformServices | None`` (None: the registration is gone;
            the row is marked failed). Called once per registration; the services object is kept, so its
            token cache lasts (one token per scope set until it expires).
        interval_s: seconds between two looks at the queue when nothing wakes the worker.
        base_delay_s, max_delay_s: the back-off after a retryable failure (seconds).
        lease_s: how long a claimed row is left to this worker (longer than one post, timeouts included).
    """

    def __init__(self, outbox: ScoreOutbox, services_for: Callable[[str, str], PlatformServices | None], *,
                 interval_s: float = 2.0, base_delay_s: float = 2.0, max_delay_s: float = 600.0,
                 lease_s: float = 120.0) -> None:
        self.outbox, self.services_for = outbox, services_for
        self.interval_s, self.base_delay_s, self.max_delay_s, self.lease_s = interval_s, base_delay_s, max_delay_s, lease_s
        self._services: dict[tuple[str, str], PlatformServices | None] = {}
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._lock = threading.Lock()

    def run_once(self, now: float | None = None) -> int:
        """Post every due row once (in this thread); returns how many rows were tried."""
        due = self.outbox.claim_due(time.time() if now is None else now, self.lease_s)
        for item in due:
            self._post(item)
        return len(due)

    def _post(self, item: QueuedScore) -> None:
        key = (item.issuer, item.client_id)
        if key not in self._services:
            self._services[key] = self.services_for(*key)
        services = self._services[key]
        if services is None:
            self.outbox.settle_failed(item, f"no registration for {item.issuer} ({item.client_id})", None)
            return
        try:
            services.post_score(item.lineitem, item.user_id, item.score, item.maximum)
        except ServiceError as exc:
            delay = min(self.max_delay_s, self.base_delay_s * 2 ** item.attempts)
            self.outbox.settle_failed(item, str(exc), time.time() + delay if exc.retryable else None)
            return
        self.outbox.settle_posted(item, item.attempts + 1)

    def wake(self) -> None:
        """Start the thread if this process has none running, and have it look at the queue now."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._stop.clear()
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._loop, name="lti-passback", daemon=True)
                self._thread.start()
        self._wake.set()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread (a post in flight finishes or times out first; its row stays claimed until its lease ends)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._pid == os.getpid():
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.run_once()
            except Exception as exc:  # the store unreachable for a moment: the next look tries again
                print(f"lti passback: {type(exc).__name__}: {exc}", flush=True)
            self._wake.wait(self.interval_s)


def _key_is(table, key: tuple) -> list:
    return [table.c[name] == value for name, value in zip(_KEY, key)]

"""The courses a registration serves: a launch is admitted only from a bound LTI context.

A registration (issuer, client id) may be deployed for a whole institution (an
account-level deployment), so a valid signature, client id and deployment say only
that *some* course of that platform launched the tool. The quiz store belongs to one
course, so the tool binds each registration to the contexts it serves (LTI Core 1.3
§5.4.1, the ``context`` claim: "the context within which the launch occurs"), in the
quiz store's ``lti_context`` table:

- the first launch by staff (an Instructor, TA or content developer of that context,
  by the signed roles claim) of a registration with no bound context binds that
  launch's context; this is one ``INSERT … ON CONFLICT DO NOTHING`` on the unique
  (issuer, client id, slot "first"), so of two instructors of different courses
  launching at once exactly one binds;
- an administrator binds further contexts (``ppo-course lti bind-context``), or
  unbinds one;
- a launch from any other context, or one with no context claim, is refused with a
  reason (:class:`~lms.lti.launch.LaunchError`); a student's launch before
  any binding is refused (an instructor must open the activity first).

Roles in an admitted launch are therefore the person's roles *in this course*, and
the roster match that follows is within it. Each admitted launch also refreshes the
course's AGS line items URL and NRPS memberships URL (AGS 2.0 §3.1, NRPS 2.0 §3.6.1),
so grades can be posted without a URL copied by hand (a launch that changes nothing writes
nothing; ``seen`` is refreshed at most hourly).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import Engine, delete, select, update

from lms.lti import tables
from lms.lti.launch import LaunchData, LaunchError

FIRST = "first"


@dataclass(frozen=True)
class CourseBinding:
    """One bound context: the registration, the course, and its services' endpoints (empty when never sent).

    ``bound`` and ``seen`` are Unix times (s): when it was bound, and its latest admitted launch.
    """

    issuer: str
    client_id: str
    context_id: str
    deployment_id: str
    title: str
    lineitems: str
    memberships: str
    bound_by: str
    bound: float
    seen: float


SEEN_EVERY_S = 3600.0  # ``seen`` is rewritten at most this often when nothing else changed


def _is_current(binding: CourseBinding, launch: LaunchData, now: float) -> bool:
    """True when the binding already holds what ``launch`` says (no write needed on this launch)."""
    return ((not launch.lineitems_url or launch.lineitems_url == binding.lineitems)
            and (not launch.memberships_url or launch.memberships_url == binding.memberships)
            and (not launch.context_title or launch.context_title[:300] == binding.title)
            and launch.deployment_id == binding.deployment_id and now - binding.seen < SEEN_EVERY_S)


class ContextStore:
    """The ``lti_context`` table of the quiz store (or the tool folder's SQLite file).

    Args:
        target: the engine holding the tool's tables (``lms.lti.tables.engine_of``).
    """

    def __init__(self, target) -> None:
        self.engine: Engine = tables.engine_of(target)

    def admit(self, launch: LaunchData) -> CourseBinding:
        """Admit ``launch`` when its context is bound (binding it when it is staff's first); record its endpoints.

        Returns:
            the course's binding, with this launch's endpoints.

        Raises:
            LaunchError: no context claim; a context other than the registration's bound ones; a
                student's launch before any context is bound.
        """
        if not launch.context_id:
            raise LaunchError("this launch names no course (no context claim): the quiz serves only the course "
                              "it is bound to, so it must be opened from inside that course")
        now = time.time()
        binding = self.find(launch.issuer, launch.client_id, launch.context_id)
        if binding is None and launch.is_instructor and not self.bound(launch.issuer, launch.client_id):
            self._insert(launch.issuer, launch.client_id, launch.context_id, FIRST, launch.deployment_id,
                         launch.context_title, f"launch by {launch.user_id}", now)
            binding = self.find(launch.issuer, launch.client_id, launch.context_id)
        if binding is None:
            raise LaunchError(self._refusal(launch))
        if not _is_current(binding, launch, now):
            self._refresh(launch, now)
            binding = self.find(launch.issuer, launch.client_id, launch.context_id) or binding
        return binding

    def _refusal(self, launch: LaunchData) -> str:
        course = f"{launch.context_title!r} (context id {launch.context_id!r})" if launch.context_title else \
            f"context id {launch.context_id!r}"
        if not self.bound(launch.issuer, launch.client_id):
            return (f"this quiz is not linked to a course of this platform yet, so the launch from {course} is "
                    "refused: the course's instructor must open the quiz (or add it) from the course first")
        return (f"this quiz serves another course of this platform; the launch from {course} is refused. If this "
                "course should use it too, an administrator can add it (ppo-course lti bind-context)")

    def bind(self, issuer: str, client_id: str, context_id: str, *, title: str = "", deployment_id: str = "",
             by: str = "administrator") -> bool:
        """Bind ``context_id`` to the registration (an administrator's decision); True when it was not bound yet.

        Raises:
            ValueError: for an empty issuer, client id or context id.
        """
        if not (issuer and client_id and context_id):
            raise ValueError("binding a course needs the issuer, the client id and the context id")
        slot = FIRST if not self.bound(issuer, client_id) else f"context:{context_id}"
        return self._insert(issuer, client_id, context_id, slot, deployment_id, title, by, time.time())

    def unbind(self, issuer: str, client_id: str, context_id: str) -> bool:
        """Remove one binding (its launches are refused from now on); True when one was removed."""
        t = tables.lti_context
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            gone = conn.execute(delete(t).where(t.c.issuer == issuer, t.c.client_id == client_id,
                                                t.c.context_id == context_id).returning(t.c.context_id)).first()
        return gone is not None

    def bound(self, issuer: str, client_id: str) -> bool:
        """True when the registration serves at least one context."""
        t = tables.lti_context
        with self.engine.connect() as conn:
            return conn.execute(select(t.c.context_id).where(t.c.issuer == issuer, t.c.client_id == client_id)
                                .limit(1)).first() is not None

    def find(self, issuer: str, client_id: str, context_id: str) -> CourseBinding | None:
        """The binding of one context, or None when it is not bound."""
        rows = self._select(issuer=issuer, client_id=client_id, context_id=context_id)
        return rows[0] if rows else None

    def all(self) -> list[CourseBinding]:
        """Every binding, by registration then context id."""
        return self._select()

    def _select(self, **where: str) -> list[CourseBinding]:
        t = tables.lti_context
        names = [f.name for f in CourseBinding.__dataclass_fields__.values()]
        with self.engine.connect() as conn:
            rows = conn.execute(select(*(t.c[n] for n in names)).where(*(t.c[k] == v for k, v in where.items()))
                                .order_by(t.c.issuer, t.c.client_id, t.c.context_id)).all()
        return [CourseBinding(*r) for r in rows]

    def _insert(self, issuer: str, client_id: str, context_id: str, slot: str, deployment_id: str, title: str,
                by: str, now: float) -> bool:
        row = {"issuer": issuer, "client_id": client_id, "context_id": context_id, "slot": slot,
               "deployment_id": deployment_id, "title": title[:300], "lineitems": "", "memberships": "",
               "bound_by": by[:300], "bound": now, "seen": now}
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            return tables.insert_or_keep(conn, tables.lti_context, row)

    def _refresh(self, launch: LaunchData, now: float) -> None:
        """Keep the launch's title and service endpoints (only those it carries) and when it was seen."""
        t = tables.lti_context
        values: dict[str, object] = {"seen": now, "deployment_id": launch.deployment_id}
        if launch.context_title:
            values["title"] = launch.context_title[:300]
        if launch.lineitems_url:
            values["lineitems"] = launch.lineitems_url
        if launch.memberships_url:
            values["memberships"] = launch.memberships_url
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            conn.execute(update(t).where(t.c.issuer == launch.issuer, t.c.client_id == launch.client_id,
                                         t.c.context_id == launch.context_id).values(**values))

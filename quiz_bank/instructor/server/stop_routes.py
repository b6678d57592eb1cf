"""The student's stop pages of the quiz server: a stop's page, starting an attempt, answering (Book §5.1–§5.8's stops).

``GET /stop/{n}`` shows the open attempt's next question, or the stop's summary (attempts, verdicts
as the stop's policy allows, what a mastery attempt missed, why a new attempt is refused);
``POST /stop/{n}/start`` opens an attempt; ``POST /stop/{n}/answer`` records one answer and shows its
feedback (then, under LTI, posts the student's progress to the LMS after the response). Everything
is reached through ``request.app.state`` (``service``, ``identity``, ``page``, ``error``), set by
``quiz_bank.instructor.server.app.create_app``.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from quiz_bank.instructor.server.db import Conflict
from quiz_bank.instructor.server.quiz import BadAnswer

router = APIRouter()

_HINTS = {
    "single": "Choose one option.",
    "multi": "Choose every option that applies.",
    "true_false": "True or false?",
    "numeric": "A number: 0.2, 1/5, 2e-1 and 20% all work.",
    "ordering": "Type the letters first to last, e.g. c a b.",
}


def _state(request: Request):
    """(the quiz service, the page renderer, the error page) of the app serving ``request``."""
    state = request.app.state
    return state.service, state.page, state.error


def _stop_or_404(request: Request, n: int):
    if n not in request.app.state.service.bank.stops:
        return request.app.state.error(request, 404, f"there is no stop {n}; the chapter has stops 1–8")
    return None


@router.get("/stop/{n}", response_class=HTMLResponse)
def stop_page(request: Request, n: int):
    """The open attempt's next question, else the stop's summary and what the policy allows next."""
    service, page, _ = _state(request)
    bank = service.bank
    who = request.app.state.identity(request)
    if (missing := _stop_or_404(request, n)) is not None:
        return missing
    current = service.open_attempt(who.student_id, n)
    if current is not None:
        nxt = service.next_question(current)
        if nxt is not None:
            number, variant = nxt
            return page(request, "question.html", me=who, stop=n, title=bank.stops[n].title, attempt=current,
                        number=number, total=len(current.question_order), variant=variant,
                        hint=_HINTS.get(variant.question.type, "An expression in "
                                        + ", ".join(f"{k} ({v})" for k, v in variant.question.symbols.items())
                                        + "; use * and ** (or ^)." if variant.question.type == "symbolic" else ""),
                        message=None, typed="")
    attempts = service.db.attempts(who.student_id, n)
    last = attempts[-1] if attempts else None
    passed = any(a.passed for a in attempts)
    stop_policy = service.policy.for_stop(n)
    missed = (service.missed_claims(who.student_id, n, last.attempt)
              if last and not passed and stop_policy.is_mastery else [])
    return page(request, "stop.html", me=who, stop=n, title=bank.stops[n].title,
                n_questions=service.claims_per_attempt(n), attempts=attempts, last=last,
                passed=passed, verdicts=stop_policy.shows_verdicts, missed=missed, mastery=stop_policy.is_mastery,
                exhausted=[] if passed else service.exhausted_claims(who.student_id, n),
                review=service.review(who.student_id, n, last.attempt) if last else [],
                policy=service.policy.for_stop(n).describe(),
                refusal=service.refusal(who.student_id, n, time.time()))


@router.post("/stop/{n}/start")
def start(request: Request, n: int):
    """Open a new attempt at stop ``n`` (refused, with the reason, while the policy does not allow one)."""
    service, _, error = _state(request)
    who = request.app.state.identity(request)
    if (missing := _stop_or_404(request, n)) is not None:
        return missing
    try:
        service.start(who.student_id, n)
    except Conflict as exc:
        return error(request, 409, f"A new attempt cannot start: {exc}.", back=f"/stop/{n}")
    return RedirectResponse(f"/stop/{n}", status_code=303)


@router.post("/stop/{n}/answer", response_class=HTMLResponse)
async def answer(request: Request, n: int):
    """Record one answer of the student's open attempt and show its feedback (nothing recorded on a refusal)."""
    service, page, error = _state(request)
    bank = service.bank
    who = request.app.state.identity(request)
    if (missing := _stop_or_404(request, n)) is not None:
        return missing
    form = await request.form()
    for_student = str(form.get("student", who.student_id))
    if for_student != who.student_id:
        return error(request, 403, f"This answer form belongs to student {for_student!r}, but you are signed in "
                                   f"as {who.student_id!r}: nothing was recorded. Sign out and in with your own "
                                   "token.", back=f"/stop/{n}")
    try:
        attempt = int(str(form.get("attempt", "")))
    except ValueError:
        return error(request, 400, "The form's attempt number is not a number: nothing was recorded.",
                     back=f"/stop/{n}")
    question_id = str(form.get("question", ""))
    raw = [str(v) for v in form.getlist("answer")]
    raw_answer: str | list[str] = raw if len(raw) != 1 else raw[0]
    try:
        verdict = await _run_sync(service.answer, who.student_id, n, attempt, question_id, raw_answer)
    except Conflict as exc:
        return error(request, 409, f"Not recorded: {exc}.", back=f"/stop/{n}")
    except BadAnswer as exc:
        current = service.open_attempt(who.student_id, n)
        if current is None or current.attempt != attempt or question_id not in current.question_order:
            return error(request, 400, f"Not recorded: {exc}.", back=f"/stop/{n}")
        variant = service.variant(who.student_id, question_id, attempt)
        return page(request, "question.html", 400, me=who, stop=n, title=bank.stops[n].title, attempt=current,
                    number=current.question_order.index(question_id) + 1, total=len(current.question_order),
                    variant=variant, hint=_HINTS.get(variant.question.type, ""),
                    message=f"{exc}. Nothing was recorded; answer again.",
                    typed=raw_answer if isinstance(raw_answer, str) else "")
    response = page(request, "feedback.html", me=who, stop=n, verdict=verdict, title=bank.stops[n].title)
    post_progress = getattr(request.app.state, "post_progress", None)
    if post_progress is not None:  # LTI: a passed stop reaches the LMS's gradebook after this response
        from starlette.background import BackgroundTask

        response.background = BackgroundTask(post_progress, who.student_id)
    return response


async def _run_sync(fn, *args):
    """Run a blocking call (SQLite, the symbolic checker) in the thread pool."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)

"""The instructor's side of the quiz server: the dashboard and the gradebook downloads.

Behind an instructor token (``ppo-course quiz tokens --instructor NAME``); a
student token gets 403 with a message. ``GET /instructor`` shows per-stop
completion, per-question first-try rate and discrimination and the most-missed
distractors (``quiz_bank.instructor.server.stats``), and, for an LTI tool, the LMS courses it serves with
their line items and memberships URLs (``lms.lti.contexts``) and the quiz scores still waiting
for the LMS (``lms.lti.outbox``); ``GET /instructor/gradebook.{csv,canvas,moodle}``
downloads the gradebook in that layout (``quiz_bank.instructor.server.gradebook``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, PlainTextResponse

from quiz_bank.instructor.server import gradebook
from quiz_bank.instructor.server.stats import class_stats

router = APIRouter()


def _instructor(request: Request):
    who = request.app.state.identity(request)
    if not who.is_instructor:
        return who, request.app.state.error(request, 403, "The dashboard needs an instructor token; yours is a student's.")
    return who, None


@router.get("/instructor", response_class=HTMLResponse)
def dashboard(request: Request):
    """The class dashboard."""
    who, refused = _instructor(request)
    if refused is not None:
        return refused
    service = request.app.state.service
    roster_size = len([r for r in service.db.roster() if service.db.on_roster(r["student_id"])])
    data = class_stats(service.bank, service.db, roster_size)
    return request.app.state.page(request, "dashboard.html", me=who, data=data, roster_size=roster_size,
                                  formats=gradebook.FORMATS, lti_courses=request.app.state.lti_courses(),
                                  lti_outbox=request.app.state.lti_outbox())


@router.get("/instructor/gradebook.{fmt}")
def download(request: Request, fmt: str):
    """The gradebook as CSV text in one of the layouts."""
    who, refused = _instructor(request)
    if refused is not None:
        return refused
    if fmt not in gradebook.FORMATS:
        return request.app.state.error(request, 404, f"unknown layout {fmt!r}; choose one of {', '.join(gradebook.FORMATS)}")
    service = request.app.state.service
    text = gradebook.render(service.bank, service.db, fmt)
    return PlainTextResponse(text, media_type="text/csv; charset=utf-8",
                             headers={"content-disposition": f'attachment; filename="quiz_gradebook_{fmt}.csv"'})

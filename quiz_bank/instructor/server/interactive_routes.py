"""Routes of the four interactives: a page each (works without JavaScript) and a JSON API the pages' script calls.

The numbers come from ``quiz_bank.instructor.server.interactives`` (``ppo_reference`` on
the server). Each page has a plain GET form that re-renders it with the
chosen values; with JavaScript on, ``static/interactives.js`` calls
``/api/...`` as a slider moves and updates the page in place.

The interactives run the reference on any parameters, so they could compute
the keyed number of a parametric question. They are
therefore **closed while the signed-in student has an open attempt** at any
stop (403, the page says why and links back to the attempt), and need
sign-in (the API answers 401, a page redirects to the sign-in form).
Instructors are never refused. Between attempts they are open in full.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from quiz_bank.instructor.server import interactives as calc

router = APIRouter()


class Closed(Exception):
    """The interactives are not available to this request (not signed in, or an attempt is open)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def gate(request: Request):
    """The signed-in identity allowed to use the interactives now.

    Raises:
        Closed: 401 when nobody is signed in; 403 while the student has an open attempt.
    """
    who = request.app.state.identity_or_none(request)
    if who is None:
        raise Closed(401, "Sign in first: the interactives are for the course's students.")
    if not who.is_instructor:
        stop = request.app.state.service.has_open_attempt(who.student_id)
        if stop is not None:
            raise Closed(403, f"The interactives are closed while your attempt at stop {stop} is open (they compute "
                              f"the quantities its questions ask for). Finish the attempt, then come back.")
    return who


def _closed(request: Request, exc: Closed, api: bool):
    if api:
        return JSONResponse({"error": str(exc)}, status_code=exc.status)
    if exc.status == 401:
        return RedirectResponse("/", status_code=303)
    return request.app.state.error(request, exc.status, str(exc), back="/")


def _bad(request: Request, exc: Exception, api: bool):
    if api:
        return JSONResponse({"error": str(exc)}, status_code=400)
    return request.app.state.error(request, 400, str(exc), back=request.url.path)


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.replace(",", " ").split()]
    except ValueError:
        raise ValueError(f"{what}: numbers separated by spaces or commas") from None


@router.get("/api/clip")
def api_clip(request: Request, r: float = 1.0, adv: float = 1.0, eps: float = 0.2):
    """One point of the clip explorer (JSON)."""
    try:
        gate(request)
    except Closed as exc:
        return _closed(request, exc, True)
    try:
        point = calc.clip_point(r, adv, eps)
        curve = calc.clip_curve(adv, eps, n=25)
    except ValueError as exc:
        return _bad(request, exc, True)
    # The sweep and the chart follow Â and ε too.
    return point | {"curve": [{"r": p["r"], "objective": p["objective"], "flows": p["flows"]} for p in curve],
                    "chart": calc.clip_chart(curve, point)}


@router.get("/interactive/clip", response_class=HTMLResponse)
def clip_page(request: Request, r: float = 1.1, adv: float = 1.0, eps: float = 0.2):
    """The clip explorer (Book §5.2, eq. 5.1 and 5.9)."""
    try:
        who = gate(request)
    except Closed as exc:
        return _closed(request, exc, False)
    try:
        point = calc.clip_point(r, adv, eps)
        curve = calc.clip_curve(adv, eps, n=25)
    except ValueError as exc:
        return _bad(request, exc, False)
    return request.app.state.page(request, "clip.html", me=who, point=point, curve=curve,
                                  chart=calc.clip_chart(curve, point))


@router.get("/api/buffer")
def api_buffer(request: Request, actions: str = ""):
    """The rollout-buffer lifecycle after a sequence of actions (JSON)."""
    try:
        gate(request)
    except Closed as exc:
        return _closed(request, exc, True)
    try:
        return calc.buffer_lifecycle([a for a in actions.split(",") if a])
    except ValueError as exc:
        return _bad(request, exc, True)


@router.get("/interactive/buffer", response_class=HTMLResponse)
def buffer_page(request: Request, actions: str = "", do: str = ""):
    """Rollout buffer vs replay buffer (Book §5.5.1–5.5.3)."""
    try:
        who = gate(request)
    except Closed as exc:
        return _closed(request, exc, False)
    history = [a for a in actions.split(",") if a] + ([do] if do else [])
    try:
        state = calc.buffer_lifecycle(history)
    except ValueError as exc:
        return _bad(request, exc, False)
    return request.app.state.page(request, "buffer.html", me=who, state=state, history=",".join(history),
                                  actions=calc.ACTIONS, drift=calc.DRIFT_PER_UPDATE)


@router.get("/api/step")
def api_step(request: Request, r_rm: float = 2.0, logp: str = "", ref_logp: str = "", values: str = ""):
    """The one-PPO-step walkthrough (JSON)."""
    try:
        gate(request)
    except Closed as exc:
        return _closed(request, exc, True)
    try:
        return calc.ppo_step_walkthrough(r_rm, _floats(logp, "log π") or None, _floats(ref_logp, "log π_ref") or None,
                                         _floats(values, "V") or None)
    except ValueError as exc:
        return _bad(request, exc, True)


@router.get("/interactive/step", response_class=HTMLResponse)
def step_page(request: Request, r_rm: float = 2.0, logp: str = "", ref_logp: str = "", values: str = ""):
    """One PPO step for a 70B chat model (Book fig. 5.1, p. 146–147)."""
    try:
        who = gate(request)
    except Closed as exc:
        return _closed(request, exc, False)
    try:
        step = calc.ppo_step_walkthrough(r_rm, _floats(logp, "log π") or None, _floats(ref_logp, "log π_ref") or None,
                                         _floats(values, "V") or None)
    except ValueError as exc:
        return _bad(request, exc, False)
    return request.app.state.page(request, "step.html", me=who, step=step)


@router.get("/api/danger")
def api_danger(request: Request, parameter: str = "learning_rate", value: float = 1.5e-6):
    """One dial of the danger board (JSON)."""
    try:
        gate(request)
    except Closed as exc:
        return _closed(request, exc, True)
    try:
        return calc.danger(parameter, value)
    except ValueError as exc:
        return _bad(request, exc, True)


@router.get("/interactive/danger", response_class=HTMLResponse)
def danger_page(request: Request, parameter: str = "learning_rate", value: float = 1.5e-6):
    """The hyper-parameter danger board (Book §5.9)."""
    try:
        who = gate(request)
    except Closed as exc:
        return _closed(request, exc, False)
    try:
        result = calc.danger(parameter, value)
    except ValueError as exc:
        return _bad(request, exc, False)
    return request.app.state.page(request, "danger.html", me=who, result=result, parameters=calc.danger_parameters())


@router.get("/interactive", response_class=HTMLResponse)
def index(request: Request):
    """The four interactives."""
    try:
        who = gate(request)
    except Closed as exc:
        return _closed(request, exc, False)
    return request.app.state.page(request, "interactives.html", me=who)

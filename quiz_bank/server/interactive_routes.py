"""Routes of the four interactives: a page each (works without JavaScript) and a JSON API the pages' script calls.

The numbers come from ``quiz_bank.server.interactives`` (``ppo_reference`` on
the server). Each page has a plain GET form that re-renders it with the
chosen values; with JavaScript on, ``static/interactives.js`` calls
``/api/...`` as a slider moves and updates the page in place. No sign-in is
needed: nothing here touches a key or a student's record.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse

from quiz_bank.server import interactives as calc

router = APIRouter()


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
        return calc.clip_point(r, adv, eps)
    except ValueError as exc:
        return _bad(request, exc, True)


@router.get("/interactive/clip", response_class=HTMLResponse)
def clip_page(request: Request, r: float = 1.1, adv: float = 1.0, eps: float = 0.2):
    """The clip explorer (Book §5.2, eq. 5.1 and 5.9)."""
    try:
        point = calc.clip_point(r, adv, eps)
        curve = calc.clip_curve(adv, eps, n=25)
    except ValueError as exc:
        return _bad(request, exc, False)
    return request.app.state.page(request, "clip.html", me=None, point=point, curve=curve)


@router.get("/api/buffer")
def api_buffer(request: Request, actions: str = ""):
    """The rollout-buffer lifecycle after a sequence of actions (JSON)."""
    try:
        return calc.buffer_lifecycle([a for a in actions.split(",") if a])
    except ValueError as exc:
        return _bad(request, exc, True)


@router.get("/interactive/buffer", response_class=HTMLResponse)
def buffer_page(request: Request, actions: str = "", do: str = ""):
    """Rollout buffer vs replay buffer (Book §5.5.1–5.5.3)."""
    history = [a for a in actions.split(",") if a] + ([do] if do else [])
    try:
        state = calc.buffer_lifecycle(history)
    except ValueError as exc:
        return _bad(request, exc, False)
    return request.app.state.page(request, "buffer.html", me=None, state=state, history=",".join(history),
                                  actions=calc.ACTIONS)


@router.get("/api/step")
def api_step(request: Request, r_rm: float = 2.0, logp: str = "", ref_logp: str = "", values: str = ""):
    """The one-PPO-step walkthrough (JSON)."""
    try:
        return calc.ppo_step_walkthrough(r_rm, _floats(logp, "log π") or None, _floats(ref_logp, "log π_ref") or None,
                                         _floats(values, "V") or None)
    except ValueError as exc:
        return _bad(request, exc, True)


@router.get("/interactive/step", response_class=HTMLResponse)
def step_page(request: Request, r_rm: float = 2.0, logp: str = "", ref_logp: str = "", values: str = ""):
    """One PPO step for a 70B chat model (Book fig. 5.1, p. 146–147)."""
    try:
        step = calc.ppo_step_walkthrough(r_rm, _floats(logp, "log π") or None, _floats(ref_logp, "log π_ref") or None,
                                         _floats(values, "V") or None)
    except ValueError as exc:
        return _bad(request, exc, False)
    return request.app.state.page(request, "step.html", me=None, step=step)


@router.get("/api/danger")
def api_danger(request: Request, parameter: str = "learning_rate", value: float = 1.5e-6):
    """One dial of the danger board (JSON)."""
    try:
        return calc.danger(parameter, value)
    except ValueError as exc:
        return _bad(request, exc, True)


@router.get("/interactive/danger", response_class=HTMLResponse)
def danger_page(request: Request, parameter: str = "learning_rate", value: float = 1.5e-6):
    """The hyper-parameter danger board (Book §5.9)."""
    try:
        result = calc.danger(parameter, value)
    except ValueError as exc:
        return _bad(request, exc, False)
    return request.app.state.page(request, "danger.html", me=None, result=result, parameters=calc.danger_parameters())


@router.get("/interactive", response_class=HTMLResponse)
def index(request: Request):
    """The four interactives."""
    return request.app.state.page(request, "interactives.html", me=None)

"""CPU time of one answer and the next question's page, in process, and where it goes (cProfile).

    python benchmarks/profile_quiz_answer.py                 # CPU-ms per answer+page, then the profile
    python benchmarks/profile_quiz_answer.py --students 40 --top 30 --no-profile

The quiz app (``create_app``) on a fresh SQLite store in a temporary folder, driven
through httpx's ASGI transport in this process's event loop (no network, no server
process; the client's own cost is small and included): ``--students`` students each
start stop 1 (not timed), then each answers its first questions right, as a browser
does: POST the answer, GET the next question's page. The figure is the process's CPU
time (``time.process_time``, so the load of other programs on the machine does not
count, unlike wall time) divided by the answers given, page included. A first
untimed pass warms each process-wide cache, as a server that has run a while has.
The profile (stdlib ``cProfile``, which sees one thread) is of a third pass in which the
calls FastAPI would hand to its thread pool run inline in the event loop's thread, so
the profile holds the whole request; sorted by own time and by cumulative time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import pstats
import re
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_quiz import COOKIE, SECRET, STOP, right_answer  # noqa: E402

from quiz_bank.instructor.server.app import create_app  # noqa: E402
from quiz_bank.instructor.server.auth import TokenSigner  # noqa: E402
from quiz_bank.instructor.server.policy import PolicyFile  # noqa: E402
from quiz_bank.loader import load_bank  # noqa: E402


async def _start(app, students: list[str]) -> dict[str, dict[str, str]]:
    signer = TokenSigner(SECRET.encode())
    cookies = {s: {"Cookie": f"{COOKIE}={signer.issue(s)}"} for s in students}
    async with _client(app) as client:
        for s in students:
            assert (await client.post(f"/stop/{STOP}/start", headers=cookies[s])).status_code == 303
    return cookies


def _client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


async def answer_pass(app, cookies: dict[str, dict[str, str]], k: int) -> int:
    """Each student answers its next ``k`` questions right (POST, then GET the next page).

    Returns:
        (answers given, CPU seconds of the process while giving them).
    """
    service = app.state.service
    given = 0
    forms = {}
    for s in cookies:  # the plan first (the right answers: the test's own work, not the server's)
        current = service.open_attempt(s, STOP)
        forms[s] = [{"student": s, "attempt": str(current.attempt), "question": q,
                     "answer": right_answer(service, s, q, current.attempt)} for q in current.question_order[:k]]
    async with _client(app) as client:
        t0 = time.process_time()
        for s, headers in cookies.items():
            for form in forms[s]:
                reply = await client.post(f"/stop/{STOP}/answer", data=form, headers=headers)
                assert reply.status_code == 200 and "Not recorded" not in reply.text, reply.text[-500:]
                assert (await client.get(f"/stop/{STOP}", headers=headers)).status_code == 200
                given += 1
        cpu = time.process_time() - t0
    return given, cpu


def measure(students: int, k: int, top: int, profile: bool) -> float:
    """CPU-ms per answer+page over a timed pass (after a warm-up pass); prints the profile of a third pass."""
    bank = load_bank()
    with tempfile.TemporaryDirectory() as tmp:
        names = [f"p-{i:03d}" for i in range(3 * students)]
        policy = PolicyFile.model_validate({"default": {"mode": "cooldown", "cooldown_s": 0}})  # as bench_quiz
        app = create_app(bank, Path(tmp) / "quiz.sqlite", SECRET.encode(), policy=policy,
                         roster=[{"student_id": n} for n in names])
        groups = [names[i * students:(i + 1) * students] for i in range(3)]
        asyncio.run(answer_pass(app, asyncio.run(_start(app, groups[0])), k))  # warm-up
        given, cpu = asyncio.run(answer_pass(app, asyncio.run(_start(app, groups[1])), k))
        cpu_ms = 1000 * cpu / given
        print(f"{given} answers+pages: {cpu_ms:.2f} CPU-ms per answer with the next page")
        if profile:
            cookies = asyncio.run(_start(app, groups[2]))
            profiler = cProfile.Profile(time.process_time)  # CPU time: a commit's wait for the disk is not cost
            with _inline_thread_pool():
                profiler.enable()
                given, _ = asyncio.run(answer_pass(app, cookies, k))
                profiler.disable()
            for key, only in (("tottime", ()), ("cumulative", ()), ("cumulative", ("quiz_bank|jinja2|templating|auth",))):
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(*only, top)
                text = re.sub(r"/[^ ]*/site-packages/", "", out.getvalue()).replace(str(Path.cwd()) + "/", "")
                print(f"--- CPU profile of {given} answers+pages, by {key}{' (the server s own code)' if only else ''} ---")
                print(text[text.find("   ncalls"):])
        app.state.service.db.close()
    return cpu_ms


@contextlib.contextmanager
def _inline_thread_pool():
    """Starlette's ``run_in_threadpool`` (via ``anyio.to_thread.run_sync``) runs the call in this thread."""
    import anyio.to_thread

    original = anyio.to_thread.run_sync

    async def inline(func, *args, **_kwargs):
        return func(*args)

    anyio.to_thread.run_sync = inline
    try:
        yield
    finally:
        anyio.to_thread.run_sync = original


def main() -> None:
    """Parse the options and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--answers", type=int, default=4, help="answers per student")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--no-profile", action="store_true")
    args = parser.parse_args()
    measure(args.students, args.answers, args.top, not args.no_profile)


if __name__ == "__main__":
    main()

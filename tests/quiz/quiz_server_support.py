"""Helpers of the quiz-server tests: what a student who knows (or does not know) the answer posts.

The right answer comes from the engine's key (``expected_answer``) for the
variant the server shows, mapped to the labels on the page; a wrong one is
built from it (another option, the opposite truth value, key + 1 + |key|, …).
"""

from __future__ import annotations

import re

from quiz_bank.engine import expected_answer


#: The quiz server tests' roster (the ``quiz_server`` fixture loads it).
ROSTER = [{"student_id": sid, "name": f"Student {sid}", "section": "A", "sis_user_id": f"SIS-{sid}",
           "sis_login_id": f"{sid}@uni.example", "canvas_id": "", "email": f"{sid}@uni.example"}
          for sid in ("ann", "bob", "cat", "dan")]


def form_answer(service, student: str, question_id: str, attempt: int, right: bool = True):
    """The value(s) of the ``answer`` form field: right or wrong for this variant."""
    variant = service.variant(student, question_id, attempt)
    q = variant.question
    key = expected_answer(variant)
    label_of = {option_id: label for label, option_id, _ in variant.choices}
    if q.type == "single":
        if right:
            return label_of[key]
        return next(label for label, option_id, _ in variant.choices if option_id != key)
    if q.type == "multi":
        ids = set(key)
        if not right:
            others = [o for _, o, _ in variant.choices if o not in ids]
            ids = ids | {others[0]} if others else ids - {next(iter(ids))}
        return sorted(label_of[i] for i in ids)
    if q.type == "true_false":
        return "true" if bool(key) == right else "false"
    if q.type == "numeric":
        return repr(float(key)) if right else repr(float(key) + 1.0 + abs(float(key)))
    if q.type == "symbolic":
        return str(key) if right else f"({key}) + 1"
    if q.type == "ordering":
        order = list(key) if right else list(reversed(key))
        return " ".join(label_of[i] for i in order)
    raise AssertionError(q.type)


def current_question(html: str) -> tuple[int, str]:
    """(attempt, question id) of the question page ``html``."""
    attempt = int(re.search(r'name="attempt" value="(\d+)"', html).group(1))
    question = re.search(r'name="question" value="([^"]+)"', html).group(1)
    return attempt, question


def answer_stop(client, service, student: str, stop: int, wrong: set[int] = frozenset()) -> list[str]:
    """Start (or resume) ``stop`` and answer every question; the n-th answers (1-based) in ``wrong`` are wrong.

    Returns:
        The verdict page of each answer.
    """
    response = client.post(f"/stop/{stop}/start")
    assert response.status_code == 200, response.text
    pages = []
    n = 0
    while 'name="question"' in response.text:
        n += 1
        attempt, qid = current_question(response.text)
        value = form_answer(service, student, qid, attempt, right=n not in wrong)
        values = value if isinstance(value, list) else [value]
        data = {"student": student, "attempt": str(attempt), "question": qid, "answer": values}
        verdict = client.post(f"/stop/{stop}/answer", data=data)
        assert verdict.status_code == 200, verdict.text
        pages.append(verdict.text)
        response = client.get(f"/stop/{stop}")
    return pages


# ---------------------------------------------------------------- a real server process

import csv
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

SECRET_TEXT = "0123456789abcdef" * 4  # a fixed test secret (64 characters)
SERVER_SECRET = SECRET_TEXT.encode("ascii")


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_roster(path: Path, student_ids) -> Path:
    """A roster CSV with a student_id column."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student_id", "name", "email"])
        for sid in student_ids:
            writer.writerow([sid, f"Student {sid}", f"{sid}@uni.example"])
    return path


class _PortTaken(Exception):
    """The server could not bind the port ``free_port`` picked (someone took it in between)."""


class ServerProcess:
    """``ppo-course quiz serve`` in a child process on a loopback port (cooldown 0), for crash/load/browser tests.

    ``db``: an SQLite path or a PostgreSQL URL (default ``workdir/quiz.sqlite``); ``workers``: server processes.
    The server runs in its own process group, so :meth:`kill` SIGKILLs uvicorn's supervisor and every worker.
    ``policy``, ``roster`` and ``extra_args`` replace the cooldown-0 policy, the generated roster and add flags.
    """

    def __init__(self, workdir: Path, student_ids, port: int | None = None, db: str | Path | None = None,
                 workers: int = 1, *, policy: str = "default: {mode: cooldown, cooldown_s: 0}\n",
                 roster: Path | None = None, extra_args: tuple[str, ...] = ()) -> None:
        self.workdir = Path(workdir)
        self._port_chosen_here = port is None  # free_port()'s pick: another process may take it before the bind
        self.port = port or free_port()
        self.db = db or self.workdir / "quiz.sqlite"
        self.workers = workers
        self.secret = self.workdir / "quiz.secret"
        if not self.secret.exists():
            self.secret.write_text(SECRET_TEXT + "\n", encoding="ascii")
        self.roster = roster or write_roster(self.workdir / "roster.csv", student_ids)
        self.policy = self.workdir / "policy.yaml"
        self.policy.write_text(policy, encoding="utf-8")
        self.extra_args = tuple(extra_args)  # more `quiz serve` options (--lti DIR --base-url URL ...)
        self.proc: subprocess.Popen | None = None
        self.log = self.workdir / f"server-{self.port}.log"

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 120.0) -> "ServerProcess":
        """Start the server and wait until it answers.

        A port picked by ``free_port`` is free only when picked: another process (an xdist worker's
        outgoing connection takes an ephemeral port too) may hold it by the time the server binds. The
        server then exits saying the address is in use, and is started again on a fresh port (twice at most).
        """
        for attempt in range(3):
            try:
                return self._start_once(timeout_s)
            except _PortTaken:
                if attempt == 2:
                    raise RuntimeError(f"the quiz server found its port taken three times:\n{self.log.read_text()}")
                self.port = free_port()
                self.log = self.workdir / f"server-{self.port}.log"
        raise AssertionError("unreachable")

    def _start_once(self, timeout_s: float) -> "ServerProcess":
        argv = [sys.executable, "-c", "import sys; from ppo_course.cli import main; sys.exit(main())",
                "quiz", "serve", "--host", "127.0.0.1", "--port", str(self.port), "--db", str(self.db),
                "--secret-file", str(self.secret), "--roster", str(self.roster), "--policy", str(self.policy),
                "--workers", str(self.workers), *self.extra_args]
        env = dict(os.environ, OMP_NUM_THREADS="1")
        self._log_fh = open(self.log, "ab")
        self.proc = subprocess.Popen(argv, stdout=self._log_fh, stderr=subprocess.STDOUT, env=env, cwd=self.workdir,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log_fh.close()
                said = self.log.read_text()
                if self._port_chosen_here and ("address already in use" in said.lower() or "errno 98" in said.lower()):
                    raise _PortTaken(self.port)
                raise RuntimeError(f"the quiz server exited with {self.proc.returncode}:\n{said}")
            try:  # an HTTP answer, not only an open socket: with --workers uvicorn's parent listens first
                if httpx.get(self.url + "/login", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"the quiz server did not start within {timeout_s} s:\n{self.log.read_text()}")

    def kill(self) -> None:
        """SIGKILL the server and its workers (a crash: no shutdown handler runs)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)
        if getattr(self, "_log_fh", None):
            self._log_fh.close()
            self._log_fh = None

    def token(self, student_id: str, role: str = "student") -> str:
        """A token signed with this server's secret."""
        from quiz_bank.instructor.server.auth import TokenSigner

        return TokenSigner(SECRET_TEXT.encode()).issue(student_id, role)

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.kill()


def offline_service(bank, secret: bytes | None = SECRET_TEXT.encode()):
    """A QuizService without a database: enough to render variants and build answers.

    ``secret``: the token secret of the server it answers (default: :class:`ServerProcess`'s), whose variants are
    keyed by it (``app.variant_key``); None for the keyless variants of ``quiz take`` and responses files.
    """
    from quiz_bank.instructor.server.app import variant_key
    from quiz_bank.instructor.server.quiz import QuizService

    return QuizService(bank, db=None, policy=None, variant_key=None if secret is None else variant_key(secret))

"""Fixtures of the quiz-bank tests: the bank, answer keys, a symbolic checker, a CLI runner."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
import torch

from quiz_bank.grading import answer_key
from quiz_bank.loader import load_bank

torch.set_num_threads(1)  # two shared cores: keys use tiny tensors anyway


@pytest.fixture(scope="session")
def bank():
    """The installed (instructor) bank, validated."""
    return load_bank()


@pytest.fixture(scope="session")
def checker():
    """One symbolic-equivalence worker for the whole session."""
    from quiz_bank.symbolic import SymbolicChecker

    with SymbolicChecker() as c:
        yield c


@pytest.fixture(scope="session")
def key_of(bank):
    """key_of(student, attempt=1) -> the answer-key dict (cached)."""
    cache: dict = {}

    def make(student: str, attempt: int = 1) -> dict:
        if (student, attempt) not in cache:
            cache[(student, attempt)] = answer_key(bank, student, attempt)
        return cache[(student, attempt)]

    return make


@pytest.fixture
def run_cli(monkeypatch, capsys):
    """run_cli(argv, stdin="") -> (exit code, stdout, stderr) of `ppo-course ...`, in process."""
    from ppo_course.cli import main

    def run(argv: list[str], stdin: str = ""):
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def write_json():
    """write_json(path, data) -> path: write ``data`` as JSON."""

    def write(path: Path, data) -> Path:
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    return write


# ---------------------------------------------------------------- the quiz server

from quiz_server_support import ROSTER  # noqa: E402  (one list, importable by the tests by a unique name)


@pytest.fixture
def quiz_server(tmp_path, bank, checker):
    """quiz_server(cooldown_s=0, **policy) -> (app, sign_in): a fresh app on a temporary database.

    ``sign_in(student_id, role="student") -> TestClient`` signed in with a token from the test secret.
    """
    from fastapi.testclient import TestClient

    from quiz_server_support import SERVER_SECRET

    from quiz_bank.instructor.server.app import create_app
    from quiz_bank.instructor.server.auth import TokenSigner
    from quiz_bank.instructor.server.policy import AttemptPolicy, PolicyFile

    def make(cooldown_s: float = 0.0, **policy):
        app = create_app(bank, tmp_path / "quiz.sqlite", SERVER_SECRET, roster=ROSTER, checker=checker,
                         policy=PolicyFile(default=AttemptPolicy(cooldown_s=cooldown_s, **policy)))
        signer = TokenSigner(SERVER_SECRET)

        def sign_in(student_id: str, role: str = "student") -> TestClient:
            client = TestClient(app)
            response = client.post("/login", data={"token": signer.issue(student_id, role)})
            assert response.status_code == 200, response.text
            return client

        return app, sign_in

    return make


# ---------------------------------------------------------------- the quiz store on PostgreSQL

@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for the session (``quiz_bank.instructor.server.pg_local``): initdb in a temporary folder,
    loopback, a free port; stopped at the end. No binaries: skip, except under CI=true, where it fails."""
    import os

    from quiz_bank.instructor.server.pg_local import LocalPostgres, PostgresUnavailable, find_bindir

    if find_bindir() is None:
        reason = ("no PostgreSQL server binaries found (pg_config --bindir, /usr/lib/postgresql/*/bin, PATH): "
                  "`make postgres` installs them (apt-get install postgresql)")
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI=true needs them", pytrace=False)
        pytest.skip(reason)
    server = LocalPostgres()
    try:
        server.start()
    except PostgresUnavailable as exc:
        pytest.fail(f"PostgreSQL would not start: {exc}", pytrace=False)
    yield server
    server.stop()


@pytest.fixture
def store_target(request, tmp_path):
    """store_target(kind) -> a fresh, empty quiz store: an SQLite path or a new PostgreSQL database's URL."""
    import uuid

    def make(kind: str) -> str:
        if kind == "sqlite":
            return str(tmp_path / f"quiz-{uuid.uuid4().hex[:8]}.sqlite")
        return request.getfixturevalue("postgres").create_database(f"quiz_{uuid.uuid4().hex[:12]}")

    return make

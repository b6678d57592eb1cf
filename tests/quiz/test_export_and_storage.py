"""The key-less public bank, and attempts that survive a crash."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest
import yaml

from quiz_bank import export_public
from quiz_bank.engine import KeysUnavailable, expected_answer, render
from quiz_bank.export import PACKAGE_DIR
from quiz_bank.loader import load_bank
from quiz_bank.storage import AttemptStore


@pytest.fixture(scope="module")
def public_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "quiz_bank"
    export_public(out)
    return out


def _walk_keys(node):
    if isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from _walk_keys(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk_keys(v)


def test_public_bank_has_no_keys_explanations_or_key_code(public_dir, bank):
    assert not (public_dir / "keys.py").exists()
    assert sorted(p.name for p in public_dir.glob("stop*.yaml")) == [f"stop{i}.yaml" for i in range(1, 9)]
    for path in public_dir.glob("stop*.yaml"):
        keys_used = set(_walk_keys(yaml.safe_load(path.read_text())))
        assert not keys_used & {"answer", "explanation"}, path.name
    public_yaml = "".join(p.read_text() for p in public_dir.glob("stop*.yaml"))
    for q in bank.questions():
        # The symbolic keys are distinctive strings ("0" excepted): none may leak into the public text.
        if q.type == "symbolic" and len(q.answer) >= 3:
            assert q.answer not in public_yaml, q.id


def test_public_bank_still_validates_and_renders_every_variant(public_dir, bank, run_cli):
    public = load_bank(public_dir)
    assert [q.id for q in public.questions()] == [q.id for q in bank.questions()]
    for q in public.questions():
        instructor = bank.by_id[q.id]
        public_view, instructor_view = render(q, "alice", 2), render(instructor, "alice", 2)
        assert public_view.prompt == instructor_view.prompt and public_view.choices == instructor_view.choices
    code, out, err = run_cli(["quiz", "validate", "--bank", public_dir])
    assert code == 0, err
    assert "no keys (public bank)" in out


def test_key_less_bank_refuses_to_grade_with_a_clear_message(public_dir, run_cli, tmp_path):
    public = load_bank(public_dir)
    with pytest.raises(KeysUnavailable, match="no answer key"):
        expected_answer(render(public.by_id["stop1.trpo-exact"], "alice", 1))
    code, _, err = run_cli(["quiz", "key", "--student", "a", "--bank", public_dir, "--out", tmp_path / "k.json"])
    assert code == 2 and "no answer key" in err


def test_export_refuses_to_overwrite_the_instructor_bank():
    with pytest.raises(ValueError, match="must not be the instructor bank"):
        export_public(PACKAGE_DIR)


def test_each_answer_is_atomic_and_survives_a_crash_mid_write(tmp_path):
    """A process dies inside the transaction of its 4th answer: 3 answers remain, the 4th is absent."""
    store = tmp_path / "quiz.sqlite3"
    code = f"""
import os
from quiz_bank.storage import AttemptStore
s = AttemptStore({str(store)!r})
for i in range(3):
    s.record("kim", f"stop1.q{{i}}", 1, "a", "correct", completed_stop=None)
db = s._db
db.execute("BEGIN")
db.execute("INSERT INTO attempts VALUES ('kim', 'stop1.q3', 1, '\\"a\\"', 'correct', 'now')")
db.execute("INSERT INTO completions VALUES ('kim', 1, 'now')")
os._exit(9)  # crash before COMMIT
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 9, result.stderr
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with AttemptStore(store) as s:
        assert sorted(a.question_id for a in s.attempts("kim")) == ["stop1.q0", "stop1.q1", "stop1.q2"]
        assert s.completed_stops("kim") == set()
        assert s.next_attempt("kim", "stop1.q3") == 1 and s.next_attempt("kim", "stop1.q0") == 2


def test_store_rejects_recording_the_same_attempt_twice(tmp_path):
    with AttemptStore(tmp_path / "s.sqlite3") as s:
        s.record("lee", "stop1.x", 1, "a", "wrong")
        with pytest.raises(sqlite3.IntegrityError):
            s.record("lee", "stop1.x", 1, "b", "correct", completed_stop=1)
        assert s.completed_stops("lee") == set()  # the completion rolled back with the answer
        assert [a.response for a in s.attempts("lee")] == ["a"]

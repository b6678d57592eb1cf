"""The grader's secret is per course, outside the repository: made, shown, rotated, carried, never in a bundle.

Expected values are stated by hand (modes, which file, "differs"/"equals"); nothing is read back from the
code under test as its own oracle.
"""

from __future__ import annotations

import os
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest

from grader import course_secret
from grader.course_secret import (SECRET_ENV, GraderSecretInvalid, GraderSecretMissing, create_secret, load_secret,
                                  secret_digest)
from grader.hidden import cache, draws

REPO = Path(__file__).resolve().parents[2]
SECRET_A = "a" * 64
SECRET_B = "b" * 64


@pytest.fixture
def course(monkeypatch, tmp_path):
    """``course(text)``: a course secret file holding ``text``, made this process's secret (draws re-read)."""
    def use(text: str | None, name: str = "course") -> Path:
        path = tmp_path / name / "grader_secret"
        if text is not None and not path.exists():
            create_secret(path, text)
        monkeypatch.setenv(SECRET_ENV, str(path))
        _forget()
        return path

    yield use
    monkeypatch.undo()
    _forget()


def _forget() -> None:
    draws.forget_key()
    cache.version_key.cache_clear()
    cache.clear()


def _some_hidden_inputs() -> tuple:
    """A handful of hidden inputs of several kinds: generator seeds, a hand case's number, a hypothesis seed,
    exercise 5's graph probe."""
    from grader.hidden.probes import buffer_graph_plan

    return (draws.draw_seed("ex4.no_bootstrap"), draws.draw_seed("ex5.rollout.7"),
            # 10**6 steps: a fresh random secret (rotate) matches an old draw with odds 1e-6, not 1/41
            draws.draw_float("ex4.whiten_constant.c", -5.0, 5.0, 10**6),
            draws.hypothesis_seed("grader.hidden.test_ex4_gae", "test_gae_matches_reference"), buffer_graph_plan())


# ----------------------------------------------------------------------------- the repository holds none


def test_the_repository_holds_no_secret_file():
    """No tracked file is a grader secret (the committed grader/hidden/grader_secret.txt is gone for good)."""
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    assert tracked, "git ls-files listed nothing: the check would be vacuous"
    secretish = [p for p in tracked if "grader_secret" in Path(p).name or Path(p).suffix in {".secret", ".key", ".pem"}]
    assert secretish == []
    for package in ("grader", "lms", "ppo_course", "ppo_reference", "quiz_bank", "sandbox_child"):
        on_disk = [p for p in (REPO / package).rglob("*grader_secret*")]
        assert on_disk == [], on_disk


def test_git_ignores_a_secret_file_wherever_it_is_put():
    for where in ("grader_secret", "grader/hidden/grader_secret.txt", "course/grader_secret.retired-20260101T000000Z"):
        ignored = subprocess.run(["git", "check-ignore", "-q", where], cwd=REPO)
        assert ignored.returncode == 0, where


# ----------------------------------------------------------------------------- one secret per course


def test_two_courses_with_different_secrets_draw_different_hidden_inputs(course):
    course(SECRET_A, "course-a")
    a = _some_hidden_inputs()
    course(SECRET_B, "course-b")
    b = _some_hidden_inputs()
    assert all(x != y for x, y in zip(a, b)), (a, b)


def test_the_same_secret_draws_the_same_hidden_inputs(course):
    course(SECRET_A, "course-a")
    a = _some_hidden_inputs()
    course(SECRET_A, "the-same-course-on-another-machine")
    assert _some_hidden_inputs() == a
    _forget()
    assert _some_hidden_inputs() == a  # read again: deterministic for one secret


def test_rotate_changes_the_hidden_inputs_and_keeps_the_old_secret_aside(course):
    path = course(SECRET_A)
    before = _some_hidden_inputs()
    where, retired = course_secret.rotate_secret(path)
    _forget()
    after = _some_hidden_inputs()
    assert where == path and all(x != y for x, y in zip(before, after))
    assert retired is not None and retired.read_text().strip() == SECRET_A
    assert stat.S_IMODE(os.stat(retired).st_mode) == 0o600 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert len(path.read_text().strip()) == 64 and path.read_text().strip() != SECRET_A


def test_fingerprint_follows_the_secret_and_never_holds_it(course):
    from grader.fingerprint import grader_fingerprint

    course(SECRET_A, "course-a")
    a = grader_fingerprint()
    course(SECRET_A, "course-a-copy")
    assert grader_fingerprint() == a
    course(SECRET_B, "course-b")
    b = grader_fingerprint()
    assert a != b and SECRET_B not in b and secret_digest(SECRET_B.encode()) != SECRET_B[:16]


# ----------------------------------------------------------------------------- none found: a grader fault


def test_no_secret_is_a_grader_fault_before_anything_is_graded(course, tmp_path):
    from grader.grade import grade_submission
    from grader.environment import environment_problem

    missing = course(None)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ex4_gae.py").write_text("raise SystemExit('must not run')\n")
    with pytest.raises(GraderSecretMissing, match=str(missing)):
        grade_submission(tmp_path / "sub", exercises=["ex4_gae"], profile="fast")
    with pytest.raises(GraderSecretMissing):
        draws.draw_seed("ex4.no_bootstrap")
    assert not missing.exists()  # a grading process never makes one
    problem = environment_problem()
    assert problem is not None and "no grader secret" in problem


def test_a_secret_others_can_read_or_too_short_is_refused(course):
    path = course(SECRET_A)
    os.chmod(path, 0o644)
    with pytest.raises(GraderSecretInvalid, match="chmod 600"):
        load_secret()
    os.chmod(path, 0o600)
    path.write_text("short\n")
    with pytest.raises(GraderSecretInvalid, match="too short"):
        load_secret()


def test_ensure_makes_one_at_first_use_and_then_keeps_it(course):
    path = course(None)
    said = []
    assert course_secret.ensure_secret(say=said.append) == path
    first = path.read_text()
    assert len(first.strip()) == 64 and int(first, 16) >= 0 and said and str(path) in said[0]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    course_secret.ensure_secret(say=said.append)
    assert path.read_text() == first and len(said) == 1


def test_grade_exits_3_when_no_secret_can_be_made(monkeypatch, tmp_path, capsys):
    from ppo_course.cli import main

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(SECRET_ENV, str(blocker / "grader_secret"))
    (tmp_path / "sub").mkdir()
    assert main(["grade", str(tmp_path / "sub"), "--out", str(tmp_path / "r.json")]) == 3
    assert not (tmp_path / "r.json").exists() and "grader secret" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the commands


def test_secret_init_show_rotate(tmp_path, capsys):
    from ppo_course.cli import main

    path = tmp_path / "course" / "grader_secret"
    assert main(["secret", "show", "--secret-file", str(path)]) == 1
    assert main(["secret", "init", "--secret-file", str(path)]) == 0
    value = path.read_text().strip()
    assert len(value) == 64 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    capsys.readouterr()
    assert main(["secret", "show", "--secret-file", str(path)]) == 0
    shown = capsys.readouterr().out
    assert str(path) in shown and value not in shown  # the digest names it, never the secret itself
    assert main(["secret", "show", "--value", "--secret-file", str(path)]) == 0
    assert capsys.readouterr().out.strip() == value
    assert main(["secret", "init", "--secret-file", str(path)]) == 1  # never replaced by init
    assert path.read_text().strip() == value
    assert main(["secret", "rotate", "--secret-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert path.read_text().strip() != value and "treated as public" in out
    assert [p.read_text().strip() for p in path.parent.glob("grader_secret.retired-*")] == [value]


def test_secret_init_from_installs_the_courses_own(tmp_path):
    from ppo_course.cli import main

    source = tmp_path / "from-the-ta"
    source.write_text(SECRET_A + "\n")
    node = tmp_path / "node" / "grader_secret"
    assert main(["secret", "init", "--from", str(source), "--secret-file", str(node)]) == 0
    assert load_secret(node) == SECRET_A.encode() and stat.S_IMODE(os.stat(node).st_mode) == 0o600


# ----------------------------------------------------------------------------- carried where grading runs


def test_workers_are_pointed_at_the_secret_and_the_fork_server_is_not(course):
    from grader.runners import workers
    from grader.sandbox import forkserver_client

    path = course(SECRET_A)
    assert workers.worker_environment(shared_server=False)[SECRET_ENV] == str(path)
    server = forkserver_client._server_env()
    assert SECRET_ENV not in server and str(path) not in str(server) and SECRET_A not in str(server)


def test_gradescope_bundle_carries_the_course_secret_outside_every_package(course, tmp_path):
    from grader.commands.gradescope_bundle import build_bundle

    course(SECRET_A)
    zip_path = build_bundle(tmp_path / "autograder.zip")
    with zipfile.ZipFile(zip_path) as zf:
        names = zf.namelist()
        secretish = [n for n in names if "grader_secret" in n]
        assert secretish == ["grader_secret"]
        assert zf.read("grader_secret").strip() == SECRET_A.encode()
        assert stat.S_IMODE(zf.getinfo("grader_secret").external_attr >> 16) == 0o600
        assert "PPO_COURSE_SECRET_FILE=\"$SECRET\"" in zf.read("run_autograder").decode()
    assert stat.S_IMODE(os.stat(zip_path).st_mode) == 0o600


def test_nbgrader_course_gets_its_secret_once_and_keeps_it(course, tmp_path):
    from grader.platforms.nbgrader_course import course_secret as nbgrader_secret

    course(SECRET_A)
    target = nbgrader_secret(tmp_path / "course")
    assert target == tmp_path / "course" / "grader_secret" and load_secret(target) == SECRET_A.encode()
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    course(SECRET_B, "another")
    nbgrader_secret(tmp_path / "course")  # the course is written again: its secret stays
    assert load_secret(target) == SECRET_A.encode()


def test_the_student_bundle_carries_no_secret(course, tmp_path):
    from grader.platforms.release import build_release

    course(SECRET_A)
    out = tmp_path / "bundle"
    build_release(out)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files, "the bundle is empty: the scan would be vacuous"
    assert [p for p in files if "secret" in p.name.lower()] == []
    assert [p for p in files if SECRET_A.encode() in p.read_bytes()] == []


def test_a_cluster_node_without_the_courses_secret_refuses_to_grade(course):
    from grader.fingerprint import grader_fingerprint
    from grader.runners import cluster_worker

    course(SECRET_A)
    mine, digest_a = grader_fingerprint(), secret_digest(SECRET_A.encode())
    assert cluster_worker.refusal(mine, digest_a) is None
    report = cluster_worker.worker_report()
    assert report["secret"] == digest_a and SECRET_A not in str(report)
    other = cluster_worker.refusal(mine, secret_digest(SECRET_B.encode()))
    assert other is not None and digest_a in other and secret_digest(SECRET_B.encode()) in other
    course(None, "a-node-with-none")
    none = cluster_worker.refusal(mine, digest_a)
    assert none is not None and "no grader secret" in none
    assert cluster_worker.worker_report()["secret"] is None

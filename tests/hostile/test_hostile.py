"""Hostile submissions gain nothing (issue 7 part 3).

Each attack in ``attacks/`` is graded next to its honest twin (the same
wrong code without the attack, ``twins/``); both submissions also hold the
correct module of another exercise. For every attack:

* on every test of the attacked exercise, the hostile score is at most the
  twin's;
* the other exercise scores exactly the same (full marks) in both;
* no test is diagnosed ``grader_error`` (the grader never blames itself for what a child sent);
* nothing changed outside the sandbox: the canary folders (an instructor-side
  folder in the repository, an "other student" beside the submission, a
  grader output folder) are byte-identical, no file in the instructor folders
  or the site-packages carries the attack's marker or sentinel time, nothing
  new appeared in the world-writable folders, and nothing reached a listener
  on 127.0.0.1;
* no process is left: none under our fork server, none with the attack's
  marker in its command line, none of a sandbox uid outside a fork server.

An attack that succeeds is a sandbox bug: fix the sandbox, never this test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hostile_limits import SUITE_LIMITS
from hostile_helpers import (ATTACKS, CANARY, all_attacks, read_attack, scores_by_test, write_hostile_submission,
                             write_other_student)
from hostile_guards import Guards

# One xdist worker runs the whole hostile suite: its guards scan shared places (canaries,
# /run/lock, leftover processes) that the guard self-test and a parallel attack would both touch.
pytestmark = pytest.mark.xdist_group("hostile")

ATTACK_LIST = all_attacks()

#: What the issue asks the suite to cover, and the attacks that do.
REQUIRED = {
    "patching torch.allclose": "a01", "patching torch.testing": "a02", "patching numpy": "a03",
    "patching math.isclose / pytest.approx": "a04", "patching builtins": "a05",
    "importing ppo_reference / grader / solutions": "a06", "searching the disk for solutions": "a07",
    "a lying tensor subclass": "a08", "sys.exit(0) at import": "a09", "os._exit(0) at import": "a10",
    "exit at call": "a11", "a fake results file": "a12", "an infinite loop ignoring SIGTERM": "a13",
    "a memory hog": "a14", "a bounded fork swarm": "a15", "floods of output": "a16",
    "threads running after return": "a17", "a returned object whose unpickling runs code": "a18",
    "writing to the project's files": "a19", "writing to other students' files": "a20",
    "reading environment variables to detect grading": "a22", "recursion bombs": "a23",
    "network attempts (127.0.0.1 only)": "a24",
}


def test_the_suite_covers_the_issue():
    """At least 20 attacks, each documented (what it tries, that it must achieve nothing), covering the list."""
    assert len(ATTACK_LIST) >= 20
    names = {a.name.split("_")[0] for a in ATTACK_LIST}
    missing = [what for what, prefix in REQUIRED.items() if prefix not in names]
    assert not missing, f"no attack covers: {missing}"
    for attack in ATTACK_LIST:
        assert "Tries:" in attack.doc and "Must achieve: nothing" in attack.doc, attack.name
        assert attack.twin.is_file(), f"{attack.name}: twin {attack.twin.name} is missing"


def test_read_attack_refuses_an_undocumented_file(tmp_path):
    """The suite's own parser: an attack without TARGET/TWIN/docstring is an error, not a silent skip."""
    bad = tmp_path / "a99_bad.py"
    bad.write_text("TARGET = 'ex1_ratio'\n")
    with pytest.raises(ValueError, match="docstring, TARGET and TWIN"):
        read_attack(bad)


@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACK_LIST, ids=[a.name for a in ATTACK_LIST])
def test_attack_gains_nothing(attack, tmp_path, twin_results, fork_server):
    from grader.grade import grade_submission

    twin = twin_results(attack)
    cohort = tmp_path / "cohort"
    other_student = write_other_student(cohort / "other_student")
    results_dir = tmp_path / "grader_out"
    results_dir.mkdir()
    guards = Guards([CANARY, other_student, results_dir], fork_server.pid)  # holds the guards' lock, shared
    try:
        hints = guards.hints(other_student=other_student, results_dir=results_dir)
        folder = write_hostile_submission(cohort / "hostile", attack, hints)
        hostile = grade_submission(folder, exercises=[attack.target, attack.other], profile="fast",
                                   limits=SUITE_LIMITS)
        violations = guards.violations()
        leftovers = guards.leftovers()
    finally:
        guards.restore()
        guards.close()

    assert not violations, f"{attack.name} changed things outside its sandbox:\n" + "\n".join(violations)
    assert not leftovers, f"{attack.name} left processes behind:\n" + "\n".join(leftovers)
    assert fork_server.alive(), f"{attack.name} killed the fork server"
    assert hostile.status == "graded", hostile.message

    # A hostile submission never makes the grader blame itself (a batch records grader_error as "crashed: fix
    # the grader"): whatever the child sends is the student's (a99).
    blamed = [t.test for t in hostile.tests if t.diagnosis == "grader_error"]
    assert not blamed, f"{attack.name} made the grader blame itself (grader_error) on: {blamed}"
    got, want = scores_by_test(hostile), scores_by_test(twin)
    assert set(got) == set(want), "the hostile and honest gradings ran different tests"
    gained = {k: (got[k][0], want[k][0]) for k in want if k[0] == attack.target and got[k][0] > want[k][0]}
    assert not gained, f"{attack.name} scored above its honest twin on (test: hostile, twin): {gained}"
    other = {k: (got[k][0], want[k][0], want[k][1]) for k in want if k[0] == attack.other
             and not got[k][0] == want[k][0] == want[k][1]}
    assert not other, f"{attack.name} changed the other exercise's scores (test: hostile, twin, max): {other}"
    assert hostile.exercises[attack.other].score == twin.exercises[attack.other].score


def test_the_guards_see_what_an_attack_would_leave(tmp_path):
    """The checks can fail: a changed canary, a marker file in /run/lock, a sentinel mtime, a connection
    to the listener and a marked process are each reported (done here by the test itself, then undone)."""
    import socket
    import subprocess
    import time

    from hostile_helpers import MARKER, SENTINEL_MTIME
    from hostile_guards import leftover_processes

    other = write_other_student(tmp_path / "cohort" / "other_student")
    # Exclusive: no attack's watch on another xdist worker runs while these deliberate marks exist.
    guards = Guards([CANARY, other], server_pid=None, exclusive=True)
    target = CANARY / "instructor_canary.txt"  # in the scanned folders, and ours to touch
    before = os.stat(target)
    sleeper = subprocess.Popen(["sleep", "30"], env={"PATH": "/usr/bin:/bin", "MARK": MARKER})
    try:
        (other / "ex1_ratio.py").write_text("# changed\n")
        shared = "/run/lock" if os.access("/run/lock", os.W_OK) else "/tmp"
        Path(shared, f"{MARKER}-guard-self-test").write_text("x")
        os.utime(target, (SENTINEL_MTIME, SENTINEL_MTIME))
        socket.create_connection(("127.0.0.1", guards.tcp.getsockname()[1]), timeout=2).close()
        time.sleep(0.1)
        found = "\n".join(guards.violations())
        left = "\n".join(leftover_processes(None))
    finally:
        try:
            guards.restore()
            sleeper.kill()
            sleeper.wait()
            os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
        finally:
            guards.close()  # the lock goes last: every mark is undone before another watch may look
    assert "other_student/ex1_ratio.py changed" in found
    assert "instructor_canary.txt: modification time set to the attack's sentinel" in found
    assert f"{MARKER}-guard-self-test: left in a world-writable folder" in found
    assert "sentinel" in found and "accepted a connection" in found
    assert f"pid {sleeper.pid} " in left
    assert not Path(shared, f"{MARKER}-guard-self-test").exists()  # restore() cleaned up


def test_read_attack_refuses_a_twin_that_does_not_compile(tmp_path, monkeypatch):
    """A twin with a SyntaxError (a88's and a89's had a docstring before `from __future__`) would make the
    attack's comparison vacuous: both score 0 as module_broken. The suite's parser refuses it."""
    import hostile_helpers

    twins = tmp_path / "twins"
    twins.mkdir()
    (twins / "broken.py").write_text('"""one"""\n\n"""two"""\nfrom __future__ import annotations\n')
    attack = tmp_path / "a99_x.py"
    attack.write_text('"""Tries: x. Must achieve: nothing."""\nTARGET = "ex1_ratio"\nTWIN = "broken.py"\n')
    monkeypatch.setattr(hostile_helpers, "TWINS", twins)
    with pytest.raises(ValueError, match="does not compile"):
        read_attack(attack)

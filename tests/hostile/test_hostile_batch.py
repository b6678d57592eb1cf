"""A hostile student inside a real batch: classmates' submissions and staged copies are not readable.

``ppo-course grade-batch`` lays the cohort out side by side (SUBMISSIONS_DIR/<student>)
and stages each one under OUT_DIR/.batch/staging/<student>. The thief
(``attacks/a30_steal_from_cohort.py``) is graded next to a classmate with a
correct module (graded at the same time, --jobs 2) and next to its honest
twin; it must score no more than the twin on any test, and the classmate's
folder must stay untouched. The cohort lives outside /tmp (under /srv, with
the usual 755 folders): /tmp is a private tmpfs in every child anyway, so a
cohort there would prove nothing.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from hostile_helpers import ATTACKS, SOLUTIONS, read_attack
from hostile_guards import Guards

# One xdist worker runs the whole hostile suite: its guards scan shared places (canaries,
# /run/lock, leftover processes) that the guard self-test and a parallel attack would both touch.
pytestmark = pytest.mark.xdist_group("hostile")




def _by_test(results: dict) -> dict[str, float]:
    return {t["name"]: float(t["score"]) for t in results["tests"]}


@pytest.mark.slow
def test_a_thief_in_a_batch_gains_nothing_from_classmates(cohort_root, monkeypatch):
    from grader import batch

    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "pinned")
    attack = read_attack(ATTACKS / "a30_steal_from_cohort.py")
    subs, out = cohort_root / "submissions", cohort_root / "out"
    # Ids in this order so that the pool of 2 grades the thief and the classmate at the same time.
    thief, classmate, honest = subs / "1-mallory", subs / "2-alice", subs / "3-honest"
    for folder in (thief, classmate, honest):
        folder.mkdir(parents=True)
    shutil.copyfile(SOLUTIONS / "ex1_ratio.py", classmate / "ex1_ratio.py")
    shutil.copyfile(attack.twin, honest / "ex1_ratio.py")
    shutil.copyfile(attack.path, thief / "ex1_ratio.py")
    shutil.copyfile(attack.twin, thief / "twin_code.py")
    guards = Guards([classmate], server_pid=None)
    try:
        (thief / "hints.json").write_text(json.dumps(guards.hints(submissions_dir=subs, out_dir=out)))
        for path in subs.rglob("*"):
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        summary = batch.run_batch(subs, out, jobs=2, profile="fast", exercises=["ex1_ratio"], progress=False,
                                  report=False, log=lambda m: None)
        violations = guards.violations()
        leftovers = guards.leftovers()
    finally:
        guards.restore()
        guards.close()
    assert {r.student_id: r.status for r in summary.records} == {"1-mallory": "graded", "2-alice": "graded",
                                                                  "3-honest": "graded"}
    assert not violations, "\n".join(violations)
    assert not leftovers, "\n".join(leftovers)
    got = _by_test(json.loads((out / "1-mallory" / "results.json").read_text()))
    want = _by_test(json.loads((out / "3-honest" / "results.json").read_text()))
    assert set(got) == set(want)
    gained = {name: (got[name], want[name]) for name in want if got[name] > want[name]}
    assert not gained, f"the thief scored above its honest twin (test: thief, twin): {gained}"
    alice = json.loads((out / "2-alice" / "results.json").read_text())
    assert alice["score"] == alice["extra_data"]["max_score"]

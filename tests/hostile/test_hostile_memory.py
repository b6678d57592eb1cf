"""Issue 19, class 2: memory the per-process limits do not count, in a ``--jobs 2`` batch.

``a94`` forks 6 processes of 512 MiB each and fills memfds and tmpfs on its
first ex1 call (~3.3 GiB, each piece under RLIMIT_AS); its honest twin is the
same submission without the swarm (the solution: full marks); a classmate
with the solutions is graded in the same batch, beside it (``jobs=2``).
The memory cgroup holds the swarm to the one budget: the hostile student is
reported out of memory, scores no more than the twin, the twin and the
classmate get full marks, nothing is left behind, and three gradings of the
hostile submission give the same results.
"""

from __future__ import annotations

import csv
import difflib
import json
import os
import shutil
from pathlib import Path

import pytest

from hostile_helpers import CANARY, SOLUTIONS, stable_results
from hostile_guards import Guards
from hostile_limits import SUITE_LIMITS

pytestmark = pytest.mark.xdist_group("hostile")

HERE = Path(__file__).resolve().parent
EXERCISES = ["ex1_ratio", "ex2_clipped_loss"]


def _cohort(subs: Path) -> dict[str, Path]:
    folders = {}
    for sid in ("a-hostile", "b-twin", "c-classmate"):
        folder = subs / sid
        folder.mkdir(parents=True)
        for stem in EXERCISES:
            shutil.copyfile(SOLUTIONS / f"{stem}.py", folder / f"{stem}.py")
        folders[sid] = folder
    # The attack calls twin_code for its answers: the pair differs by the swarm alone.
    shutil.copyfile(HERE / "attacks" / "a94_ex1_memory_swarm.py", folders["a-hostile"] / "ex1_ratio.py")
    shutil.copyfile(SOLUTIONS / "ex1_ratio.py", folders["a-hostile"] / "twin_code.py")
    for path in [subs, *subs.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return folders


@pytest.mark.slow
def test_a89_a_memory_swarm_is_out_of_memory_alone_in_a_jobs_2_batch(cohort_root, monkeypatch, fork_server):
    from grader.batch import run_batch
    from grader.grade import grade_submission

    if not fork_server.probe.get("memory_cgroup"):
        pytest.skip("this machine refuses a memory cgroup: the fallback refuses fork (tests/sandbox/test_memory_budget.py)")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    subs, out = cohort_root / "subs", cohort_root / "out"
    folders = _cohort(subs)
    guards = Guards([CANARY, folders["b-twin"], folders["c-classmate"]], server_pid=None)
    try:
        run_batch(subs, out, jobs=2, profile="fast", exercises=EXERCISES, progress=False, report=False,
                  log=lambda m: None)
        # Production's call time-out (EX1_6_LIMITS, 60 s, as in the batch above), not the suite's 20 s: on a
        # machine loaded 10-fold, filling 2 GiB in six processes can take longer than 20 s, and the
        # diagnosis would then be "timeout" in some reruns and "out_of_memory" in others.
        limits = SUITE_LIMITS.model_copy(update={"call_timeout_s": 60.0})
        reruns = [stable_results(grade_submission(folders["a-hostile"], exercises=EXERCISES, profile="fast",
                                                  limits=limits).to_results_json()) for _ in range(3)]
        violations, leftovers = guards.violations(), guards.leftovers()
    finally:
        guards.restore()
        guards.close()
    assert not violations, violations
    assert not leftovers, leftovers
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    twin, classmate, hostile = rows["b-twin"], rows["c-classmate"], rows["a-hostile"]
    assert twin["status"] == "graded" and twin["total"] == twin["max_total"], twin
    assert classmate["status"] == "graded" and classmate["total"] == classmate["max_total"], classmate
    assert float(hostile["total"]) <= float(twin["total"])
    results = json.loads((out / "a-hostile" / "results.json").read_text(encoding="utf-8"))
    ex1 = [t for t in results["tests"] if "ex1" in json.dumps(t)]
    assert any("out_of_memory" in json.dumps(t) for t in ex1), "the swarm was not reported as out of memory"
    assert float(results["extra_data"]["exercises"]["ex1_ratio"]["score"]) < \
        float(results["extra_data"]["exercises"]["ex1_ratio"]["max_score"])
    ex2 = results["extra_data"]["exercises"]["ex2_clipped_loss"]
    assert ex2["score"] == ex2["max_score"]  # the hostile student's other exercise is its own, unharmed
    assert len(set(reruns)) == 1, "three gradings of the same submission differ:\n" + "\n".join(
        difflib.unified_diff(reruns[0].splitlines(), next(r for r in reruns if r != reruns[0]).splitlines(), lineterm=""))
    assert "out_of_memory" in reruns[0]

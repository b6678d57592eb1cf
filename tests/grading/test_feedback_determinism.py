"""The same submission gets byte-identical results.json and feedback.md on every run (issue 16, part 3).

One wrong submission leans on everything that varies between runs: torch's, numpy's and Python's global
RNGs, the clock, id(), the iteration order of a set of strings (``nondeterministic/``: exercise 2 picks its
reduction with `random`, exercise 5 shuffles with all three global RNGs and orders rows by id() and set
order, exercise 7 samples without the given generator). It is graded three times, each by a fresh
`ppo-course grade` process (a fresh fork server: a fresh Python hash seed, fresh `random`/numpy states),
and nothing but `extra_data.timing` may differ. The child seeds the global RNGs before every call from
the test's own seed (`sandbox_child.worker.seed_globals`) and the fork server runs with
PYTHONHASHSEED=0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES = {"ex2_global_rng_set_order.py": "ex2_clipped_loss", "ex5_rngs_time_id_set_order.py": "ex5_rollout_buffer",
         "ex7_global_rng.py": "ex7_ppo_step"}


def _submission(dest: Path) -> Path:
    """The six solutions and the step (ex7 imports them), each case appended to its exercise's solution."""
    dest.mkdir(parents=True)
    for path in (REPO / "solutions").glob("ex*.py"):
        shutil.copy(path, dest / path.name)
    for case, stem in CASES.items():
        target = dest / f"{stem}.py"
        target.write_text(target.read_text(encoding="utf-8") + "\n\n" + (HERE / "nondeterministic" / case).read_text(
            encoding="utf-8"), encoding="utf-8")
    return dest


def _grade_in_a_fresh_process(folder: Path, out: Path) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "PPO_COURSE_FORKSERVER")}
    subprocess.run([sys.executable, "-m", "ppo_course.cli", "grade", str(folder), "--out", str(out / "results.json"),
                    "--feedback", str(out / "feedback.md"), "--exercises", ",".join(CASES.values()),
                    "--profile", "fast", "--quiet"], check=True, env=env, timeout=900)
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    data["extra_data"].pop("timing", None)
    return json.dumps(data, sort_keys=True), (out / "feedback.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_three_gradings_are_byte_identical(tmp_path):
    folder = _submission(tmp_path / "student")
    runs = []
    for k in range(3):
        out = tmp_path / f"run{k}"
        out.mkdir()
        runs.append(_grade_in_a_fresh_process(folder, out))
    results = json.loads(runs[0][0])
    assert results["score"] < sum(t["max_score"] for t in results["tests"]), "the submission must be wrong"
    assert "grader_error" not in runs[0][1]
    assert runs[1] == runs[0], "a second grading differs"
    assert runs[2] == runs[0], "a third grading differs"

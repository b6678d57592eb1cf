"""Issue 19, class 1: a relay through file metadata (access times, locks) that outlives the child.

``a93`` reads back a 16-bit pattern from the access times of torch's own
``.py`` files and, on finding it, answers with "relayed" values; then writes
the pattern by reading those files, ``utime`` and ``flock``. The test first
sets the carriers' access times a day before their mtime, as on a machine
where nobody read them today, so that ``relatime`` would record the first
grading's reads. Graded three times: the same results each time, never above
the twin, the carriers' times and ``/proc/locks`` unchanged, the guards clean.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from hostile_helpers import CANARY, read_attack, scores_by_test, write_hostile_submission, write_other_student
from hostile_guards import Guards
from hostile_limits import SUITE_LIMITS

pytestmark = pytest.mark.xdist_group("hostile")

HERE = Path(__file__).resolve().parent


CARRIERS = Path(torch.__file__).parent / "_ppo_relay_carriers"


def _carriers() -> list[Path]:
    """16 files beside torch's own, read by the attack and by nothing else on the machine: a test run in
    parallel prints tracebacks through torch's .py files (linecache), which would move their access times."""
    CARRIERS.mkdir(exist_ok=True)
    for i in range(16):
        (CARRIERS / f"c{i:02d}.txt").write_text(f"carrier {i}\n")
    return sorted(CARRIERS.iterdir())


def _locks(paths: list[Path]) -> list[str]:
    """/proc/locks entries on ``paths`` (``MAJOR:MINOR:INODE``; the machine's other locks come and go)."""
    keys = set()
    for p in paths:
        st = os.stat(p)
        keys.add(f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}")
    with open("/proc/locks") as fh:
        return sorted(" ".join(r[1:]) for r in (line.split() for line in fh) if keys & set(r))


@pytest.mark.slow
def test_a88_an_atime_and_lock_relay_carries_nothing_between_gradings(tmp_path, twin_results, fork_server):
    from grader.grade import grade_submission

    if not fork_server.probe.get("mount_namespace"):
        pytest.skip("needs a mount namespace for the minimal root")
    attack = read_attack(HERE / "attacks" / "a93_ex1_atime_relay.py")
    twin = twin_results(attack)
    carriers = _carriers()
    saved = {p: os.stat(p) for p in carriers}
    for p, st in saved.items():
        os.utime(p, ns=(st.st_mtime_ns - 2 * 86400 * 10**9, st.st_mtime_ns))
    before = {str(p): (os.stat(p).st_atime_ns, os.stat(p).st_mtime_ns) for p in carriers}
    locks = _locks(carriers)
    other = write_other_student(tmp_path / "cohort" / "other_student")
    out = tmp_path / "out"
    out.mkdir()
    guards = Guards([CANARY, other, out], fork_server.pid)
    try:
        folder = write_hostile_submission(tmp_path / "cohort" / "hostile", attack,
                                          guards.hints(other_student=other, results_dir=out))
        runs = [grade_submission(folder, exercises=[attack.target, attack.other], profile="fast",
                                 limits=SUITE_LIMITS) for _ in range(3)]
        after = {str(p): (os.stat(p).st_atime_ns, os.stat(p).st_mtime_ns) for p in carriers}
        locks_after = _locks(carriers)
        violations, leftovers = guards.violations(), guards.leftovers()
    finally:
        guards.restore()
        guards.close()
        shutil.rmtree(CARRIERS, ignore_errors=True)
    assert not violations, violations
    assert not leftovers, leftovers
    assert after == before, "a grading changed the carriers' times"
    assert locks_after == locks
    comparable = {json.dumps({**r.to_results_json(), "extra_data": {**r.to_results_json()["extra_data"], "timing": None}},
                             sort_keys=True) for r in runs}
    assert len(comparable) == 1, "three gradings of the same submission differ"
    got, want = scores_by_test(runs[0]), scores_by_test(twin)
    assert not {k for k in want if got[k][0] > want[k][0]}, "scored above the honest twin"
    assert runs[0].exercises[attack.other].score == twin.exercises[attack.other].score

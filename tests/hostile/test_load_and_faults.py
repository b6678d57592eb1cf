"""Load and faults (issue 7 part 4): a batch killed with SIGKILL and resumed, and a full output disk.

Both drive the real batch (``ppo-course grade-batch`` through ``ppo_course.cli``,
workers, atomic writes, resume) with the fast profile on exercises 1-2; the
distinct submissions are graded for real once and replayed in the workers
(see ``load_helpers``), except a few "live" students graded for real inside
the workers.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hostile_guards import FORKSERVER_MARK, proc_table, settled_leftovers
from load_helpers import CACHE_ENV, GRADE_FN, HERE, LOAD_EXERCISES, record_grade, submission_key, variants, write_cohort

# One xdist worker runs the whole hostile suite: its guards scan shared places (canaries,
# /run/lock, leftover processes) that the guard self-test and a parallel attack would both touch.
pytestmark = pytest.mark.xdist_group("hostile")

SEED = int(os.environ.get("PPO_HOSTILE_LOAD_SEED", "7"))
N_STUDENTS = int(os.environ.get("PPO_HOSTILE_LOAD_N", "200"))

# The CLI with the replaying grade function and a pinned grader fingerprint (teammates edit the
# grader while tests run; a changed fingerprint would rightly regrade everyone and hide whether
# the resume skipped the students that were done).
CLI = """
import functools, sys
from grader import batch
batch.grader_fingerprint = lambda: "pinned"
sys.path.insert(0, {batch_tests!r})
import stand_in_grader
stand_in_grader.install(sys.argv[3])  # the batch's workers grade with the replaying function
from ppo_course.cli import main
sys.exit(main(["grade-batch", sys.argv[1], "--out", sys.argv[2], "--jobs", "2", "--profile", "fast",
               "--exercises", sys.argv[4], "--no-progress"]))
""".replace("{batch_tests!r}", repr(str(HERE.parent / "batch")))


@pytest.fixture
def replay_env(tmp_path, monkeypatch):
    """Workers find ``load_helpers`` on PYTHONPATH and the recorded gradings in ``$PPO_HOSTILE_REPLAY_DIR``."""
    replay = tmp_path / "replay"
    replay.mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH", "")])))
    monkeypatch.setenv(CACHE_ENV, str(replay))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return replay


def _cohort_variants(tmp_path: Path, rng: random.Random) -> dict[str, dict[str, bytes]]:
    """About 15 distinct submissions: the good, twin and hostile ones, 4 of the catalogue's buggy ones."""
    hints = {"repo": str(tmp_path / "no-repo"), "canary": str(tmp_path / "no-canary"), "results_dir": str(tmp_path / "decoy"),
             "other_student": str(tmp_path / "nobody"), "tcp_port": 9, "udp_port": 9, "grader_pid": 0,
             "sentinel": 1_000_000_007, "marker": "ppohostile"}
    every = variants(hints)
    buggy = sorted(v for v in every if v.startswith("buggy-"))
    keep = set(rng.sample(buggy, 4))
    return {k: v for k, v in every.items() if not k.startswith("buggy-") or k in keep}


def _record(variant_files: dict, where: Path, replay: Path) -> None:
    for name, files in variant_files.items():
        folder = where / name
        folder.mkdir(parents=True)
        for fname, data in files.items():
            (folder / fname).write_bytes(data)
        record_grade(folder, replay, exercises=LOAD_EXERCISES, profile="fast")  # production limits, as the workers


def _start_cli(subs: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLI, str(subs), str(out), GRADE_FN, ",".join(LOAD_EXERCISES)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _rows(gradebook: Path) -> int:
    try:
        return max(0, gradebook.read_text().count("\n") - 1)
    except OSError:
        return 0


def _start_time(pid: int) -> int | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
        return int(data[data.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _descendants(root: int) -> set[tuple[int, int]]:
    """(pid, start time) of every live descendant of ``root`` (the start time guards against pid reuse)."""
    table = proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, state, _) in table.items():
        if state != "Z":
            children.setdefault(ppid, []).append(pid)
    found, frontier = set(), [root]
    while frontier:
        for child in children.get(frontier.pop(), []):
            start = _start_time(child)
            if start is not None and (child, start) not in found:
                found.add((child, start))
                frontier.append(child)
    return found


def _still_alive(procs: set[tuple[int, int]]) -> set[tuple[int, int]]:
    return {(pid, start) for pid, start in procs if _start_time(pid) == start
            and proc_table().get(pid, (0, 0, "Z", b""))[2] != "Z"}


def _orphan_forkservers() -> set[int]:
    """Fork servers (and their children) whose parent is init: what a killed worker would leave."""
    return {pid for pid, (ppid, _, state, cmd) in proc_table().items()
            if FORKSERVER_MARK in cmd and ppid == 1 and state != "Z"}


def _mentioning(text: str) -> list[int]:
    return [pid for pid, (_, _, state, cmd) in proc_table().items()
            if text.encode() in cmd and state != "Z" and pid != os.getpid()]


def _results(out: Path) -> dict[str, dict]:
    """Each student's results.json without its timings (the only part allowed to differ)."""
    found = {}
    for path in sorted(out.glob("*/results.json")):
        data = json.loads(path.read_text())
        data.get("extra_data", {}).pop("timing", None)
        found[path.parent.name] = data
    return found


@pytest.mark.slow
def test_kill_9_at_a_random_moment_then_resume_matches_an_uninterrupted_run(tmp_path, replay_env):
    """200 mixed students at --jobs 2, SIGKILL at a seeded random moment, resume: the uninterrupted gradebook."""
    rng = random.Random(SEED)
    variant_files = _cohort_variants(tmp_path, rng)
    _record(variant_files, tmp_path / "variants", replay_env)
    subs = tmp_path / "subs"
    cohort = write_cohort(subs, variant_files, N_STUDENTS, SEED, live=4)
    kinds = {v.split("-")[0] for v in cohort.values()}
    assert {"good", "buggy", "hostile", "twin"} <= kinds

    reference = tmp_path / "uninterrupted"
    proc = _start_cli(subs, reference)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    want = (reference / "gradebook.csv").read_text()
    rows = list(csv.DictReader(io.StringIO(want)))
    assert sorted(r["student_id"] for r in rows) == sorted(cohort)
    # Same submission, same row: the replayed and the live gradings agree.
    by_variant: dict[str, set] = {}
    for r in rows:
        by_variant.setdefault(cohort[r["student_id"]], set()).add(tuple(v for k, v in r.items() if k != "student_id"))
    assert all(len(v) == 1 for v in by_variant.values()), {k: v for k, v in by_variant.items() if len(v) > 1}

    out = tmp_path / "killed"
    orphans_before = _orphan_forkservers()
    kill_after = rng.randint(5, N_STUDENTS - 10)
    extra_delay = rng.uniform(0.0, 0.5)
    proc = _start_cli(subs, out)
    deadline = time.monotonic() + 600
    while _rows(out / "gradebook.csv") < kill_after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(extra_delay)
    assert proc.poll() is None, f"the batch ended before the kill after {kill_after} rows: {proc.stderr.read()}"
    started = _descendants(proc.pid)  # workers, their fork servers, sandbox children
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    committed = {path: path.stat().st_mtime_ns for path in out.glob("*/batch.json")}  # students done at the kill

    # Nothing left running: workers (they watch their parent), their fork servers, sandbox children.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (_still_alive(started) or _orphan_forkservers() - orphans_before):
        time.sleep(0.2)
    assert _still_alive(started) == set(), f"processes of the killed batch outlived it: {_still_alive(started)}"
    assert _orphan_forkservers() - orphans_before == set(), "a killed worker's fork server outlived it"
    assert _mentioning(str(out)) == []
    assert settled_leftovers(None) == []  # machine-wide: another worker's dying trees get a moment
    # No partial file: everything written so far is whole (a write cut by the kill leaves at most
    # a temporary file beside it, which the rerun sweeps).
    for path in out.glob("*/results.json"):
        json.loads(path.read_text())
    assert (out / "gradebook.csv").read_text() != want

    proc = _start_cli(subs, out)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    assert (out / "gradebook.csv").read_text() == want
    assert not list(out.rglob("*.tmp")), "a temporary file of the atomic writer outlived the resume"
    assert _results(out) == _results(reference)
    regraded = [p.parent.name for p, mtime in committed.items() if p.stat().st_mtime_ns != mtime]
    assert committed and not regraded, f"students finished before the kill were graded again: {regraded}"


@pytest.mark.slow
def test_a_full_output_disk_leaves_no_partial_file_and_says_so(tmp_path, replay_env):
    """OUT on a 160 KiB tmpfs (private mount namespace): the batch stops with ENOSPC named, every file whole."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and util-linux unshare to mount a small tmpfs")  # the ENOSPC path itself is not hidden
    rng = random.Random(SEED)
    variant_files = {k: v for k, v in _cohort_variants(tmp_path, rng).items() if not k.startswith("hostile")}
    _record(variant_files, tmp_path / "variants", replay_env)
    subs = tmp_path / "subs"
    write_cohort(subs, variant_files, 40, SEED)
    out, snapshot = tmp_path / "out", tmp_path / "snapshot"
    out.mkdir()
    snapshot.mkdir()
    script = ('mount -t tmpfs -o size=160k tmpfs "$2" || exit 99; '
              f'"{sys.executable}" -c "$CLI" "$1" "$2" "{GRADE_FN}" "{",".join(LOAD_EXERCISES)}"; rc=$?; '
              'cp -a "$2/." "$3/"; exit $rc')
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                           str(subs), str(out), str(snapshot)], env={**os.environ, "CLI": CLI},
                          capture_output=True, text=True, timeout=600)
    if proc.returncode == 99:
        pytest.skip(f"mounting a tmpfs is refused here: {proc.stderr.strip()}")
    assert not list(snapshot.rglob("*.tmp")), "a temporary file of the atomic writer was left"
    for path in snapshot.glob("*/results.json"):
        json.loads(path.read_text())  # whole, or absent
    for path in snapshot.glob("*/batch.json"):
        json.loads(path.read_text())
        assert (path.parent / "results.json").is_file(), f"{path} commits a student without results"
    if (snapshot / "gradebook.csv").exists():
        text = (snapshot / "gradebook.csv").read_text()
        assert text.endswith("\n") and all(len(r) == len(next(csv.reader(io.StringIO(text)))) for r in csv.reader(io.StringIO(text)))
    # The error: a non-zero exit and one clear message naming the cause and the folder (no traceback).
    assert proc.returncode != 0, "the batch claimed success on a full disk"
    assert "No space left on device" in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and str(out) in proc.stderr, \
        f"not a clear error (a traceback, or the output folder is not named):\n{proc.stderr[-3000:]}"

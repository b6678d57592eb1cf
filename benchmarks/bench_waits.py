"""Where people wait: one ``grade``, one ``check``, a ``check --watch`` re-run, ``make demo`` (a runnable script, not a test).

    python benchmarks/bench_waits.py [--repeat N] [--skip-demo]

The command-wait goals, each measured as the user types the command (``.venv/bin/ppo-course``), every
process start included, on the trusted files of this repository:

1. ``ppo-course grade examples/cohort/submissions/ada --profile full``: wall seconds (goal <= 4 s on an
   idle 2-core machine) and CPU-seconds of the whole process tree;
2. ``ppo-course check -e ex4 <copy of solutions/>``: wall and CPU-seconds (goal <= 2 s);
3. ``ppo-course check --watch -e ex4``: the seconds from saving ``ex4_gae.py`` (a comment appended) to the
   re-run's "checked in" line (goal < 1 s after the first run);
4. ``ppo-course demo``: wall and CPU-seconds of the whole command (goal: <= 25 s of grading).

Medians over ``--repeat`` runs (default 3; the demo runs once). Wall seconds depend on the machine's
load, printed at the start and the end; CPU-seconds hardly do (``grading_bench/measure.py``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

from grading_bench.measure import become_subreaper, load_average, measure  # noqa: E402

CLI = [sys.executable, "-m", "ppo_course.cli"]
ADA = ROOT / "examples" / "cohort" / "submissions" / "ada"


def _median_runs(cmd: list[str], repeat: int) -> tuple[float, float]:
    """(median wall s, median CPU-s) of ``cmd`` run ``repeat`` times; exits on a failed run."""
    walls, cpus = [], []
    for _ in range(repeat):
        m = measure(cmd, timeout=900)
        if m.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({m.returncode}):\n{m.stdout[-2000:]}\n{m.stderr[-2000:]}")
        walls.append(m.wall_s)
        cpus.append(m.cpu_s)
    return statistics.median(walls), statistics.median(cpus)


def watch_latency(folder: Path, saves: int) -> list[float]:
    """Seconds from each save of ``folder/ex4_gae.py`` to the watch's next "checked in" line."""
    proc = subprocess.Popen([*CLI, "check", "--watch", "-e", "ex4", "--max-runs", str(saves + 1), str(folder)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    checked = threading.Semaphore(0)
    stamps: list[float] = []

    def read() -> None:
        for line in proc.stdout:
            if line.startswith("checked in"):
                stamps.append(time.monotonic())
                checked.release()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    latencies = []
    try:
        if not checked.acquire(timeout=300):
            raise SystemExit("check --watch printed no first result within 300 s")
        for i in range(saves):
            time.sleep(1.5)  # a student's pause between saves (the watch compares file times and sizes)
            saved = time.monotonic()
            with open(folder / "ex4_gae.py", "a") as fh:
                fh.write(f"# save {i}\n")
            if not checked.acquire(timeout=120):
                raise SystemExit(f"check --watch did not re-run within 120 s of save {i}")
            latencies.append(stamps[-1] - saved)
    finally:
        proc.wait(timeout=120)
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args()
    become_subreaper()
    print(f"start: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-waits-") as tmp:
        work = Path(tmp)
        wall, cpu = _median_runs([*CLI, "grade", str(ADA), "--out", str(work / "r.json"), "--profile", "full",
                                  "--quiet"], args.repeat)
        print(f"ppo-course grade (one student, full profile): {wall:.1f} s wall, {cpu:.1f} CPU-s "
              f"(median of {args.repeat}; goal <= 4 s wall; the grader store on disk, "
              f"grader.hidden.disk_cache, holds this version's entries after the first run)", flush=True)
        exercises = work / "exercises"
        shutil.copytree(ROOT / "solutions", exercises, ignore=shutil.ignore_patterns("__pycache__"))
        wall, cpu = _median_runs([*CLI, "check", "-e", "ex4", str(exercises)], args.repeat)
        print(f"ppo-course check -e ex4: {wall:.1f} s wall, {cpu:.1f} CPU-s (median of {args.repeat}; "
              "goal <= 2 s)", flush=True)
        lat = watch_latency(exercises, args.repeat)
        print(f"ppo-course check --watch -e ex4, save to answer: {statistics.median(lat):.2f} s "
              f"(median of {len(lat)}: {', '.join(f'{x:.2f}' for x in lat)}; goal < 1 s)", flush=True)
    if not args.skip_demo:
        m = measure([*CLI, "demo"], timeout=1800)
        if m.returncode != 0:
            raise SystemExit(f"ppo-course demo failed ({m.returncode}):\n{m.stderr[-2000:]}")
        print(f"ppo-course demo (16 students, full profile, the whole command): {m.wall_s:.1f} s wall, "
              f"{m.cpu_s:.1f} CPU-s (goal <= 25 s of grading)", flush=True)
    print(f"end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

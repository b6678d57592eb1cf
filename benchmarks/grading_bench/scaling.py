"""Is a batch linear in the class? CPU-seconds per submission at the 16th, 200th and 1,000th student.

The synthetic class: the demo cohort (``examples/cohort/submissions``: every kind of submission, from
the perfect one to the empty folder and the zip) and the mistake catalogue (``tests/catalogue/buggy``:
each known mistake as the solutions with that one module replaced) replicated to N students (``ada``,
``ada-0001``, ...). It is graded by ``ppo-course grade-batch --jobs 2 --profile fast`` as a TA types
it. The grading itself is the tests' stand-in (``tests/batch/stand_in_grader.py``, installed in the
command's own process by patching ``grader.runners.workers.worker_command``, as the tests do): what is measured
is everything of a batch but the hidden tests (discovery, the intake and staging, the warm workers'
requests and replies, the typed results' validation, results.json, feedback.md, the record, the
gradebook, regrade and class reports). The hidden tests cost the same for every student whatever the
class size (``bench_grading.py`` measures them against the floor), so the batch is linear when this
part is.

How: while the command runs, the CPU-seconds of its whole process tree (user + system of every live
process and of the children each has reaped, from ``/proc`` via psutil) are sampled every 20 ms with
the number of students whose ``batch.json`` (the commit marker, written last) exists. The cost per
submission *at* the k-th student is the slope of CPU over students finished in the window that ends
there: students 3-16, 17-200 and 201-1,000 of one class of 1,000. The start (interpreter, the two warm
workers' imports and warm-up, discovery and planning of the whole class) and the end (the last
gradebook, regrade and class reports) are printed apart. Linear: no later window costs more than 10%
above an earlier one (a cost per student that grows with the class, such as re-reading every record
after each student, makes the later windows dearer). The first window may cost more than the later
ones: the end of the second warm worker's warm-up and the parent's first-use imports fall in it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from grading_bench.measure import _cpu_children, _reap_orphans

ROOT = Path(__file__).resolve().parents[2]
STAND_IN_DIR = ROOT / "tests" / "batch"
CATALOGUE = ROOT / "tests" / "catalogue" / "buggy"
SOLUTIONS = ROOT / "solutions"
SAMPLE_S = 0.02

#: The command: the stand-in installed in this process, then the CLI as a TA types it.
SCRIPT = (
    "import sys\n"
    f"sys.path.insert(0, {str(STAND_IN_DIR)!r})\n"
    "import stand_in_grader\n"
    "stand_in_grader.install()\n"
    "from ppo_course.cli import main\n"
    "sys.exit(main(['grade-batch', sys.argv[1], '--out', sys.argv[2], '--jobs', '2', '--profile', 'fast',"
    " '--no-progress']))\n"
)


def originals(cohort: Path, work: Path) -> list[Path]:
    """The class's distinct students: the cohort's entries, then one folder per catalogue mistake."""
    out = sorted(p for p in cohort.iterdir() if not p.name.startswith("."))
    base = work / "catalogue-students"
    for bug in sorted(CATALOGUE.glob("*.py")) if CATALOGUE.is_dir() else []:
        stem = bug.name.split("__", 1)[0]
        folder = base / ("m-" + bug.stem.replace("__", "-"))
        shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copyfile(bug, folder / f"{stem}.py")
        out.append(folder)
    return out


def replicate(sources: list[Path], n: int, dest: Path) -> list[str]:
    """``dest`` holding ``n`` students: ``sources`` in turn, copies named ``<id>-0001`` ...; their ids in order."""
    dest.mkdir(parents=True)
    ids = []
    for i in range(n):
        src = sources[i % len(sources)]
        copy = i // len(sources)
        stem = src.name[:-4] if src.suffix == ".zip" else src.name
        name = stem if copy == 0 else f"{stem}-{copy:04d}"
        target = dest / (name + (".zip" if src.suffix == ".zip" else ""))
        if src.is_dir():
            shutil.copytree(src, target)
        else:
            shutil.copyfile(src, target)
        ids.append(name)
    return sorted(ids)


def _tree_cpu(root) -> float:
    """CPU-seconds of ``root`` and its live descendants, each with what it has reaped (psutil)."""
    import psutil

    total = 0.0
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return float("nan")
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass  # exited between the listing and the read: its parent counts it once reaped
    return total


def grade_sampled(folder: Path, out: Path, ids: list[str]) -> tuple[list[tuple[int, float]], float, float]:
    """Run the command on ``folder``; return ([(students finished, tree CPU-s)], total CPU-s, wall s).

    The total is ``RUSAGE_CHILDREN``'s delta (exact); the samples are psutil's reads (see the module docstring).
    """
    import psutil

    cpu0, t0 = _cpu_children(), time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(folder), str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    root = psutil.Process(proc.pid)
    samples: list[tuple[int, float]] = []
    pending = list(ids)
    done = 0
    while proc.poll() is None:
        # Every student still pending is looked at (one stat each, ~1 ms per 1,000): the batch does not
        # grade in id order, so counting only a prefix of the ids would see many finish at once.
        still = [i for i in pending if not (out / i / "batch.json").exists()]
        done += len(pending) - len(still)
        pending = still
        cpu = _tree_cpu(root)
        if cpu == cpu:  # not NaN
            samples.append((done, cpu))
        time.sleep(SAMPLE_S)
    stdout, stderr = proc.communicate()
    wall = time.monotonic() - t0
    _reap_orphans()
    if proc.returncode != 0:
        raise SystemExit(f"grade-batch failed (exit {proc.returncode}):\n{stdout[-2000:]}\n{stderr[-3000:]}")
    return samples, _cpu_children() - cpu0, wall


def cpu_at(samples: list[tuple[int, float]], k: int) -> float:
    """Tree CPU-seconds when the k-th student finished (the first sample showing k or more finished)."""
    for done, cpu in samples:
        if done >= k:
            return cpu
    raise ValueError(f"no sample with {k} students finished (last: {samples[-1] if samples else None})")


def largest_growth(per: dict[int, float]) -> float:
    """The largest relative rise of the per-submission CPU from an earlier window to a later one
    (``{student k: CPU-s per submission in the window ending at k}``, every value > 0); <= 0 when no later
    window costs more than an earlier one."""
    ks = sorted(per)
    return max(per[b] / per[a] - 1 for i, a in enumerate(ks) for b in ks[i + 1:])


def run_scaling(cohort: Path, work: Path, sizes: tuple[int, ...] = (16, 200, 1000)) -> dict[int, float]:
    """Grade one synthetic class of ``max(sizes)``; print and return {k: CPU-s per submission in the window
    ending at the k-th student} (see the module docstring)."""
    sizes = tuple(sorted(sizes))
    n = sizes[-1]
    sources = originals(cohort, work)
    ids = replicate(sources, n, work / f"class-{n}")
    samples, total, wall = grade_sampled(work / f"class-{n}", work / f"out-{n}", ids)
    marks = [2, *sizes]
    per: dict[int, float] = {}
    for lo, hi in zip(marks, marks[1:]):
        per[hi] = (cpu_at(samples, hi) - cpu_at(samples, lo)) / (hi - lo)
    start, last = cpu_at(samples, 2), cpu_at(samples, n)
    print(f"synthetic class of {n} students ({len(sources)} distinct: the demo cohort and "
          f"{sum(s.parent.name == 'catalogue-students' for s in sources)} catalogue mistakes, replicated; stand-in grade, --jobs 2, "
          f"fast): {total:.1f} CPU-s in all, {total / n:.4f} per submission, {wall:.1f} s wall", flush=True)
    for lo, hi in zip(marks, marks[1:]):
        print(f"  CPU-s per submission at student {hi} (students {lo + 1}-{hi}): {per[hi]:.4f}")
    print(f"  start (until 2 students were graded: interpreter, warm workers, discovery of the class): "
          f"{start:.1f} CPU-s; end (after the last: gradebook, regrade and class reports): {total - last:.1f} CPU-s")
    if min(per.values()) <= 0:  # a window shorter than the sampling's resolution: say so, do not divide by it
        print(f"  a window measured no CPU (sampled every {SAMPLE_S * 1000:.0f} ms): no growth figure from this run")
    else:
        # Linear = a later student never costs more than an earlier one; the first window may cost *more* (the
        # end of the warm workers' warm-up and first-use imports fall in it), which is not growth.
        growth = largest_growth(per)
        spread = max(per.values()) / min(per.values()) - 1
        print(f"  largest growth of the per-submission CPU from an earlier window to a later one: {growth:+.1%} "
              f"(goal: no growth beyond +10%: {'met' if growth <= 0.10 else 'MISSED'}); at student {n} vs at "
              f"student {sizes[0]}: {per[n] / per[sizes[0]] - 1:+.1%}; largest over smallest window {spread:.1%}")
    shutil.rmtree(work / f"class-{n}", ignore_errors=True)
    shutil.rmtree(work / f"out-{n}", ignore_errors=True)
    return per


if __name__ == "__main__":  # pragma: no cover - a quick manual run
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        run_scaling(ROOT / "examples" / "cohort" / "submissions", Path(tmp),
                    tuple(int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "16,200,1000").split(",")))
    os._exit(0)

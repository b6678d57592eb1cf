"""Is a batch linear in the class? CPU-seconds per submission at 16, 200 and 1,000 students.

The demo cohort (``examples/cohort/submissions``: every kind of submission, from the perfect one
to the empty folder and the zip) is replicated to N students (``ada``, ``ada-0001``, ...) and
graded by ``ppo-course grade-batch --jobs 2 --profile fast`` as a TA types it, measured with every
process under it (``grading_bench.measure``). The grading itself is the tests' stand-in
(``tests/batch/stand_in_grader.py``, installed in the command's own process by patching
``grader.runners.workers.worker_command``, as the tests do): what is measured is everything of a batch but
the hidden tests (discovery, the intake and staging, the warm workers' requests and replies, the
typed results' validation, results.json, feedback.md, the record, the gradebook, regrade and class
reports). The hidden tests cost the same for every student whatever the class size (measured by
``bench_grading.py`` itself), so the batch is linear when this part is.

Printed per class size: CPU-seconds of the whole command per submission, and the marginal
CPU-seconds per submission, ``(cpu(N) - cpu(2)) / (N - 2)`` (the fixed costs of one command: the
interpreter, the two warm workers that ``--jobs 2`` starts and their warm-up, the reports' figures,
taken out; ``cpu(2)`` is the median of three runs on a class of 2). Linear: the marginal figures stay
within 10% of each other.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grading_bench.measure import Measured, measure

ROOT = Path(__file__).resolve().parents[2]
STAND_IN_DIR = ROOT / "tests" / "batch"

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


def replicate(cohort: Path, n: int, dest: Path) -> Path:
    """``dest`` holding ``n`` students: the cohort's, then copies named ``<id>-0001`` ... in turn."""
    dest.mkdir(parents=True)
    originals = sorted(p for p in cohort.iterdir() if not p.name.startswith("."))
    for i in range(n):
        src = originals[i % len(originals)]
        copy = i // len(originals)
        stem = src.name[:-4] if src.suffix == ".zip" else src.name
        name = stem if copy == 0 else f"{stem}-{copy:04d}"
        target = dest / (name + (".zip" if src.suffix == ".zip" else ""))
        if src.is_dir():
            shutil.copytree(src, target)
        else:
            shutil.copyfile(src, target)
    return dest


def grade_class(folder: Path, out: Path) -> Measured:
    """One ``grade-batch`` of ``folder`` with the stand-in grader, measured (CPU of the whole process tree)."""
    import sys

    m = measure([sys.executable, "-c", SCRIPT, str(folder), str(out)])
    if m.returncode != 0:
        raise SystemExit(f"grade-batch failed (exit {m.returncode}):\n{m.stdout[-2000:]}\n{m.stderr[-3000:]}")
    return m


def run_scaling(cohort: Path, work: Path, sizes: tuple[int, ...] = (16, 200, 1000)) -> dict[int, float]:
    """Print and return {class size: marginal CPU-seconds per submission} (see the module docstring)."""
    import statistics

    fixed = statistics.median(grade_class(replicate(cohort, 2, work / f"class-2-{i}"), work / f"out-2-{i}").cpu_s
                              for i in range(3))
    marginal: dict[int, float] = {}
    for n in sizes:
        m = grade_class(replicate(cohort, n, work / f"class-{n}"), work / f"out-{n}")
        marginal[n] = (m.cpu_s - fixed) / (n - 2)
        print(f"synthetic class of {n} students (demo cohort replicated, stand-in grade, --jobs 2, fast): "
              f"{m.cpu_s / n:.3f} CPU-s per submission for the whole command, {marginal[n]:.4f} CPU-s marginal "
              f"per submission; {m.wall_s:.1f} s wall", flush=True)
        shutil.rmtree(work / f"class-{n}", ignore_errors=True)
        shutil.rmtree(work / f"out-{n}", ignore_errors=True)
    spread = max(marginal.values()) / min(marginal.values()) - 1 if marginal else 0.0
    print(f"one command's fixed cost (a class of 2, median of 3): {fixed:.2f} CPU-s; marginal CPU per submission from "
          f"{min(sizes)} to {max(sizes)} students varies by {spread:.1%} (goal: flat, within 10%)")
    return marginal

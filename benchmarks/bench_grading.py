"""Benchmark of grading on the demo cohort, with its floor and nbgrader (a runnable script, not a test).

    python benchmarks/bench_grading.py [--quick] [--profile full|fast] [--repeat N] [--skip-nbgrader]
    python benchmarks/bench_grading.py --scaling 16,200,1000

Measures, in one run, on ``examples/cohort/submissions`` (CPU-seconds are
user + system of the command and every process under it, see
``grading_bench/measure.py``; they hardly depend on how loaded the machine is,
wall seconds do):

1. ``ppo-course grade-batch --jobs 1`` and ``--jobs 2`` on the cohort (run as
   the command a TA types, so the fork server's start and the workers' starts
   are in "per submission"): CPU-seconds and wall per submission, the
   throughput ratio of --jobs 2 over --jobs 1, and the peak memory of the
   process tree at --jobs 2 (RSS summed over the processes, and PSS);
2. the floor (``grading_bench/floor.py``): the same public and hidden tests,
   selected as ``grader.grade`` selects them, run in one warm process on
   trusted, directly imported modules (no sandbox), after one untimed warm-up,
   on the floor's students (trusted, well-behaved submissions: the correct one
   and a few others); ``ppo-course grade-batch --jobs 1`` on exactly those
   students gives ``ratio ppo-course/floor`` (CPU per submission; the floor's
   scores must equal ppo-course's, or the floor ran something else);
3. nbgrader: ``nbgrader autograde`` of a minimal course whose notebook runs the
   same tests per student (``grading_bench/nbgrader_course.py``), one student
   per command, interleaved student by student with ``ppo-course grade`` of the
   same student (one command each, every start included; the order alternates
   so that load drift hits both), giving ``ratio nbgrader/ppo-course per
   submission (CPU)`` (ratio of the medians); and, labelled as such, the earlier
   ex1-ex6 fixed-seed notebook (not the same tests).

Every command of a run uses one fresh grader store on disk (``grader.hidden.disk_cache``), primed by
one untimed ``ppo-course grade`` before anything is timed, as the floor is by its warm-up
(``--cold-store``: empty at the start, so the first batch computes and writes it).

The floor and nbgrader run the students' code unconfined: give this script
trusted cohorts only (the demo cohort is ours). ``--quick`` grades two
students (one for nbgrader) once in the fast profile: about 90 CPU-seconds, a
minute or two on an idle 2-core machine; the lines it prints are those of a full run.

4. ``--scaling 16,200,1000`` (alone, or with ``--quick`` after the quick run): the demo cohort and the
   mistake catalogue replicated to a synthetic class of 1,000, graded with the tests' stand-in grade:
   CPU-seconds per submission of everything a batch does besides the hidden tests, at the 16th, 200th
   and 1,000th student (the slope in the window ending there), which must stay flat
   (``grading_bench/scaling.py``).

``make bench`` runs ``--quick --scaling 16,200,1000`` (a few minutes); ``make bench-full`` the full
profile on the whole cohort with nbgrader (tens of minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

from grading_bench import cohort as cohort_mod  # noqa: E402
from grading_bench.measure import Measured, become_subreaper, load_average, measure  # noqa: E402
from grading_bench.nbgrader_course import NbgraderCourse, nbgrader_env  # noqa: E402

COHORT = ROOT / "examples" / "cohort" / "submissions"
# Trusted, well-behaved students of the demo cohort (no endless loop, no memory hog): the correct one,
# a partial one with a stub, a wrong clip, a GAE mistake, a syntax error and a helper module.
FLOOR_STUDENTS = ["ada", "ben", "chen", "eli", "ivan", "ola"]
QUICK_STUDENTS = ["ada", "chen"]
QUICK_NB_STUDENTS = ["ada"]
GB = 1e9


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "ppo_course.cli", *args]


def _check(m: Measured, what: str) -> Measured:
    if m.returncode != 0:
        raise SystemExit(f"{what} failed (exit {m.returncode}):\n{m.stdout[-2000:]}\n{m.stderr[-3000:]}")
    return m


def grade_batch(folder: Path, out: Path, jobs: int, profile: str, memory: bool = False) -> Measured:
    """``ppo-course grade-batch FOLDER --out OUT --jobs N --force``, measured."""
    m = measure(_cli("grade-batch", str(folder), "--out", str(out), "--jobs", str(jobs), "--force", "--no-progress",
                     "--profile", profile), env=nbgrader_env(), memory=memory)
    return _check(m, f"ppo-course grade-batch --jobs {jobs}")


def _prime_store(work: Path, student: Path, profile: str, *, cold: bool) -> None:
    """Point every command of this run at a fresh grader store on disk (``grader.hidden.disk_cache``) and, unless
    ``cold``, fill it with one untimed ``ppo-course grade`` of ``student``: the state of a course's store after
    its first grading with this grader version and secret, as the floor runs after its untimed warm-up."""
    from grader.hidden.disk_cache import CACHE_DIR_ENV

    os.environ[CACHE_DIR_ENV] = str(work / "grader-store")
    if cold:
        print("grader store on disk: empty at the start (--cold-store): the first batch computes and writes it")
        return
    m = measure(_cli("grade", str(student), "--out", str(work / "prime" / "results.json"), "--profile", profile,
                     "--quiet"), env=nbgrader_env())
    _check(m, "ppo-course grade (priming the grader store)")
    print(f"grader store on disk: primed by one untimed `ppo-course grade` of {student.name} ({m.cpu_s:.1f} CPU-s, "
          "not counted), as the floor is by its warm-up (--cold-store: without)")


def run_floor(staged: dict[str, Path], students: list[str], profile: str, cwd: Path) -> tuple[Measured, list[dict]]:
    """The floor worker (one process: warm-up on the first student, then each student timed)."""
    cwd.mkdir(parents=True, exist_ok=True)
    env = dict(nbgrader_env(), PYTHONPATH=os.pathsep.join(filter(None, [str(BENCH_DIR),
                                                                         os.environ.get("PYTHONPATH", "")])))
    cmd = [sys.executable, "-m", "grading_bench.floor", "--profile", profile, "--warmup", str(staged[students[0]]),
           *(str(staged[s]) for s in students)]
    m = _check(measure(cmd, cwd=cwd, env=env), "the floor")
    lines = [json.loads(line) for line in m.stdout.splitlines() if line.startswith("{")]
    return m, lines


def _per(values: list[float]) -> str:
    return f"min {min(values):.2f}, max {max(values):.2f}" if values else "none"


def _scores(out: Path) -> dict[str, float]:
    """``{student: total}`` from a batch's gradebook.csv."""
    with open(out / "gradebook.csv", newline="") as fh:
        return {row["student_id"]: float(row["total"]) for row in csv.DictReader(fh)}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the numbers (see the module docstring). Exit 0 when every run worked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"students {','.join(QUICK_STUDENTS)} (nbgrader: {','.join(QUICK_NB_STUDENTS)}), "
                             "fast profile, one repetition, no legacy notebook")
    parser.add_argument("--profile", choices=["full", "fast"], default=None, help="default full (fast with --quick)")
    parser.add_argument("--repeat", type=int, default=1, help="repetitions of the --jobs 1/--jobs 2 batches (medians)")
    parser.add_argument("--cohort", type=Path, default=COHORT, help="submissions folder (trusted code only)")
    parser.add_argument("--students", default=None, help="comma-separated students of the batches (default: all)")
    parser.add_argument("--floor-students", default=None,
                        help=f"comma-separated trusted students of the floor (default: {','.join(FLOOR_STUDENTS)})")
    parser.add_argument("--nb-students", default=None,
                        help="comma-separated students of the nbgrader comparison (default: the batch's)")
    parser.add_argument("--skip-nbgrader", action="store_true")
    parser.add_argument("--no-legacy", action="store_true", help="leave out the fixed-seed ex1-ex6 notebook")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (printed)")
    parser.add_argument("--cold-store", action="store_true",
                        help="start with an empty grader store on disk (default: primed by one untimed grade, "
                             "as the floor is by its warm-up)")
    parser.add_argument("--scaling", default=None, metavar="SIZES",
                        help="the synthetic class: CPU-s per submission at these students of one class of the "
                             "largest size (e.g. 16,200,1000; grading_bench/scaling.py); alone, or after --quick")
    args = parser.parse_args(argv)
    if args.scaling and not args.quick:
        return _run_scaling(args)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    profile = args.profile or ("fast" if args.quick else "full")
    split = lambda s: [x.strip() for x in s.split(",") if x.strip()]  # noqa: E731
    entries = cohort_mod.entries(args.cohort)
    students = split(args.students) if args.students else (QUICK_STUDENTS if args.quick else list(entries))
    floor_students = split(args.floor_students) if args.floor_students else (
        QUICK_STUDENTS if args.quick else [s for s in FLOOR_STUDENTS if s in students])
    nb_students = split(args.nb_students) if args.nb_students else (QUICK_NB_STUDENTS if args.quick else students)
    legacy = not (args.no_legacy or args.quick or args.skip_nbgrader)
    unknown = sorted(set(students + floor_students + nb_students) - set(entries))
    if unknown or not floor_students or not students:
        parser.error(f"unknown or no students: {unknown} (the cohort holds {', '.join(entries)})")

    subreaper = become_subreaper()
    work = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    started = time.monotonic()
    try:
        print(f"start: {load_average()}; CPU-seconds include every child process"
              + ("" if subreaper else " (no subreaper: orphans escape the count)"))
        print(f"cohort: {len(students)} submissions from {args.cohort}; profile {profile}; repeat {args.repeat}")
        staged = {s: cohort_mod.stage(entries[s], work / "staged" / s)
                  for s in dict.fromkeys(floor_students + nb_students)}
        batch_dir = cohort_mod.subset(args.cohort, students, work / "cohort")
        _prime_store(work, staged[floor_students[0]], profile, cold=args.cold_store)
        courses = {}
        if not args.skip_nbgrader:
            t0 = time.monotonic()
            courses["same"] = NbgraderCourse(work / "nbgrader", "same", profile)
            courses["same"].build({s: staged[s] for s in nb_students})
            if legacy:
                courses["legacy"] = NbgraderCourse(work / "nbgrader-legacy", "legacy", profile)
                courses["legacy"].build({s: staged[s] for s in nb_students})
            print(f"nbgrader course(s) built and released in {time.monotonic() - t0:.1f} s (not counted)")

        # 1. The batches, --jobs 1 and --jobs 2 alternating (each repetition swaps the order).
        runs: dict[int, list[Measured]] = {1: [], 2: []}
        for r in range(args.repeat):
            for jobs in ((1, 2) if r % 2 == 0 else (2, 1)):
                runs[jobs].append(grade_batch(batch_dir, work / f"jobs{jobs}-{r}", jobs, profile, memory=jobs == 2))
        n = len(students)
        cpu = {j: statistics.median(m.cpu_s for m in runs[j]) / n for j in runs}
        wall = {j: statistics.median(m.wall_s for m in runs[j]) for j in runs}
        for j in (1, 2):
            print(f"ppo-course grade-batch --jobs {j}: {cpu[j]:.2f} CPU-s and {wall[j] / n:.2f} s wall per submission "
                  f"({n} submissions, wall {wall[j]:.1f} s, throughput {n / wall[j]:.3f} submissions/s; "
                  "fork-server and worker starts included)")
        print(f"throughput --jobs 2 / --jobs 1: {wall[1] / wall[2]:.2f} (goal >= 1.8 on an idle 2-core machine)")
        peak_rss = max(m.peak_rss for m in runs[2])
        peak_pss = max(m.peak_pss for m in runs[2])
        peak_one = max(m.peak_one_rss for m in runs[2])
        print(f"peak memory at --jobs 2: {peak_pss / GB:.2f} GB PSS over the process tree (goal < 2 GB; RSS "
              f"summed over the tree {peak_rss / GB:.2f} GB, counting pages shared by forked processes once per "
              f"process; largest single process {peak_one / GB:.2f} GB RSS)")
        books = [(work / f"jobs{j}-{r}" / "gradebook.csv").read_text() for j in runs for r in range(len(runs[j]))]
        print(f"gradebooks of every batch run identical: {all(b == books[0] for b in books)}")

        # 2. The floor, and ppo-course on exactly the floor's students.
        floor_m, floor_lines = run_floor(staged, floor_students, profile, work / "floor-cwd")
        warm = [x for x in floor_lines if "warmup" in x]
        per_student = [x for x in floor_lines if "student" in x]
        if len(per_student) != len(floor_students):
            raise SystemExit(f"the floor graded {len(per_student)} of {len(floor_students)} students:\n"
                             f"{floor_m.stderr[-3000:]}")
        floor_cpu = statistics.fmean(x["cpu_s"] for x in per_student)
        if set(floor_students) == set(students):
            matched, matched_out = cpu[1], work / "jobs1-0"
        else:
            fb = grade_batch(cohort_mod.subset(args.cohort, floor_students, work / "floor-cohort"),
                             work / "floor-batch", 1, profile)
            matched, matched_out = fb.cpu_s / len(floor_students), work / "floor-batch"
        ours = _scores(matched_out)
        differ = [f"{x['student']} floor {x['score']:g} vs ppo-course {ours.get(x['student'])}"
                  for x in per_student if ours.get(x["student"]) is None
                  or not math.isclose(x["score"], ours[x["student"]], abs_tol=1e-6)]
        print(f"floor (same tests, one warm process, trusted modules, no sandbox): {floor_cpu:.2f} CPU-s per "
              f"submission over {', '.join(floor_students)} ({_per([x['cpu_s'] for x in per_student])}; "
              f"warm-up {warm[0]['cpu_s']:.1f} CPU-s not counted; the whole process {floor_m.cpu_s:.1f} CPU-s)")
        print(f"floor scores equal ppo-course's: {not differ}" + (f" ({'; '.join(differ)})" if differ else ""))
        print(f"ppo-course grade-batch --jobs 1 on the floor's students: {matched:.2f} CPU-s per submission")
        print(f"ratio ppo-course/floor: {matched / floor_cpu:.2f} (goal <= 2)")

        # 3. nbgrader, interleaved student by student with `ppo-course grade`.
        if courses:
            pairs: dict[str, dict[str, Measured]] = {}
            for i, sid in enumerate(nb_students):
                order = ["ours", *courses] if i % 2 == 0 else [*courses, "ours"]
                pairs[sid] = {}
                for side in order:
                    if side == "ours":
                        out = work / "grade" / sid
                        out.mkdir(parents=True)
                        pairs[sid][side] = _check(measure(_cli("grade", str(entries[sid]), "--out",
                                                               str(out / "results.json"), "--profile", profile,
                                                               "--quiet"), env=nbgrader_env()),
                                                  f"ppo-course grade {sid}")
                    else:
                        pairs[sid][side] = courses[side].autograde(sid)
            nb_scores = {side: course.scores() for side, course in courses.items()}
            med = {side: statistics.median(p[side].cpu_s for p in pairs.values()) for side in ["ours", *courses]}
            mean = {side: statistics.fmean(p[side].cpu_s for p in pairs.values()) for side in ["ours", *courses]}
            walls = [p["ours"].wall_s for p in pairs.values()]
            print(f"ppo-course grade (one student per command, interleaved with nbgrader): median "
                  f"{med['ours']:.2f} CPU-s ({_per([p['ours'].cpu_s for p in pairs.values()])}), "
                  f"median {statistics.median(walls):.2f} s wall, over {len(pairs)} students")
            failed = [sid for sid, p in pairs.items() if p["same"].returncode != 0]
            print(f"nbgrader autograde, the same tests (one student per command, a notebook each): median "
                  f"{med['same']:.2f} CPU-s ({_per([p['same'].cpu_s for p in pairs.values()])})"
                  + (f"; autograde failed for {', '.join(failed)}" if failed else ""))
            print("nbgrader scores (cells all or nothing): "
                  + ", ".join(f"{k} {v:g}" if v is not None else f"{k} -" for k, v in sorted(nb_scores["same"].items())))
            print(f"ratio nbgrader/ppo-course per submission (CPU): {med['same'] / med['ours']:.2f} "
                  f"(medians; means {mean['same'] / mean['ours']:.2f}; goal >= 4)")
            if set(nb_students) == set(students):
                print(f"ratio nbgrader/ppo-course-batch per submission (CPU, nbgrader's mean over grade-batch "
                      f"--jobs 1's): {mean['same'] / cpu[1]:.2f}")
            if "legacy" in courses:
                print(f"nbgrader autograde, legacy ex1-ex6 fixed-seed cells (NOT the same tests): median "
                      f"{med['legacy']:.2f} CPU-s; scores (of 60): "
                      + ", ".join(f"{k} {v:g}" if v is not None else f"{k} -"
                                  for k, v in sorted(nb_scores["legacy"].items())))
                print(f"ratio nbgrader-legacy-ex1-6/ppo-course per submission (CPU): "
                      f"{med['legacy'] / med['ours']:.2f} (medians)")
        from grading_bench import measure as measure_mod

        if measure_mod.STRAYS_KILLED:
            print(f"warning: {measure_mod.STRAYS_KILLED} process(es) outlived their command by 10 s and were killed "
                  "(their CPU is counted)")
        print(f"end: {load_average()}; benchmark wall {time.monotonic() - started:.0f} s")
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return _run_scaling(args) if args.scaling else 0


def _run_scaling(args: argparse.Namespace) -> int:
    """``--scaling``: the synthetic class (``grading_bench/scaling.py``), with the load before and after."""
    from grading_bench.scaling import run_scaling

    become_subreaper()
    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as tmp:
        print(f"start: {load_average()}")
        run_scaling(args.cohort, Path(tmp), tuple(int(x) for x in args.scaling.split(",")))
        print(f"end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The class report of a batch: what a TA should re-teach.

``OUT_DIR/report.md`` (and ``report.png``, drawn with matplotlib's Agg
backend) summarise a graded batch: how many students per status, the
distribution of total scores, the mean and median of each exercise, and the
most common diagnosed mistakes across the class with their counts.

Diagnoses come from each student's typed result (``TestResult.diagnosis``: the
``GradeResult`` the batch holds, else the published results.json read by
``grader.records.gradebook.load_result``), and the ids are the stable keys of ``grader.mistakes.diagnose.DIAGNOSES``. A student
is counted once per diagnosis, however many tests reported it.
"""

from __future__ import annotations

import statistics
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# Diagnoses that say a module was missing, unfinished or did not run, rather than a mistake in
# the maths: reported on one line of their own, not in the re-teach table.
_RUN_DIAGNOSES = frozenset(
    {"timeout", "crash", "module_missing", "module_broken", "not_implemented", "missing_name", "grader_error"}
)


@dataclass
class ClassSummary:
    """Numbers behind the class report.

    ``totals``: total score per student (all statuses, rejected ones at 0);
    ``exercise_scores``: stem -> scores of the students whose status is
    ``graded``; ``diagnoses``: id -> (number of students, stems where seen).
    """

    n_students: int
    status_counts: dict[str, int]
    max_total: float
    totals: list[float]
    exercise_max: dict[str, float]
    exercise_scores: dict[str, list[float]]
    diagnoses: Counter = field(default_factory=Counter)
    diagnosis_stems: dict[str, set[str]] = field(default_factory=dict)
    diagnosis_students: dict[str, list[str]] = field(default_factory=dict)
    diagnosis_points: Counter = field(default_factory=Counter)  # id -> points the class lost to it
    preview: bool = False  # some student was graded in the fast profile: the numbers are a preview, not grades


def diagnoses_in(result) -> list[tuple[str, str, float]]:
    """(diagnosis id, module stem, points lost) for every failed test worth points that carries a diagnosis.

    A 0-point test only informs (e.g. exercise 7 run on the student's own ex1-ex6): it is no mistake
    of the class's score, so it is left out.

    Args:
        result: a typed ``grader.records.results.GradeResult`` (the batch's, or ``grader.records.gradebook.load_result``'s).
    """
    return [(t.diagnosis, t.exercise, t.max_score - t.score) for t in result.tests
            if t.status != "passed" and t.diagnosis and t.max_score > 0]


def summarise(out_dir: Path, records: Iterable, results: dict | None = None) -> ClassSummary:
    """Collect the class numbers from the batch records and each student's typed result.

    Args:
        out_dir: the batch output folder (``<student>/results.json`` inside).
        records: ``grader.records.gradebook.StudentRecord`` objects (one per gradebook row).
        results: {student id: ``GradeResult``} the batch still holds (nothing is reread for them); any
            other student's published results.json is read with ``grader.records.gradebook.load_result``.
    """
    from grader.records.gradebook import load_result

    results = results or {}
    records = list(records)
    status_counts = Counter(r.status for r in records)
    exercise_max: dict[str, float] = {}
    exercise_scores: dict[str, list[float]] = {}
    diag: Counter = Counter()
    diag_stems: dict[str, set[str]] = {}
    diag_students: dict[str, list[str]] = {}
    diag_points: Counter = Counter()
    for r in records:
        for stem, s in r.exercise_scores.items():
            exercise_max[stem] = max(exercise_max.get(stem, 0.0), s["max_score"])
        if r.status != "graded":
            continue
        for stem, s in r.exercise_scores.items():
            exercise_scores.setdefault(stem, []).append(s["score"])
        result = results.get(r.student_id) or load_result(out_dir, r.student_id)
        if result is None:
            continue
        seen: set[str] = set()
        for did, stem, lost in diagnoses_in(result):
            diag_stems.setdefault(did, set()).add(stem)
            diag_points[did] += lost
            if did not in seen:
                seen.add(did)
                diag[did] += 1
                diag_students.setdefault(did, []).append(r.student_id)
    from grader.points import EXERCISES

    order = {s: i for i, s in enumerate(EXERCISES)}
    exercise_max = dict(sorted(exercise_max.items(), key=lambda kv: (order.get(kv[0], 99), kv[0])))
    return ClassSummary(
        n_students=len(records),
        status_counts=dict(status_counts),
        max_total=max((r.max_score for r in records), default=0.0),
        totals=[r.score for r in records if r.score is not None],  # a grader fault has no score
        exercise_max=exercise_max,
        exercise_scores=exercise_scores,
        diagnoses=diag,
        diagnosis_stems=diag_stems,
        diagnosis_students=diag_students,
        diagnosis_points=diag_points,
        preview=any(getattr(r, "profile", "full") == "fast" for r in records),
    )


# Catch-alls that name no mistake (a value, shape or type matching no known buggy variant, an
# exception): nothing to re-teach by name, so they get a line of their own, not a rank in the table.
_CATCH_ALL_DIAGNOSES = frozenset({"wrong_value", "raises_error", "wrong_type", "wrong_shape", "not_scalar"})

# Diagnoses that only echo a mistake reported elsewhere (ex7 run on the student's own ex1-ex6):
# left out of the re-teach table so that the root causes rank first.
_ECHO_DIAGNOSES = frozenset({"ppo_step_own_pieces_differ"})


def _ranked(diagnoses: Counter) -> list[tuple[str, int]]:
    """The mistakes to re-teach, most students first, ties by id (a stable order across runs)."""
    left_out = _RUN_DIAGNOSES | _ECHO_DIAGNOSES | _CATCH_ALL_DIAGNOSES
    return sorted(((d, n) for d, n in diagnoses.items() if d not in left_out),
                  key=lambda dn: (-dn[1], dn[0]))


def _diagnosis_message(did: str) -> str:
    try:
        from grader.mistakes.diagnose import message

        return message(did)
    except (ImportError, KeyError):
        return "(no message: unknown diagnosis id)"


#: Mistakes listed in report.md's table and drawn in report.png (the same list in both).
TOP_MISTAKES = 10


def report_markdown(summary: ClassSummary, png_name: str | None = "report.png", top: int = TOP_MISTAKES) -> str:
    """The text of report.md for a :class:`ClassSummary` (``top`` most common diagnoses)."""
    s = summary
    lines = ["# Class report", ""]
    if s.preview:
        lines += ["**Fast preview, not a grade:** graded with `--profile fast`, which leaves out exercise 7's "
                  "training run (so the maximum is lower); grade without `--profile fast` for the grade.", ""]
    status_text = ", ".join(f"{n} {st}" for st, n in sorted(s.status_counts.items(), key=lambda kv: -kv[1]))
    lines += [f"{s.n_students} students: {status_text or 'none'}.", ""]
    if s.totals:
        lines += [
            f"Total score (out of {s.max_total:g}, all students, ungradable ones at 0): "
            f"mean {statistics.fmean(s.totals):.2f}, median {statistics.median(s.totals):g}, "
            f"min {min(s.totals):g}, max {max(s.totals):g}.",
            "",
        ]
    if png_name:
        lines += [f"![score histogram and per-exercise means]({png_name})", ""]
    lines += _exercise_table(s)
    lines += ["", "## Most common diagnosed mistakes", ""]
    mistakes = _ranked(s.diagnoses)
    if not mistakes:
        lines += ["No diagnosed mistakes.", ""]
    else:
        lines += [
            "Students counted once per mistake. Re-teach from the top.",
            "",
            "| # | diagnosis | exercises | students | what it means |",
            "| ---: | --- | --- | ---: | --- |",
        ]
        for i, (did, n) in enumerate(mistakes[:top], 1):
            stems = ", ".join(f"`{x}`" for x in sorted(s.diagnosis_stems.get(did, set())) if x)
            msg = _diagnosis_message(did).replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {i} | `{did}` | {stems} | {n} | {msg} |")
        if len(mistakes) > top:
            rest = mistakes[top:]
            lines += ["", f"… and {len(rest)} more diagnosed mistake{'s' if len(rest) > 1 else ''}, each of at most "
                          f"{max(n for _, n in rest)} student{'s' if max(n for _, n in rest) > 1 else ''}: "
                          + ", ".join(f"`{did}` ({n})" for did, n in rest) + "."]
        lines.append("")
    echoes = [(d, s.diagnoses[d]) for d in sorted(_ECHO_DIAGNOSES) if s.diagnoses.get(d)]
    if echoes:
        lines += ["Echoes of the mistakes above in later exercises (students): "
                  + ", ".join(f"`{d}` {n}" for d, n in echoes), ""]
    catch_alls = [(d, s.diagnoses[d]) for d in sorted(_CATCH_ALL_DIAGNOSES) if s.diagnoses.get(d)]
    if catch_alls:
        students = {st for d, _ in catch_alls for st in s.diagnosis_students.get(d, [])}
        stems = sorted({x for d, _ in catch_alls for x in s.diagnosis_stems.get(d, set()) if x},
                       key=lambda x: (x.split("_")[0], x))
        lines += [f"Not matched to a known mistake: {len(students)} student{'s' if len(students) != 1 else ''} on "
                  + ", ".join(x.split("_")[0] for x in stems)
                  + " (" + ", ".join(f"`{d}` {n}" for d, n in catch_alls)
                  + "); read their feedback or add a buggy variant (grader/mistakes/buggy_variants.py).", ""]
    run_issues = [(d, s.diagnoses[d]) for d in sorted(_RUN_DIAGNOSES) if s.diagnoses.get(d)]
    if run_issues:
        lines += ["Not attempted or did not run (students): " + ", ".join(f"`{d}` {n}" for d, n in run_issues), ""]
    return "\n".join(lines).rstrip() + "\n"


def _exercise_table(s: ClassSummary) -> list[str]:
    """report.md's "Per exercise" section: its heading and one table row per exercise graded in the batch."""
    lines = ["## Per exercise (students with status `graded`)", ""]
    lines += ["| exercise | max | mean | median | full marks |", "| --- | ---: | ---: | ---: | ---: |"]
    for stem, mx in s.exercise_max.items():
        if mx <= 0:
            continue  # not graded in this batch (exercise not selected, or no test for it)
        scores = s.exercise_scores.get(stem, [])
        if scores:
            full = sum(abs(x - mx) < 1e-9 for x in scores)
            lines.append(
                f"| `{stem}` | {mx:g} | {statistics.fmean(scores):.2f} | {statistics.median(scores):g} | {full}/{len(scores)} |"
            )
        else:
            lines.append(f"| `{stem}` | {mx:g} | – | – | 0/0 |")
    return lines


def report_figure(summary: ClassSummary, top: int = TOP_MISTAKES):
    """The figure of report.png: score histogram, per-exercise mean (% of max), the `top` mistakes of
    report.md's table (same ranking, same count). Student counts have integer ticks. Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(15, 4), gridspec_kw={"width_ratios": [1, 1, 1.2]})
    if summary.totals:
        hi = max(summary.max_total, max(summary.totals), 1.0)
        ax1.hist(summary.totals, bins=min(20, max(5, len(summary.totals))), range=(0, hi), color="#4472c4", edgecolor="white")
    ax1.set_xlabel(f"total score (max {summary.max_total:g})")
    ax1.set_ylabel("students")
    ax1.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count of students is a whole number
    ax1.set_title("Score histogram")
    stems = [s for s, mx in summary.exercise_max.items() if mx > 0]
    pct = [
        100 * statistics.fmean(summary.exercise_scores[s]) / summary.exercise_max[s]
        if summary.exercise_scores.get(s) and summary.exercise_max[s] > 0
        else 0.0
        for s in stems
    ]
    ax2.bar(range(len(stems)), pct, color="#70ad47")
    ax2.set_xticks(range(len(stems)), [s.split("_")[0] for s in stems])
    ax2.set_ylim(0, 100)
    ax2.set_ylabel("mean score, % of max")
    ax2.set_title("Per exercise (graded students)")
    mistakes = _ranked(summary.diagnoses)[:top]
    if mistakes:
        # Bars: the points the class lost to each mistake (a count of students alone is 1 for most
        # mistakes of a small class: ten bars of one height say nothing); the students are written on them.
        lost = [summary.diagnosis_points.get(d, 0.0) for d, _ in mistakes]
        ax3.barh(range(len(mistakes)), lost, color="#c00000")
        ax3.set_yticks(range(len(mistakes)), [d for d, _ in mistakes], fontsize=8)
        for i, ((_, n), x) in enumerate(zip(mistakes, lost)):
            ax3.text(x, i, f" {n} student{'s' if n != 1 else ''}", va="center", fontsize=7)
        ax3.set_xlim(0, max(lost, default=1.0) * 1.35 or 1.0)
        ax3.invert_yaxis()  # most common on top
    else:
        ax3.text(0.5, 0.5, "no diagnosed mistakes", ha="center", va="center", transform=ax3.transAxes)
    ax3.set_xlabel("points lost by the class")
    ax3.set_title("Most common diagnosed mistakes")
    fig.tight_layout()
    return fig


def preload_drawing() -> threading.Thread:
    """Import matplotlib's figure, Agg and pyplot modules on a daemon thread and return it (started).

    ``write_class_report`` then finds them loaded: a batch calls this when its last student is handed to a
    worker, so that about a second of imports runs while the last gradings do, not after them. Importing is
    all it does (nothing is drawn or written); an import error is left for ``write_class_report`` to raise.
    """

    def load() -> None:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot  # noqa: F401
            import matplotlib.ticker  # noqa: F401
        except Exception:  # noqa: BLE001 - the report itself raises it, where it is reported
            pass

    thread = threading.Thread(target=load, daemon=True, name="preload-report")
    thread.start()
    return thread


def plot_report(summary: ClassSummary, path: Path) -> Path:
    """Write `report_figure(summary)` to `path` as a PNG with the one atomic writer (``ppo_course.atomic_files``:
    a failed or killed drawing leaves the previous report.png whole and no temporary file that a rerun's sweep
    does not remove)."""
    import matplotlib.pyplot as plt

    from ppo_course.atomic_files import atomic_path

    fig = report_figure(summary)
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=100)
    finally:
        plt.close(fig)
    return path


def write_class_report(out_dir: Path, records: Iterable, results: dict | None = None) -> Path:
    """Write ``out_dir/report.md`` and ``out_dir/report.png``; returns the path of report.md.

    ``results``: {student id: typed ``GradeResult``} the batch still holds (see :func:`summarise`).
    """
    from ppo_course.atomic_files import atomic_write_text

    out_dir = Path(out_dir)
    records = list(records)
    summary = summarise(out_dir, records, results)
    plot_report(summary, out_dir / "report.png")
    from grader.reports.analytics import per_test_section  # per hidden test + report_tests.png

    return atomic_write_text(out_dir / "report.md", report_markdown(summary) + per_test_section(out_dir, records, results))

"""Per-test analytics of a graded batch: the part of the class report that says *which test* the class fails.

Called by ``grader.reports.report.write_class_report``; adds to ``report.md`` a table
per hidden test (pass rate, mean partial credit, the most common diagnosis on
it) and draws ``report_tests.png``, one heat map per exercise of its
hidden tests × pass rate (matplotlib, Agg).

Data: the batch's ``StudentRecord`` list (``grader.records.gradebook``) and each
student's typed result: the ``GradeResult`` the batch still holds, else the
published results.json read by ``grader.records.gradebook.load_result`` (the one
reader of that format).

Students are the gradebook's graded rows, nothing else: which folders are one
student's attempts is decided once, by the rule the TA states to
``grade-batch`` (``grader.intake.attempts``: a roster's ``attempts`` column or
``--attempts PATTERN``; with ``--latest-only`` each student's latest attempt is
graded under the student id), never guessed here from folder names, so that
the analytics and the gradebook count the same students with the same scores.
Earlier attempts left out by the rule are not graded (``attempts.md`` lists
them), so there is no per-attempt history to report.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from grader.records.gradebook import load_result

HEATMAP = "report_tests.png"


@dataclass
class TestStats:
    """Class numbers of one hidden test.

    ``pass_rate`` (passed with all its points: the full-marks rate) and ``mean_credit`` (mean of
    score / max_score) are fractions 0–1 over the ``n`` graded students (the gradebook's graded rows).
    ``passed``, ``gated`` and ``failed`` count students in the states results.json and feedback.md give the
    test (:func:`published_state`): passed with points, "passed, 0 points for now" (its twins or required tests
    have not passed), failed; they sum to ``n``. ``top_diagnosis`` is (id, students) of the first of
    ``top_diagnoses``, or None; ``top_diagnoses`` holds every diagnosis id sharing the top count among the
    failing students, in id order (a tie is a tie, never one name picked).
    """

    __test__ = False
    exercise: str
    test: str
    n: int
    pass_rate: float
    mean_credit: float
    top_diagnosis: tuple[str, int] | None
    passed: int = 0
    gated: int = 0
    failed: int = 0
    top_diagnoses: tuple[str, ...] = ()

    def diagnosis_text(self) -> str:
        """The "most common diagnosis" cell: "`a` (3 of 4 failing)", a tie as "`a`, `b` (2 each of 4 failing)",
        "–" without one."""
        if not self.top_diagnosis:
            return "–"
        names = self.top_diagnoses or (self.top_diagnosis[0],)
        each = " each" if len(names) > 1 else ""
        return f"{', '.join(f'`{d}`' for d in names)} ({self.top_diagnosis[1]}{each} of {self.failed} failing)"


#: The states of a test in results.json and feedback.md, in the report's column order.
PUBLISHED_STATES = ("passed", "gated", "failed")


def published_state(t) -> str:
    """The state a typed ``TestResult`` worth points is published in: "passed" (status passed with points),
    "gated" (status passed, 0 points: feedback.md's "passed, 0 points for now", its twins or required tests
    have not passed) or "failed" (any other status)."""
    if t.status != "passed":
        return "failed"
    return "gated" if t.score <= 0 < t.max_score else "passed"


def top_diagnoses(diagnoses: Counter) -> tuple[tuple[str, ...], int]:
    """(every id with the highest count, in id order; that count), or ((), 0) for no diagnosis."""
    if not diagnoses:
        return (), 0
    top = max(diagnoses.values())
    return tuple(sorted(d for d, n in diagnoses.items() if n == top)), top


def graded_students(out_dir: Path, records, results: dict | None = None) -> dict:
    """{student id: typed ``GradeResult``} of every graded gradebook row, one per student (module docstring).

    ``results``: {student id: typed ``GradeResult``} the batch still holds; any other student's
    published results.json is read with ``grader.records.gradebook.load_result``. A row whose results.json
    cannot be read maps to None.
    """
    results = results or {}
    return {r.student_id: results.get(r.student_id) or load_result(out_dir, r.student_id)
            for r in sorted(records, key=lambda r: r.student_id) if r.status == "graded"}


def per_test_stats(out_dir: Path, records, results: dict | None = None) -> list[TestStats]:
    """The class numbers of every hidden test worth points, in the results' order, over `graded_students`."""
    order: dict[tuple[str, str], int] = {}
    per_test: dict[tuple[str, str], list] = {}  # typed TestResult
    for view in graded_students(out_dir, records, results).values():
        for t in view.tests if view else []:
            if t.kind == "hidden" and t.max_score > 0:  # a 0-point test informs, it is not the class's score
                key = (t.exercise, t.test)
                order.setdefault(key, len(order))
                per_test.setdefault(key, []).append(t)
    stats = []
    for key in sorted(per_test, key=order.__getitem__):
        tests = per_test[key]
        diagnoses = Counter(t.diagnosis for t in tests if t.status != "passed" and t.diagnosis)
        names, count = top_diagnoses(diagnoses)
        credit = statistics.fmean(t.score / t.max_score if t.max_score > 0 else float(t.status == "passed")
                                  for t in tests)
        states = Counter(published_state(t) for t in tests)
        stats.append(TestStats(key[0], key[1], len(tests), sum(_full_marks(t) for t in tests) / len(tests), credit,
                               (names[0], count) if names else None, *(states[k] for k in PUBLISHED_STATES),
                               top_diagnoses=names))
    return stats


def _full_marks(t) -> bool:
    """A test passed with all its points: the pass rate's rule (a kept partial score is no pass)."""
    return t.status == "passed" and t.score >= t.max_score - 1e-9


def analytics_markdown(stats: list[TestStats], png_name: str | None = HEATMAP) -> str:
    """The "Per hidden test" section of report.md (hardest tests first within each exercise's order)."""
    lines = ["", "## Per hidden test", ""]
    if not stats:
        return "\n".join(lines + ["No hidden test was graded.", ""])
    if png_name:
        lines += [f"![full-marks rate per hidden test, one heat map per exercise]({png_name})", ""]
    students = max((s.n for s in stats), default=0)
    lines += [f"Rates over the gradebook's {students} graded students, one per row (a student's attempts are grouped "
              "by the rule stated to grade-batch, listed in attempts.md when a rule was given; 0-point tests, which only inform, are not "
              "listed). The states are those of results.json and feedback.md: *passed* (with points), *passed, 0 "
              "points for now* (its twins or required tests have not passed yet) and *failed*; *full marks* is "
              "passed with all its points.", "",
              "| exercise | hidden test | students | passed | passed, 0 points for now | failed | full marks "
              "| mean credit | most common diagnosis |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for s in stats:
        counts = " | ".join(f"{n} ({n / s.n:.0%})" for n in (s.passed, s.gated, s.failed))
        lines.append(f"| `{s.exercise}` | `{s.test}` | {s.n} | {counts} | {s.pass_rate:.0%} | {s.mean_credit:.0%} "
                     f"| {s.diagnosis_text()} |")
    return "\n".join(lines) + "\n"


def plot_heatmap(stats: list[TestStats], path: Path) -> Path | None:
    """Draw one heat map per exercise (rows: its hidden tests; colour: pass rate) into a PNG; None if no test."""
    if not stats:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    exercises = list(dict.fromkeys(s.exercise for s in stats))
    heights = [max(1, sum(s.exercise == e for s in stats)) for e in exercises]
    fig, axes = plt.subplots(len(exercises), 1, figsize=(7, 0.9 + 0.32 * sum(heights) + 0.35 * len(exercises)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    image = None
    for ax, exercise in zip(axes[:, 0], exercises):
        rows = [s for s in stats if s.exercise == exercise]
        rates = np.array([[s.pass_rate] for s in rows])
        image = ax.imshow(rates, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        ax.set_yticks(range(len(rows)), [s.test for s in rows], fontsize=7)
        ax.set_xticks([])
        ax.set_title(exercise, fontsize=9, loc="left")
        for i, s in enumerate(rows):
            ax.text(0, i, f"{s.pass_rate:.0%}", ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=axes[:, 0].tolist(), label="full-marks rate", shrink=0.6)
    from ppo_course.atomic_files import atomic_path

    try:
        with atomic_path(path) as tmp:  # the one atomic writer: no litter a rerun's sweep misses
            fig.savefig(tmp, format="png", dpi=100, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def per_test_section(out_dir: Path, records, results: dict | None = None) -> str:
    """Draw ``report_tests.png`` into ``out_dir`` and return the markdown section for report.md (``results``: as
    :func:`per_test_stats`)."""
    stats = per_test_stats(out_dir, list(records), results)
    png = plot_heatmap(stats, Path(out_dir) / HEATMAP)
    return analytics_markdown(stats, HEATMAP if png else None)

"""Per-test analytics of a graded batch: the part of the class report that says *which test* the class fails.

Called by ``grader.reports.report.write_class_report``; adds to ``report.md`` a table
per hidden test (pass rate, mean partial credit, the most common diagnosis on
it, and, when the class has resubmissions, the mean number of attempts to
full marks) and draws ``report_tests.png``, one heat map per exercise of its
hidden tests × pass rate (matplotlib, Agg).

Data: the batch's ``StudentRecord`` list (``grader.records.gradebook``) and each
student's typed result: the ``GradeResult`` the batch still holds, else the
published results.json read by ``grader.records.gradebook.load_result`` (the one
reader of that format).

Resubmissions follow the naming rule of ``grader.reports.regrade.parse_attempt``
(``alice``, ``alice_2``, ``alice_<timestamp>``): rates and diagnoses are
taken on each student's latest graded attempt, attempts-to-full-marks on the
whole history.
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

    ``pass_rate`` and ``mean_credit`` (mean of score / max_score) are fractions
    0–1 over the ``n`` students whose latest attempt was graded;
    ``top_diagnosis`` is (id, students) or None; ``attempts_to_full`` is the
    mean attempt number at which students first got full marks (None without
    resubmissions), ``reached_full`` how many did.
    """

    __test__ = False
    exercise: str
    test: str
    n: int
    pass_rate: float
    mean_credit: float
    top_diagnosis: tuple[str, int] | None
    attempts_to_full: float | None = None
    reached_full: int = 0


def per_test_stats(out_dir: Path, records, results: dict | None = None) -> tuple[list[TestStats], bool]:
    """(stats of every hidden test, in the results' order; whether the class has resubmissions).

    ``results``: {student id: typed ``GradeResult``} the batch still holds; any other student's
    published results.json is read with ``grader.records.gradebook.load_result``.
    """
    from grader.reports.regrade import attempts_by_student

    graded = {r.student_id for r in records if r.status == "graded"}
    history = attempts_by_student(sorted(graded))  # the gradebook's rows grouped into students
    resubmissions = any(len(ids) > 1 for ids in history.values())
    results = results or {}
    views = {sid: results.get(sid) or load_result(out_dir, sid) for sid in graded}
    order: dict[tuple[str, str], int] = {}
    latest: dict[tuple[str, str], list] = {}  # typed TestResult
    for ids in history.values():
        view = views.get(ids[-1])
        for t in view.tests if view else []:
            if t.kind == "hidden" and t.max_score > 0:  # a 0-point test informs, it is not the class's score
                key = (t.exercise, t.test)
                order.setdefault(key, len(order))
                latest.setdefault(key, []).append(t)
    stats = []
    for key in sorted(latest, key=order.__getitem__):
        tests = latest[key]
        diagnoses = Counter(t.diagnosis for t in tests if t.status != "passed" and t.diagnosis)
        top = min(diagnoses.items(), key=lambda kv: (-kv[1], kv[0])) if diagnoses else None
        s = TestStats(key[0], key[1], len(tests), sum(_full_marks(t) for t in tests) / len(tests),
                      statistics.fmean(t.score / t.max_score if t.max_score > 0 else float(t.status == "passed")
                                       for t in tests), top)
        if resubmissions:
            firsts = []
            for ids in history.values():
                for attempt, sid in enumerate(ids, 1):
                    view = views.get(sid)
                    hit = [t for t in (view.tests if view else []) if (t.exercise, t.test) == key]
                    if hit and _full_marks(hit[0]):
                        firsts.append(attempt)
                        break
            s.reached_full = len(firsts)
            s.attempts_to_full = statistics.fmean(firsts) if firsts else None
        stats.append(s)
    return stats, resubmissions


def _full_marks(t) -> bool:
    """A test passed with all its points: the one rule of both the pass rate and attempts to full marks."""
    return t.status == "passed" and t.score >= t.max_score - 1e-9


def analytics_markdown(stats: list[TestStats], resubmissions: bool, png_name: str | None = HEATMAP,
                       n_rows: int | None = None) -> str:
    """The "Per hidden test" section of report.md (hardest tests first within each exercise's order)."""
    lines = ["", "## Per hidden test", ""]
    if not stats:
        return "\n".join(lines + ["No hidden test was graded.", ""])
    if png_name:
        lines += [f"![pass rate per hidden test, one heat map per exercise]({png_name})", ""]
    head = "| exercise | hidden test | students | pass rate | mean credit | most common diagnosis |"
    rule = "| --- | --- | ---: | ---: | ---: | --- |"
    if resubmissions:
        head += " attempts to full marks |"
        rule += " ---: |"
    students = max((s.n for s in stats), default=0)
    if resubmissions and n_rows is not None:
        lines += [f"The gradebook's {n_rows} graded submissions are {students} students' attempts (folders named "
                  "`alice`, `alice_2`, ... by `grader.reports.regrade.parse_attempt`): rates on each student's latest "
                  "graded submission, attempts over all of them.", ""]
    else:
        lines += [f"Rates on each student's latest graded submission ({students} students; 0-point tests, "
                  "which only inform, are not listed).", ""]
    lines += [head, rule]
    for s in stats:
        failed = s.n - round(s.pass_rate * s.n)
        diag = f"`{s.top_diagnosis[0]}` ({s.top_diagnosis[1]} of {failed} failing)" if s.top_diagnosis else "–"
        row = (f"| `{s.exercise}` | `{s.test}` | {s.n} | {s.pass_rate:.0%} | {s.mean_credit:.0%} | {diag} |")
        if resubmissions:
            row += (f" {s.attempts_to_full:.1f} ({s.reached_full} students) |" if s.attempts_to_full is not None
                    else " never |")
        lines.append(row)
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
    fig.colorbar(image, ax=axes[:, 0].tolist(), label="pass rate", shrink=0.6)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=100, bbox_inches="tight")
    plt.close(fig)
    tmp.replace(path)  # atomic, like every other batch output
    return path


def per_test_section(out_dir: Path, records, results: dict | None = None) -> str:
    """Draw ``report_tests.png`` into ``out_dir`` and return the markdown section for report.md (``results``: as
    :func:`per_test_stats`)."""
    records = list(records)
    stats, resubmissions = per_test_stats(out_dir, records, results)
    png = plot_heatmap(stats, Path(out_dir) / HEATMAP)
    return analytics_markdown(stats, resubmissions, HEATMAP if png else None,
                              n_rows=sum(r.status == "graded" for r in records))

"""Per-test analytics of a graded batch: the part of the class report that says *which test* the class fails.

Called by ``grader.report.write_class_report``; adds to ``report.md`` a table
per hidden test (pass rate, mean partial credit, the most common diagnosis on
it, and, when the class has resubmissions, the mean number of attempts to
full marks) and draws ``report_tests.png``, one heat map per exercise of its
hidden tests × pass rate (matplotlib, Agg).

Data: the batch's ``StudentRecord`` list (``grader.records``) and each
student's ``results.json`` validated into :class:`ResultsView` (the
contract's schema: ``tests[].name/score/max_score/status/tags``; the module
stem is ``tags[0]``, the kind ``tags[1]``, a diagnosis the tag
``diagnosis:<id>``, as ``GradeResult.to_results_json`` writes them).

Resubmissions follow the naming rule of ``grader.regrade.parse_attempt``
(``alice``, ``alice_2``, ``alice_<timestamp>``): rates and diagnoses are
taken on each student's latest graded attempt, attempts-to-full-marks on the
whole history.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

HEATMAP = "report_tests.png"
DIAGNOSIS_TAG = "diagnosis:"


class TestView(BaseModel):
    """One entry of results.json's ``tests`` (the fields the analytics read)."""

    __test__ = False
    model_config = ConfigDict(extra="ignore")

    name: str
    score: float
    max_score: float
    status: str
    tags: list[str] = Field(default_factory=list)

    @property
    def exercise(self) -> str:
        """The module stem (``tags[0]``)."""
        return self.tags[0] if self.tags else ""

    @property
    def kind(self) -> str:
        """``hidden`` or ``public`` (``tags[1]``)."""
        return self.tags[1] if len(self.tags) > 1 else ""

    @property
    def diagnosis(self) -> str | None:
        """The ``diagnosis:<id>`` tag's id, or None."""
        return next((t[len(DIAGNOSIS_TAG):] for t in self.tags if t.startswith(DIAGNOSIS_TAG)), None)

    @property
    def short_name(self) -> str:
        """The test function's name (the last part of "<stem> · <kind> · <test>")."""
        return self.name.rsplit(" · ", 1)[-1]


class ResultsView(BaseModel):
    """A results.json as the analytics read it."""

    model_config = ConfigDict(extra="ignore")

    tests: list[TestView] = Field(default_factory=list)


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


def load_results(out_dir: Path, student_id: str) -> ResultsView | None:
    """The validated results.json of one student, or None when absent or not in the schema."""
    try:
        return ResultsView.model_validate_json((Path(out_dir) / student_id / "results.json").read_bytes())
    except (OSError, ValidationError):
        return None


def per_test_stats(out_dir: Path, records) -> tuple[list[TestStats], bool]:
    """(stats of every hidden test, in the results' order; whether the class has resubmissions)."""
    from grader.regrade import attempts_by_student

    graded = {r.student_id for r in records if r.status == "graded"}
    history = attempts_by_student(sorted(graded))
    resubmissions = any(len(ids) > 1 for ids in history.values())
    views = {sid: load_results(out_dir, sid) for sid in graded}
    order: dict[tuple[str, str], int] = {}
    latest: dict[tuple[str, str], list[TestView]] = {}
    for ids in history.values():
        view = views.get(ids[-1])
        for t in view.tests if view else []:
            if t.kind == "hidden":
                key = (t.exercise, t.short_name)
                order.setdefault(key, len(order))
                latest.setdefault(key, []).append(t)
    stats = []
    for key in sorted(latest, key=order.__getitem__):
        tests = latest[key]
        diagnoses = Counter(t.diagnosis for t in tests if t.status != "passed" and t.diagnosis)
        top = min(diagnoses.items(), key=lambda kv: (-kv[1], kv[0])) if diagnoses else None
        s = TestStats(key[0], key[1], len(tests), sum(t.status == "passed" for t in tests) / len(tests),
                      statistics.fmean(t.score / t.max_score if t.max_score > 0 else float(t.status == "passed")
                                       for t in tests), top)
        if resubmissions:
            firsts = []
            for ids in history.values():
                for attempt, sid in enumerate(ids, 1):
                    view = views.get(sid)
                    hit = [t for t in (view.tests if view else []) if (t.exercise, t.short_name) == key]
                    if hit and hit[0].max_score > 0 and hit[0].score >= hit[0].max_score - 1e-9:
                        firsts.append(attempt)
                        break
            s.reached_full = len(firsts)
            s.attempts_to_full = statistics.fmean(firsts) if firsts else None
        stats.append(s)
    return stats, resubmissions


def analytics_markdown(stats: list[TestStats], resubmissions: bool, png_name: str | None = HEATMAP) -> str:
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
    lines += ["Rates on each student's latest graded submission.", "", head, rule]
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


def per_test_section(out_dir: Path, records) -> str:
    """Draw ``report_tests.png`` into ``out_dir`` and return the markdown section for report.md."""
    stats, resubmissions = per_test_stats(out_dir, records)
    png = plot_heatmap(stats, Path(out_dir) / HEATMAP)
    return analytics_markdown(stats, resubmissions, HEATMAP if png else None)

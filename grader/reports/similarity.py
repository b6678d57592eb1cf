"""Offline code similarity across a class, earlier cohorts and public implementations (copydetect).

``ppo-course similarity SUBMISSIONS_DIR --out DIR`` lands here
(:func:`run_similarity`). Student code is only *read as text*: every
submission goes through the batch's own intake (``grader.intake.class_list.discover`` and
``ppo_course.submission_rules.stage_submission``: the same size, zip-bomb, path and symlink
checks as grading) into a temporary folder, and each ``.py`` file is decoded
and fingerprinted by copydetect (pygments tokens, winnowing; Schleimer et al.
2003, "Winnowing: local algorithms for document fingerprinting"). Nothing is
imported, executed or uploaded.

What is compared (a *unit* is one owner's module):

* class × class: the same exercise module (``ex4_gae.py`` with ``ex4_gae.py``)
  of two students; a student's other modules (helpers) form one unit
  ``(helpers)`` compared with the other students' helpers;
* class × ``--archive DIR`` (an earlier cohort's submissions folder, one
  sub-folder or zip per student): the same module;
* class × ``--reference-impl DIR`` (public implementations the instructor
  collected, any ``.py`` files): every student module against every file.

The stubs (``exercises/``) are boilerplate: their fingerprints never count as
overlap, so handing in an untouched stub is not "similar".

Thresholds (:class:`SimilarityConfig`) were chosen by measuring honest and
copied pairs (``tests/ta/similarity_calibration.py``; the numbers are in
docs/ta_guide.md "Similarity"): a pair is flagged when the share of either
file's fingerprinted code that matches the other is at least ``threshold``
*and* the matching code is at least ``min_overlap`` tokens long, so that two
short files that both type in the book's formulas (eq. 5.1, 5.20, GAE) are
not flagged for that alone.
"""

from __future__ import annotations

import csv
import html
import io
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ppo_course.syllabus import EXERCISES
from grader.reports.code_loading import decode_source

HELPERS = "(helpers)"
CSV_NAME = "flagged_pairs.csv"
ALL_CSV_NAME = "all_pairs.csv"
HTML_NAME = "similarity.html"
CSV_COLUMNS = ("student_a", "student_b", "module", "similarity_a", "similarity_b", "overlap_tokens", "flagged")


class SimilarityConfig(BaseModel):
    """copydetect's parameters and the flagging rule, tuned for short numerical code.

    ``noise_t``: k-gram length in characters of *tokenised* code (copydetect's
    noise threshold: names become ``V``/``F``, so a formula line is short);
    ``guarantee_t``: a match this long is always found (winnowing window =
    guarantee_t − noise_t + 1); ``threshold``: share (0–1) of a file's
    fingerprinted code found in the other; ``min_overlap``: shortest total
    matching code (tokenised characters) that may flag a pair.
    """

    model_config = ConfigDict(frozen=True)

    noise_t: int = Field(25, ge=5, description="k-gram length, tokenised characters")
    guarantee_t: int = Field(25, ge=5, description="shortest match always detected, tokenised characters")
    threshold: float = Field(0.65, gt=0, le=1, description="share of a file's fingerprinted code matched")
    min_overlap: int = Field(100, ge=0, description="shortest total match that may flag a pair, tokenised characters")


@dataclass
class Unit:
    """One fingerprinted piece of code: ``owner`` (student id, ``archive:…``, ``reference:…``), ``module``, text."""

    owner: str
    module: str
    text: str
    kind: str  # "class", "archive" or "reference"
    fingerprint: object = None


@dataclass
class PairResult:
    """The comparison of two units: share of each matched (0–1), matched tokens, flagged or not."""

    a: Unit
    b: Unit
    similarity_a: float
    similarity_b: float
    overlap_tokens: int
    flagged: bool
    highlighted_a: str = ""
    highlighted_b: str = ""

    @property
    def score(self) -> float:
        """max(similarity_a, similarity_b): copying into a longer file still shows on the shorter one."""
        return max(self.similarity_a, self.similarity_b)


@dataclass
class SimilarityReport:
    """Every compared pair (sorted, most similar first), the flagged ones, and what was read."""

    pairs: list[PairResult]
    config: SimilarityConfig
    n_students: int
    notes: list[str] = field(default_factory=list)
    review: list = field(default_factory=list)  # grader.reports.code_loading.Finding: code similarity cannot see

    @property
    def flagged(self) -> list[PairResult]:
        """The pairs over the thresholds, most similar first."""
        return [p for p in self.pairs if p.flagged]


# --------------------------------------------------------------------------- reading


def _units_of_folder(root: Path, owner: str, kind: str) -> list[Unit]:
    """One unit per contract module found under ``root`` (any depth), other ``.py`` files joined as helpers."""
    by_module: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(root).parts):
            continue
        module = path.stem if path.stem in EXERCISES else HELPERS
        by_module.setdefault(module, []).append(decode_source(path.read_bytes()))
    return [Unit(owner, m, "\n\n".join(texts), kind) for m, texts in sorted(by_module.items())]


def latest_only(attempt_rule) -> bool:
    """Whether ``attempt_rule`` groups folders into attempts (a roster's ``attempts`` column or a pattern): then
    only each student's latest attempt is compared; a roster without attempts only names the folders."""
    return attempt_rule is not None and attempt_rule.stated


def read_cohort(submissions_dir: Path, *, kind: str = "class", prefix: str = "",
                notes: list[str] | None = None, review: list | None = None, attempt_rule=None) -> list[Unit]:
    """The units of every student of a submissions folder, through the batch's intake checks.

    Each student (sub-folder or zip, ``grader.intake.class_list.discover``) is staged with
    ``ppo_course.submission_rules.stage_submission`` into a temporary folder and read as
    text; a submission the intake rejects is left out with a note. Every staged
    file is also scanned for code loaded from data (``grader.reports.code_loading``):
    the findings are appended to ``review``. With ``attempt_rule`` (``grader.intake.attempts.AttemptRule``, the
    rule ``grade-batch`` uses: ``--roster`` / ``--attempts``), folders are grouped by student
    (``grader.intake.class_list.class_list``) and only each student's latest attempt is read, under the student
    id, so a student's resubmission is never compared with their own earlier attempt.

    Raises:
        NotADirectoryError: if ``submissions_dir`` is not a folder.
    """
    from grader.intake.class_list import class_list
    from ppo_course.submission_rules import Rejected, SubmissionLimits, stage_submission

    notes = notes if notes is not None else []
    entries, warnings, _ = class_list(Path(submissions_dir), latest_only(attempt_rule), attempt_rule)
    notes.extend(warnings)
    units: list[Unit] = []
    tmp = Path(tempfile.mkdtemp(prefix="ppo-course-similarity-"))
    try:
        for entry in entries:
            dest = tmp / entry.student_id
            try:
                stage_submission(entry, dest, SubmissionLimits())
            except Rejected as exc:
                notes.append(f"{prefix}{entry.student_id}: not compared, the intake rejected it ({exc})")
                continue
            units += _units_of_folder(dest, prefix + entry.student_id, kind)
            if review is not None:
                from grader.reports.code_loading import scan_submission

                review += scan_submission(dest, prefix + entry.student_id)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return units


def read_references(folder: Path) -> list[Unit]:
    """Every ``.py`` file under ``folder`` as a reference unit named ``reference:<relative path>``.

    Raises:
        NotADirectoryError: if ``folder`` is not a folder.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"--reference-impl {folder} is not a folder")
    return [Unit(f"reference:{p.relative_to(folder).as_posix()}", "(any)", decode_source(p.read_bytes()), "reference")
            for p in sorted(folder.rglob("*.py")) if "__pycache__" not in p.parts]


# ------------------------------------------------------------------------- comparing


def _boilerplate_hashes(stubs_dir: Path | None, config: SimilarityConfig):
    import numpy as np
    from copydetect import CodeFingerprint

    hashes: list[int] = []
    if stubs_dir is not None and Path(stubs_dir).is_dir():
        for path in sorted(Path(stubs_dir).glob("*.py")):
            fp = CodeFingerprint(str(path), config.noise_t, 1, fp=io.StringIO(decode_source(path.read_bytes())))
            hashes.extend(fp.hashes)
    return np.unique(np.array(hashes, dtype=np.int64))


def _fingerprint(unit: Unit, config: SimilarityConfig, boilerplate) -> None:
    from copydetect import CodeFingerprint

    window = config.guarantee_t - config.noise_t + 1
    # The name only tells pygments the language: the text comes from fp, never from disk.
    unit.fingerprint = CodeFingerprint(f"{unit.module}.py", config.noise_t, window, boilerplate,
                                       fp=io.StringIO(unit.text))


def compare_units(a: Unit, b: Unit, config: SimilarityConfig, *, highlight: bool = False) -> PairResult:
    """Compare two fingerprinted units with ``copydetect.compare_files``; flag by :class:`SimilarityConfig`."""
    from copydetect import compare_files
    from copydetect.utils import highlight_overlap

    overlap, (sim_a, sim_b), (slices_a, slices_b) = compare_files(a.fingerprint, b.fingerprint)
    sim_a, sim_b, overlap = float(sim_a), float(sim_b), int(overlap)
    flagged = max(sim_a, sim_b) >= config.threshold and overlap >= config.min_overlap
    pair = PairResult(a, b, sim_a, sim_b, overlap, flagged)
    if highlight and overlap > 0:
        pair.highlighted_a, _ = highlight_overlap(a.text, slices_a, "<mark>", "</mark>", escape_html=True)
        pair.highlighted_b, _ = highlight_overlap(b.text, slices_b, "<mark>", "</mark>", escape_html=True)
    return pair


def _comparable(a: Unit, b: Unit) -> bool:
    if a.owner == b.owner:
        return False
    if b.kind == "reference":
        return a.kind == "class"
    if b.kind == "archive":
        return a.kind == "class" and a.module == b.module
    return a.kind == "class" and b.kind == "class" and a.module == b.module


def compare(units: list[Unit], config: SimilarityConfig | None = None, stubs_dir: Path | None = None,
            n_students: int = 0, notes: Iterable[str] = ()) -> SimilarityReport:
    """Fingerprint every unit (stubs as boilerplate) and compare the pairs the module docstring lists.

    Returns:
        a :class:`SimilarityReport`, pairs sorted by descending score, then names (deterministic).
    """
    config = config or SimilarityConfig()
    boilerplate = _boilerplate_hashes(stubs_dir, config)
    for unit in units:
        _fingerprint(unit, config, boilerplate)
    pairs = []
    for i, a in enumerate(units):
        for b in units[i + 1:] if a.kind == "class" else []:
            if _comparable(a, b):
                pairs.append(compare_units(a, b, config))
    for i, pair in enumerate(pairs):
        if pair.flagged:  # the highlighted text is only needed for the report's flagged pairs
            pairs[i] = compare_units(pair.a, pair.b, config, highlight=True)
    pairs.sort(key=lambda p: (-round(p.score, 6), p.a.owner, p.b.owner, p.a.module))
    return SimilarityReport(pairs, config, n_students, list(notes))


def default_stubs_dir() -> Path | None:
    """The repository's ``exercises/`` folder (the stubs) when the source tree is present, else None."""
    import grader

    stubs = Path(grader.__file__).resolve().parent.parent / "exercises"
    return stubs if stubs.is_dir() else None


# --------------------------------------------------------------------------- writing


def _row(p: PairResult) -> list[str]:
    from ppo_course.text_safety import csv_cell as neutralise_cell

    module = p.a.module if p.b.kind != "reference" else f"{p.a.module} vs {p.b.module}"
    return [neutralise_cell(p.a.owner), neutralise_cell(p.b.owner), neutralise_cell(module),
            f"{p.similarity_a:.3f}", f"{p.similarity_b:.3f}", str(p.overlap_tokens), "yes" if p.flagged else "no"]


def pairs_csv(pairs: Iterable[PairResult]) -> str:
    """CSV text with :data:`CSV_COLUMNS`, one row per pair (cells that a spreadsheet would run are neutralised)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for p in pairs:
        writer.writerow(_row(p))
    return buf.getvalue()


_CSS = """body{font-family:sans-serif;margin:1.5em}table.pair{width:100%;border-collapse:collapse;table-layout:fixed}
table.pair td{vertical-align:top;width:50%;border:1px solid #ccc;padding:4px}
pre{white-space:pre-wrap;font-size:12px;margin:0}mark{background:#ffd0d0}
table.list td,table.list th{border:1px solid #ccc;padding:2px 6px}"""


def report_html(report: SimilarityReport) -> str:
    """The side-by-side HTML report: the list of flagged pairs, then each pair's code with the matches marked.

    Every name and every line of student code is HTML-escaped (copydetect's
    ``highlight_overlap(..., escape_html=True)`` for the code).
    """
    c = report.config
    e = html.escape
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>Similarity report</title>",
           f"<style>{_CSS}</style></head><body><h1>Similarity report</h1>",
           f"<p>{report.n_students} students, {len(report.pairs)} module pairs compared (the same exercise "
           f"module of two students, helpers with helpers, and each module against archives and references), "
           f"<b>{len(report.flagged)} flagged</b> (share matched ≥ {c.threshold:g} and match ≥ {c.min_overlap} "
           f"tokenised characters; k = {c.noise_t}, guarantee = {c.guarantee_t}; stubs as boilerplate).</p>",
           "<p>A flag is a reason to read two files side by side, not a verdict.</p>"]
    for note in report.notes:
        out.append(f"<p><i>{e(note)}</i></p>")
    from grader.reports.code_loading import review_html

    out.append(review_html(report.review))
    if report.flagged:
        out.append("<table class='list'><tr><th>#</th><th>A</th><th>B</th><th>module</th><th>share A</th>"
                   "<th>share B</th><th>matched tokens</th></tr>")
        for i, p in enumerate(report.flagged, 1):
            out.append(f"<tr><td><a href='#p{i}'>{i}</a></td><td>{e(p.a.owner)}</td><td>{e(p.b.owner)}</td>"
                       f"<td>{e(p.a.module)}</td><td>{p.similarity_a:.0%}</td><td>{p.similarity_b:.0%}</td>"
                       f"<td>{p.overlap_tokens}</td></tr>")
        out.append("</table>")
    for i, p in enumerate(report.flagged, 1):
        out.append(f"<h2 id='p{i}'>{i}. {e(p.a.owner)} ↔ {e(p.b.owner)} · {e(p.a.module)} "
                   f"({p.similarity_a:.0%} / {p.similarity_b:.0%})</h2>")
        out.append(f"<table class='pair'><tr><th>{e(p.a.owner)}</th><th>{e(p.b.owner)}</th></tr>"
                   f"<tr><td><pre>{p.highlighted_a}</pre></td><td><pre>{p.highlighted_b}</pre></td></tr></table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def write_report(report: SimilarityReport, out_dir: Path) -> dict[str, Path]:
    """Write ``similarity.html``, ``flagged_pairs.csv``, ``all_pairs.csv`` and ``flagged_for_review.csv`` (atomically)."""
    from grader.reports.code_loading import REVIEW_CSV, review_csv
    from ppo_course.atomic_files import atomic_write_text

    out_dir = Path(out_dir)
    return {
        "html": atomic_write_text(out_dir / HTML_NAME, report_html(report)),
        "flagged": atomic_write_text(out_dir / CSV_NAME, pairs_csv(report.flagged)),
        "all": atomic_write_text(out_dir / ALL_CSV_NAME, pairs_csv(report.pairs)),
        "review": atomic_write_text(out_dir / REVIEW_CSV, review_csv(report.review)),
    }


def run_similarity(submissions_dir: Path, out_dir: Path, *, archives: Iterable[Path] = (),
                   references: Iterable[Path] = (), stubs_dir: Path | None = None,
                   config: SimilarityConfig | None = None, attempt_rule=None) -> SimilarityReport:
    """Read a class (and archives, references), compare, write the report; see the module docstring.

    ``attempt_rule``: ``grade-batch``'s rule for attempt folders (``grader.intake.attempts.AttemptRule``); with it
    only each student's latest attempt is compared (:func:`read_cohort`).

    Raises:
        NotADirectoryError: if a given folder does not exist.
        grader.intake.attempts.AttemptRuleError: an ``attempt_rule`` without a stated grouping.
    """
    from grader.intake.class_list import class_list

    notes: list[str] = []
    review: list = []
    n_students = len(class_list(Path(submissions_dir), latest_only(attempt_rule), attempt_rule)[0])
    units = read_cohort(Path(submissions_dir), notes=notes, review=review, attempt_rule=attempt_rule)
    for archive in archives:
        units += read_cohort(Path(archive), kind="archive", prefix=f"archive:{Path(archive).name}/", notes=notes)
    for reference in references:
        units += read_references(Path(reference))
    report = compare(units, config, stubs_dir if stubs_dir is not None else default_stubs_dir(),
                     n_students=n_students, notes=notes)
    report.review = review
    write_report(report, out_dir)
    return report

"""What ``ppo-course check`` prints: one row per exercise, in the grader's state words, then the table.

Reads a typed :class:`~ppo_course.check_support.results.CheckRun` (never a traceback's text): the
state of a module that did not import, its error type, file and line, and the functions still
raising ``NotImplementedError`` all come from the child's ``ModuleReport``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ppo_course.check_support.guard import MANY_LINES
from ppo_course.check_support.results import CheckRun, ModuleReport, TestOutcome
from ppo_course.grading_kit.states import ExerciseState

#: Diagnoses that mean "another module could not be used" (said once per reason, no box).
_UNAVAILABLE = ("module_missing", "module_broken")
#: Lines of printed output shown per test (the child keeps at most `guard.KEEP_CHARS` characters).
SHOWN_OUTPUT_LINES = 40


@dataclass
class Row:
    """One exercise in the summary.

    ``state``: the grader's word (``grading_kit.states``); ``status``: what the table shows ("module not
    found", "syntax error line N", "does not import (Error)", "not implemented", "all passed", "K/N passed"
    plus ", M not implemented" / ", M wrong signature"); ``lines``: one-line notes; ``panels``: the failed
    tests that ran and deserve a box.
    """

    stem: str
    passed: int
    total: int
    state: ExerciseState = "graded"
    status: str = ""
    lines: list[str] = field(default_factory=list)
    panels: list[TestOutcome] = field(default_factory=list)


def import_status(stem: str, report: ModuleReport) -> str:
    """"syntax error line N", "does not import (NameError)", or, for an error in a file the module imports,
    "does not import (syntax error in ex4_gae.py line N)"."""
    if report.state == "syntax_error":
        where = f" line {report.error_line}" if report.error_line is not None else ""
        if report.error_file in (None, f"{stem}.py"):
            return f"syntax error{where}"
        return f"does not import (syntax error in {report.error_file}{where})"
    return f"does not import ({report.error_type or 'error'})"


def _first_line(o: TestOutcome) -> str:
    return (o.detail.strip().splitlines() or [o.diagnosis or ""])[0]


def _notes(row: Row, stem: str, failed: list[TestOutcome], report: ModuleReport) -> list[TestOutcome]:
    """Add the one-line notes of ``row`` (signatures, waiting tests, other modules); the tests left for a box."""
    not_impl = [o for o in failed if o.diagnosis == "not_implemented"]
    wrong_sig = [o for o in failed if o.diagnosis == "wrong_signature"]
    unavailable = [o for o in failed if o.diagnosis in _UNAVAILABLE]
    # The signatures are compared with the stubs' before a function runs: one line per function.
    for problem in dict.fromkeys(o.detail.split("\n")[0] for o in wrong_sig):
        count = sum(o.detail.split("\n")[0] == problem for o in wrong_sig)
        row.lines.append(f"{stem}: {problem} ({count} test{'s' if count != 1 else ''} could not call it)")
    if not_impl:
        names = report.not_implemented or list(dict.fromkeys(o.test for o in not_impl))
        row.lines.append(f"{stem} [not_implemented]: {', '.join(names)} still raise"
                         f"{'s' if len(names) == 1 else ''} NotImplementedError; "
                         f"{len(not_impl)} test{'s' if len(not_impl) != 1 else ''} waiting")
    # A sibling module that is missing or broken (e.g. ex7 using your ex1-ex6): said once per reason.
    for reason in dict.fromkeys(_first_line(o) for o in unavailable):
        count = sum(_first_line(o) == reason for o in unavailable)
        row.lines.append(f"{stem}: {count} test(s) need another module: {reason}")
    row.status = (f"{row.passed}/{row.total} passed" + (f", {len(not_impl)} not implemented" if not_impl else "")
                  + (f", {len(wrong_sig)} wrong signature" if wrong_sig else ""))
    if row.total and len(not_impl) == row.total:
        row.state, row.status = "not_implemented", "not implemented"
    elif row.total and row.passed == row.total:
        row.status = "all passed"
    return [o for o in failed if o not in not_impl and o not in unavailable and o not in wrong_sig]


def summarise(run: CheckRun, exercises_dir: Path, stems: list[str]) -> list[Row]:
    """One :class:`Row` per exercise of ``stems``, from the typed results of a run on ``exercises_dir``.

    A module whose own import failed is said once (its error in full the first time it is seen: a
    sibling's error reached through two imports is printed once), not per test.
    """
    rows = []
    shown: set[tuple] = set()
    for stem in stems:
        mine = [o for o in run.outcomes if o.exercise == stem]
        row = Row(stem, sum(o.passed for o in mine), len(mine))
        rows.append(row)
        report = run.module(stem)
        if not (exercises_dir / f"{stem}.py").is_file():
            row.state, row.status = "missing", "module not found"
            row.lines.append(f"{stem}.py is not in {exercises_dir}")
        elif report.state in ("syntax_error", "import_error"):
            row.state, row.status = report.state, import_status(stem, report)
            key = (report.error_type, report.error_file, report.error_line) if report.error_file else (stem,)
            said = " (the error is shown above)" if key in shown else \
                ":\n" + "\n".join("    " + ln for ln in report.detail.splitlines())
            shown.add(key)
            row.lines.append(f"{stem}.py: {row.status}; its {len(mine)} test(s) did not run{said}")
        else:
            row.panels = _notes(row, stem, [o for o in mine if not o.passed], report)
    return rows


def _printed(text: str) -> str:
    """What a test printed, cut to `SHOWN_OUTPUT_LINES` lines (not yet escaped)."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) > SHOWN_OUTPUT_LINES:
        lines = lines[:SHOWN_OUTPUT_LINES] + [f"[... {len(lines) - SHOWN_OUTPUT_LINES} more lines not shown]"]
    return "\n".join(lines)


def _panels(console, rows: list[Row], run: CheckRun, show_output: bool) -> None:
    """One red box per test that ran and failed; with ``show_output``, a blue box per test that printed."""
    from rich.markup import escape
    from rich.panel import Panel

    from ppo_course.grading_kit.diagnoses import DIAGNOSES

    for row in rows:
        for o in row.panels:
            diagnosis = o.diagnosis or "wrong_value"
            body = f"{escape(o.doc)}\n\n[bold]{diagnosis}[/]: {escape(DIAGNOSES.get(diagnosis, ''))}"
            if o.detail:
                body += "\n\n" + escape(o.detail)
            if o.output:
                body += "\n\n[bold]your code printed:[/]\n" + escape(_printed(o.output))
            console.print(Panel(body, title=f"{o.exercise} · {o.test}", border_style="red"))
    if show_output:
        for o in run.outcomes:
            text = o.passed_output if o.passed else (o.output if not o.detail else "")
            if text:
                console.print(Panel(escape(_printed(text)), title=f"{o.exercise} · {o.test}: printed",
                                    border_style="blue"))


def render(run: CheckRun, exercises_dir: Path, stems: list[str], console=None, show_output: bool = False,
           signatures: dict | None = None) -> int:
    """Print the notes, one box per test that ran and failed (with what the code printed in it), then the
    summary table (last, so it stays on screen); return the exit status (0 all passed, 1 otherwise).

    ``show_output``: also show what passing tests printed. ``signatures``: {stem: {function: problem}}
    from ``signatures.signature_problems`` (said even when no test failed because of it). A run that
    printed more than ``guard.MANY_LINES`` lines gets a warning.
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    console = console or Console()
    if run.error:
        console.print(Panel(escape(run.error), title="ppo-course check could not finish", border_style="red"))
        return 1
    rows = summarise(run, exercises_dir, stems)
    _panels(console, rows, run, show_output)
    for row in rows:
        said = " ".join(row.lines)
        for problem in (signatures or {}).get(row.stem, {}).values():
            if problem not in said:
                row.lines.append(f"{row.stem}: {problem} (the tests that call it by position still ran)")
        for line in row.lines:
            console.print(f"[yellow]•[/] {escape(line)}")
    table = Table(title=f"Public tests on {exercises_dir}")
    for name, justify in (("exercise", "left"), ("passed", "right"), ("status", "left")):
        table.add_column(name, justify=justify)
    failed_any = False
    for row in rows:
        ok = row.status == "all passed"
        failed_any |= not ok
        colour = "green" if ok else ("yellow" if row.state in ("not_implemented", "missing") else "red")
        table.add_row(row.stem, f"{row.passed}/{row.total}" if row.total else "-", f"[{colour}]{escape(row.status)}[/]")
    console.print(table)
    if run.printed_lines > MANY_LINES:
        console.print(f"[yellow]Warning:[/] your code printed {run.printed_lines:,} lines; printing slows grading "
                      "(and the graders stop a test that prints more than 32 MiB): remove debug prints.")
    if not failed_any:
        console.print("[green]All public tests passed.[/] The hidden tests check more cases (dtypes, gradients, "
                      "padding, edge cases); see the exercise docstrings.")
    return 1 if failed_any else 0

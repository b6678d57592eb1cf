"""``ppo-course check [EXERCISES_DIR]``: run the public tests on your own exercise modules, with feedback.

The public tests (``ppo_course/public_tests/``: hand-computed small cases and
property checks, no hidden input) run in a child process so that a hang or a
crash in your code cannot take this command down: on Linux and macOS the
child gets a CPU-time limit (``RLIMIT_CPU``) with a generous wall-clock
backstop; on Windows, where resource limits are missing, it is a plain
subprocess with the wall-clock limit only. Each failure names the likely
mistake (a diagnosis), shows expected vs got and, for generated inputs, the
smallest failing example.

Exit status: 0 when every public test passed, 1 when some failed (or a module
is missing), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from ppo_course.check_support.guard import MANY_LINES
from ppo_course.grading_kit.states import ExerciseState, import_failure_state
from ppo_course.syllabus import EXERCISES

HELP = "run the public tests on your exercise modules (default: ./exercises or the current folder)"



def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``check``."""
    parser.add_argument("exercises_dir", nargs="?", type=Path, default=None, metavar="EXERCISES_DIR",
                        help="folder holding ex1_ratio.py ... (default: ./exercises if present, else the current folder)")
    parser.add_argument("-e", "--exercise", action="append", default=[], metavar="STEM",
                        help="check only this exercise (e.g. ex4_gae, or a unique prefix such as ex4); repeatable")
    parser.add_argument("--cpu-seconds", type=int, default=120, metavar="S",
                        help="CPU-time limit of the test run (default: 120)")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S",
                        help="wall-clock backstop of the test run (default: 600)")
    parser.add_argument("--call-seconds", type=float, default=None, metavar="S",
                        help="CPU-time limit of one call into your code (default: 10; a whole PPO step of "
                             "exercise 7 gets 120)")
    parser.add_argument("--show-output", action="store_true",
                        help="show what your code printed in every test, passing ones included "
                             "(failing tests always show it)")


def default_dir(cwd: Path | None = None) -> Path:
    """./exercises when it exists, else the current folder."""
    cwd = Path.cwd() if cwd is None else cwd
    return cwd / "exercises" if (cwd / "exercises").is_dir() else cwd


def _limit_cpu(seconds: int):
    """A preexec_fn setting RLIMIT_CPU in the child, or None where it is unavailable (Windows)."""
    try:
        import resource
    except ImportError:  # Windows: no resource module
        return None

    def apply() -> None:
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))
        except (ValueError, OSError):  # a hard limit below ours: keep the system's
            pass

    return apply


#: Fresh child processes started after one died (each one is charged to a single test).
MAX_RESTARTS = 20


def _test_doc(nodeid: str) -> str:
    """The first docstring line of the public test `nodeid` ("test_ex1_ratio.py::test_x[...]"), read with ast."""
    import ast

    from ppo_course.check_support.runner import PUBLIC_TESTS

    file, _, name = nodeid.partition("::")
    try:
        tree = ast.parse((PUBLIC_TESTS / Path(file).name).read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return ""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name.split("[")[0]:
            return ((ast.get_docstring(node) or "").strip().splitlines() or [""])[0]
    return ""


def _merge(merged: dict, outcome: dict) -> None:
    """Fold one child's outcome of a test function into `merged` (all items must pass)."""
    key = (outcome["exercise"], outcome["test"])
    have = merged.get(key)
    if have is None:
        merged[key] = dict(outcome)
        return
    have["items"] = have.get("items", 0) + outcome.get("items", 0)
    have["failed_items"] = have.get("failed_items", []) + outcome.get("failed_items", [])
    have["printed_lines"] = have.get("printed_lines", 0) + outcome.get("printed_lines", 0)
    if have["passed"] and not outcome["passed"]:
        for k in ("passed", "diagnosis", "detail", "output"):
            have[k] = outcome.get(k)
    have["passed_output"] = have.get("passed_output") or outcome.get("passed_output", "")


def _died_outcome(nodeid: str, function: str, returncode: int | None, call_seconds: float, cpu_seconds: int,
                  timeout: float | None) -> dict:
    """The failed outcome of the test during which a child process died (or was stopped)."""
    file, _, name = nodeid.partition("::")
    exercise = Path(file).stem.removeprefix("test_")
    who = f"`{function}`" if function else "your code"
    if timeout is not None:
        diagnosis = "timeout"
        detail = f"{who} did not return within {timeout:g} s (an endless loop?); the test run was stopped"
    elif returncode is not None and returncode in (-24, 152, -9, 137):  # SIGXCPU / SIGKILL: the CPU-time limit
        diagnosis = "timeout"
        detail = (f"{who} did not return within {cpu_seconds:g} s (an endless loop?); the process hit its "
                  f"CPU-time limit (it may ignore the per-call limit of {call_seconds:g} s, e.g. with a bare except)")
    else:
        diagnosis = "crash"
        detail = f"the process running {who} ended (exit status {returncode}): a crash in native code?"
    detail += "; the remaining tests ran in a fresh process"
    return {"exercise": exercise, "kind": "public", "test": name.split("[")[0], "doc": _test_doc(nodeid),
            "passed": False, "diagnosis": diagnosis, "detail": detail, "items": 1, "failed_items": [nodeid],
            "output": "", "passed_output": "", "printed_lines": 0}


def run_public_tests(exercises_dir: Path, stems: list[str], cpu_seconds: int = 120,
                     timeout: float = 600.0, call_seconds: float | None = None) -> dict:
    """Run the public tests in child processes; returns {"outcomes": [...], "error": str | None,
    "printed_lines": int}.

    Each call into the student's code has a CPU-time limit (`call_seconds`, default
    `local.CALL_CPU_SECONDS`); when a child still dies (a hang that ignores it, a crash), the test
    it was running fails with what it was calling, and a fresh child runs the remaining tests.

    Raises nothing for a failing student module: a crash outside any test, or a missing
    result, becomes `error` (with what the child printed last).
    """
    from ppo_course.check_support.local import CALL_CPU_SECONDS

    call_seconds = CALL_CPU_SECONDS if call_seconds is None else float(call_seconds)
    merged: dict = {}
    deselect: list[str] = []
    hung: list[str] = []  # functions that took a child down: not called again
    printed = 0
    with tempfile.TemporaryDirectory(prefix="ppo-check-") as tmp:
        out_json = Path(tmp) / "outcomes.json"
        progress = Path(tmp) / "outcomes.json.progress"
        cmd = [sys.executable, "-m", "ppo_course.check_support.runner", str(exercises_dir), str(out_json), *stems]
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1",
                   PPO_CHECK_CALL_SECONDS=repr(call_seconds))
        # The child must import this very ppo_course (also from a source checkout that is not installed).
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        kwargs: dict = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "cwd": tmp}
        preexec = _limit_cpu(cpu_seconds)
        if preexec is not None and os.name == "posix":
            kwargs["preexec_fn"] = preexec
        for _ in range(MAX_RESTARTS + 1):
            for f in (out_json, progress):
                f.unlink(missing_ok=True)
            env["PPO_CHECK_DESELECT"] = "\n".join(deselect)
            env["PPO_CHECK_HUNG"] = "\n".join(hung)
            timed_out = None
            try:
                proc = subprocess.run(cmd, timeout=timeout, env=env, **kwargs)
                returncode, stdout = proc.returncode, proc.stdout
            except subprocess.TimeoutExpired as exc:
                returncode, stdout, timed_out = None, exc.stdout, timeout
            data = {}
            if out_json.is_file():
                try:
                    data = json.loads(out_json.read_text(encoding="utf-8"))
                except ValueError:
                    data = {}
            for o in data.get("outcomes", []):
                _merge(merged, o)
            printed += int(data.get("printed_lines", 0) or 0)
            if data.get("pytest_exit") is not None:
                return {"outcomes": list(merged.values()), "error": None, "printed_lines": printed}
            try:
                now = json.loads(progress.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                now = {}
            if not now.get("nodeid") or now["nodeid"] in data.get("done", []):  # outside any test
                if merged and now.get("nodeid"):  # after its last test (at the session's end): results stand
                    return {"outcomes": list(merged.values()), "error": None, "printed_lines": printed}
                if timed_out is not None:
                    return {"outcomes": [], "error": f"the tests ran past {timeout:g} s of wall-clock time "
                            "(an endless loop?)", "printed_lines": printed}
                tail = stdout.decode("utf-8", "replace").strip().splitlines()[-15:] if stdout else []
                why = f"exit status {returncode}"
                if returncode is not None and (returncode < 0 or returncode in (152, 137)):
                    why += " (stopped: CPU-time limit or a crash)"
                return {"outcomes": [], "error": f"the test run died ({why}):\n" + "\n".join(tail),
                        "printed_lines": printed}
            _merge(merged, _died_outcome(now["nodeid"], now.get("function", ""), returncode, call_seconds,
                                         cpu_seconds, timed_out))
            deselect += [*data.get("done", []), now["nodeid"]]
            if now.get("function") and (timed_out is not None or returncode in (-24, 152, -9, 137)):
                hung.append(now.get("function", ""))
        return {"outcomes": list(merged.values()), "error": f"the test run died {MAX_RESTARTS + 1} times; "
                "the remaining tests did not run", "printed_lines": printed}


_UNAVAILABLE = ("module_missing", "module_broken")


def _import_failure(stem: str, detail: str) -> tuple[ExerciseState, str, int | None, str | None]:
    """(state, error type, line, file) of a "module_broken" detail (the local import's last traceback line).

    The state is one of ``ppo_course.grading_kit.states`` (the grader's words): ``syntax_error`` or
    ``import_error``. The student's own machine: the traceback is theirs, read as Python prints it.
    """
    last = [ln.strip() for ln in detail.strip().splitlines() if ln.strip()]
    err = last[-1].split(":", 1)[0].split()[-1] if last else "error"
    where = re.findall(r'File "([^"]*)", line (\d+)', detail)
    line, culprit = (int(where[-1][1]), Path(where[-1][0]).name) if where else (None, None)
    return import_failure_state(err), err, line, culprit


def _import_problem(stem: str, detail: str) -> str:
    """A short reason from a "module_broken" detail: "syntax error line N", "does not import (TypeError)",
    or, when the error is in a sibling module it imports, "does not import (syntax error in ex4_gae.py line N)"."""
    state, err, line, culprit = _import_failure(stem, detail)
    if state == "syntax_error":
        what = f"syntax error line {line}" if line is not None else "syntax error"
        return what if culprit in (None, f"{stem}.py") else f"does not import (syntax error in {culprit} {what[13:]})"
    return f"does not import ({err})"


def _not_implemented_names(stem: str, failed: list[dict]) -> list[str]:
    """The functions named by the NotImplementedError messages (`<stem>.<name>:`), else the test names."""
    names: list[str] = []
    for o in failed:
        found = re.search(rf"{re.escape(stem)}\.(\w+)", o.get("detail", ""))
        name = found.group(1) if found else o["test"]
        if name not in names:
            names.append(name)
    return names


def summarise(outcomes: list[dict], exercises_dir: Path, stems: list[str]) -> list[dict]:
    """One row per exercise: {"stem", "passed", "total", "status", "lines", "panels"}.

    `state` is the exercise's state in the grader's words (``ppo_course.grading_kit.states``:
    graded, missing, syntax_error, import_error, not_implemented); `status` shows it to the student:
    one of "module not found", "syntax error line N", "does not import (Error)",
    "not implemented", "all passed" or "K/N passed" (plus ", M not implemented" when some of the
    module's functions still raise NotImplementedError). `lines` holds the one-line notes
    (a module that does not import or is not implemented: said once, not per test); `panels`
    the failed outcomes that deserve a detailed box (a test that ran and failed).
    """
    rows = []
    shown: set[str] = set()  # import errors already printed in full (a sibling's error is printed once)
    for stem in stems:
        mine = [o for o in outcomes if o["exercise"] == stem]
        row = {"stem": stem, "passed": sum(o["passed"] for o in mine), "total": len(mine), "lines": [],
               "panels": []}
        rows.append(row)
        if not (exercises_dir / f"{stem}.py").is_file():
            row["state"] = "missing"
            row["status"] = "module not found"
            row["lines"].append(f"{stem}.py is not in {exercises_dir}")
            continue
        failed = [o for o in mine if not o["passed"]]
        own_broken = [o for o in failed if o.get("diagnosis") == "module_broken"
                      and f"importing {stem}.py " in o.get("detail", "")]
        if own_broken:
            detail = own_broken[0].get("detail", "")
            row["state"] = _import_failure(stem, detail)[0]
            row["status"] = _import_problem(stem, detail)
            key = detail.split("failed: ", 1)[-1]  # the same error reached through a sibling import
            said = " (the error is shown above)" if key in shown else \
                ":\n" + "\n".join("    " + ln for ln in detail.splitlines())
            shown.add(key)
            row["lines"].append(f"{stem}.py: {row['status']}; its {len(mine)} test(s) did not run{said}")
            continue
        not_impl = [o for o in failed if o.get("diagnosis") == "not_implemented"]
        wrong_sig = [o for o in failed if o.get("diagnosis") == "wrong_signature"]
        # The signatures are compared with the stubs' before a function runs: one line per function.
        for problem in dict.fromkeys((o.get("detail") or "").split("\n")[0] for o in wrong_sig):
            count = sum((o.get("detail") or "").split("\n")[0] == problem for o in wrong_sig)
            row["lines"].append(f"{stem}: {problem} ({count} test{'s' if count != 1 else ''} could not call it)")
        # A sibling module that is missing or broken (e.g. ex7 using your ex1-ex6): said once per reason.
        unavailable = [o for o in failed if o.get("diagnosis") in _UNAVAILABLE]
        row["panels"] = [o for o in failed if o not in not_impl and o not in unavailable and o not in wrong_sig]
        if not_impl:
            names = _not_implemented_names(stem, not_impl)
            row["lines"].append(f"{stem} [not_implemented]: {', '.join(names)} still raise"
                                f"{'s' if len(names) == 1 else ''} NotImplementedError; "
                                f"{len(not_impl)} test{'s' if len(not_impl) != 1 else ''} waiting")
        for reason in dict.fromkeys(o.get("detail", "").strip().splitlines()[0] if o.get("detail") else
                                    o.get("diagnosis", "") for o in unavailable):
            tests = [o["test"] for o in unavailable
                     if (o.get("detail", "").strip().splitlines() or [o.get("diagnosis", "")])[0] == reason]
            row["lines"].append(f"{stem}: {len(tests)} test(s) need another module: {reason}")
        row["state"] = "graded"
        if mine and len(not_impl) == len(mine):
            row["state"] = "not_implemented"
            row["status"] = "not implemented"
        elif mine and row["passed"] == len(mine):
            row["status"] = "all passed"
        else:
            row["status"] = f"{row['passed']}/{len(mine)} passed"
            if not_impl:
                row["status"] += f", {len(not_impl)} not implemented"
            if wrong_sig:
                row["status"] += f", {len(wrong_sig)} wrong signature"
    return rows


#: Lines of printed output shown per test (the child keeps at most `guard.KEEP_CHARS` characters).
SHOWN_OUTPUT_LINES = 40


def _printed(text: str) -> str:
    """What a test printed, cut to `SHOWN_OUTPUT_LINES` lines (not yet escaped)."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) > SHOWN_OUTPUT_LINES:
        lines = lines[:SHOWN_OUTPUT_LINES] + [f"[... {len(lines) - SHOWN_OUTPUT_LINES} more lines not shown]"]
    return "\n".join(lines)


def render(outcomes: list[dict], exercises_dir: Path, stems: list[str], error: str | None, console=None,
           show_output: bool = False, printed_lines: int = 0, signatures: dict | None = None) -> int:
    """Print the notes, one box per test that ran and failed (with what the code printed in it),
    then the summary table (last, so it stays on screen); return the exit status (0 all passed,
    1 otherwise). `show_output`: also show what passing tests printed. `printed_lines`: lines
    printed over the run (a warning above `guard.MANY_LINES`). `signatures`: {stem: {function: problem}}
    from `signatures.signature_problems` (said even when no test failed because of it)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    from ppo_course.grading_kit.diagnoses import DIAGNOSES

    console = console or Console()
    if error:
        console.print(Panel(escape(error), title="ppo-course check could not finish", border_style="red"))
        return 1
    rows = summarise(outcomes, exercises_dir, stems)
    for row in rows:
        for o in row["panels"]:
            diagnosis = o.get("diagnosis") or "wrong_value"
            body = f"{escape(o.get('doc', ''))}\n\n[bold]{diagnosis}[/]: {escape(DIAGNOSES.get(diagnosis, ''))}"
            if o.get("detail"):
                body += "\n\n" + escape(o["detail"])
            if o.get("output"):
                body += "\n\n[bold]your code printed:[/]\n" + escape(_printed(o["output"]))
            console.print(Panel(body, title=f"{o['exercise']} · {o['test']}", border_style="red"))
    if show_output:
        for o in outcomes:
            text = o.get("passed_output") if o.get("passed") else (o.get("output") if not o.get("detail") else "")
            if text:
                console.print(Panel(escape(_printed(text)), title=f"{o['exercise']} · {o['test']}: printed",
                                    border_style="blue"))
    for row in rows:
        said = " ".join(row["lines"])
        for problem in (signatures or {}).get(row["stem"], {}).values():
            if problem not in said:
                row["lines"].append(f"{row['stem']}: {problem} (the tests that call it by position still ran)")
        for line in row["lines"]:
            console.print(f"[yellow]•[/] {escape(line)}")
    table = Table(title=f"Public tests on {exercises_dir}")
    table.add_column("exercise")
    table.add_column("passed", justify="right")
    table.add_column("status")
    failed_any = False
    for row in rows:
        ok = row["status"] == "all passed"
        failed_any |= not ok
        colour = "green" if ok else ("yellow" if row["state"] in ("not_implemented", "missing") else "red")
        passed = f"{row['passed']}/{row['total']}" if row["total"] else "-"
        table.add_row(row["stem"], passed, f"[{colour}]{escape(row['status'])}[/]")
    console.print(table)
    if printed_lines > MANY_LINES:
        console.print(f"[yellow]Warning:[/] your code printed {printed_lines:,} lines; printing slows grading "
                      "(and the graders stop a test that prints more than 32 MiB): remove debug prints.")
    if not failed_any:
        console.print("[green]All public tests passed.[/] The hidden tests check more cases (dtypes, gradients, "
                      "padding, edge cases); see the exercise docstrings.")
    return 1 if failed_any else 0


def resolve_stems(requested: list[str]) -> tuple[list[str], list[str]]:
    """(stems, problems): each requested name as a full stem; a unique prefix ("ex4") is accepted.

    A name that matches no stem, or (as a prefix) more than one, goes to `problems`.
    """
    stems: list[str] = []
    problems: list[str] = []
    for name in requested:
        matches = [name] if name in EXERCISES else [s for s in EXERCISES if s.startswith(name)]
        if len(matches) == 1:
            stems.append(matches[0])
        else:
            problems.append(f"{name!r} ({'ambiguous: ' + ', '.join(matches) if matches else 'unknown'})")
    return list(dict.fromkeys(stems)), problems


def run(args: argparse.Namespace) -> int:
    """Check the given (or default) folder; 0 all passed, 1 some failed, 2 usage error."""
    exercises_dir = (args.exercises_dir or default_dir()).resolve()
    if not exercises_dir.is_dir():
        print(f"error: {exercises_dir} is not a folder", file=sys.stderr)
        return 2
    stems, problems = resolve_stems(args.exercise)
    if problems:
        print(f"error: exercise(s) {', '.join(problems)}; known: {', '.join(EXERCISES)}", file=sys.stderr)
        return 2
    stems = stems or list(EXERCISES)
    present = [s for s in stems if (exercises_dir / f"{s}.py").is_file()]
    from ppo_course.grading_kit.signatures import signature_problems

    # Compared with the stubs' before anything runs (the files are parsed, never imported here).
    signatures = {stem: signature_problems(stem, exercises_dir / f"{stem}.py") for stem in present}
    got = run_public_tests(exercises_dir, present, args.cpu_seconds, args.timeout,
                           getattr(args, "call_seconds", None)) if present else {"outcomes": [], "error": None}
    return render(got["outcomes"], exercises_dir, stems, got["error"], show_output=getattr(args, "show_output", False),
                  printed_lines=got.get("printed_lines", 0), signatures=signatures)

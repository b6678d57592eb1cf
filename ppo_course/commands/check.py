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

HELP = "run the public tests on your exercise modules (default: ./exercises or the current folder)"

STEMS = ("ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer",
         "ex6_kl_reward", "ex7_ppo_step")


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


def run_public_tests(exercises_dir: Path, stems: list[str], cpu_seconds: int = 120,
                     timeout: float = 600.0) -> dict:
    """Run the public tests in a child process; returns {"outcomes": [...], "error": str | None}.

    Raises nothing for a failing student module: a crash, a time-out or a missing
    result becomes `error` (with what the child printed last).
    """
    with tempfile.TemporaryDirectory(prefix="ppo-check-") as tmp:
        out_json = Path(tmp) / "outcomes.json"
        cmd = [sys.executable, "-m", "ppo_course.check_support.runner", str(exercises_dir), str(out_json), *stems]
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
        # The child must import this very ppo_course (also from a source checkout that is not installed).
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        kwargs: dict = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "env": env, "cwd": tmp}
        preexec = _limit_cpu(cpu_seconds)
        if preexec is not None and os.name == "posix":
            kwargs["preexec_fn"] = preexec
        try:
            proc = subprocess.run(cmd, timeout=timeout, **kwargs)
        except subprocess.TimeoutExpired:
            return {"outcomes": [], "error": f"the tests ran past {timeout:g} s of wall-clock time (an endless loop?)"}
        if out_json.is_file():
            data = json.loads(out_json.read_text(encoding="utf-8"))
            return {"outcomes": data.get("outcomes", []), "error": None}
        tail = proc.stdout.decode("utf-8", "replace").strip().splitlines()[-15:] if proc.stdout else []
        why = f"exit status {proc.returncode}"
        if proc.returncode < 0 or proc.returncode in (152, 137):
            why += " (stopped: CPU-time limit or a crash)"
        return {"outcomes": [], "error": f"the test run died ({why}):\n" + "\n".join(tail)}


_UNAVAILABLE = ("module_missing", "module_broken")


def _import_problem(stem: str, detail: str) -> str:
    """A short reason from a "module_broken" detail: "syntax error line N", "does not import (TypeError)",
    or, when the error is in a sibling module it imports, "does not import (syntax error in ex4_gae.py line N)"."""
    last = [ln.strip() for ln in detail.strip().splitlines() if ln.strip()]
    err = last[-1].split(":", 1)[0].split()[-1] if last else "error"
    where = re.findall(r'File "([^"]*)", line (\d+)', detail)
    culprit = Path(where[-1][0]).name if where else f"{stem}.py"
    if err in ("SyntaxError", "IndentationError", "TabError"):
        what = f"syntax error line {where[-1][1]}" if where else "syntax error"
        return what if culprit == f"{stem}.py" else f"does not import (syntax error in {culprit} {what[13:]})"
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

    `status` is one of "module not found", "syntax error line N", "does not import (Error)",
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
            row["status"] = "module not found"
            row["lines"].append(f"{stem}.py is not in {exercises_dir}")
            continue
        failed = [o for o in mine if not o["passed"]]
        own_broken = [o for o in failed if o.get("diagnosis") == "module_broken"
                      and f"importing {stem}.py " in o.get("detail", "")]
        if own_broken:
            detail = own_broken[0].get("detail", "")
            row["status"] = _import_problem(stem, detail)
            key = detail.split("failed: ", 1)[-1]  # the same error reached through a sibling import
            said = " (the error is shown above)" if key in shown else \
                ":\n" + "\n".join("    " + ln for ln in detail.splitlines())
            shown.add(key)
            row["lines"].append(f"{stem}.py: {row['status']}; its {len(mine)} test(s) did not run{said}")
            continue
        not_impl = [o for o in failed if o.get("diagnosis") == "not_implemented"]
        # A sibling module that is missing or broken (e.g. ex7 using your ex1-ex6): said once per reason.
        unavailable = [o for o in failed if o.get("diagnosis") in _UNAVAILABLE]
        row["panels"] = [o for o in failed if o not in not_impl and o not in unavailable]
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
        if mine and len(not_impl) == len(mine):
            row["status"] = "not implemented"
        elif mine and row["passed"] == len(mine):
            row["status"] = "all passed"
        else:
            row["status"] = f"{row['passed']}/{len(mine)} passed"
            if not_impl:
                row["status"] += f", {len(not_impl)} not implemented"
    return rows


def render(outcomes: list[dict], exercises_dir: Path, stems: list[str], error: str | None, console=None) -> int:
    """Print the notes, one box per test that ran and failed, then the summary table (last, so it
    stays on screen); return the exit status (0 all passed, 1 otherwise)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    from ppo_course.check_support.diagnoses import DIAGNOSES

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
            console.print(Panel(body, title=f"{o['exercise']} · {o['test']}", border_style="red"))
    for row in rows:
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
        colour = "green" if ok else ("yellow" if row["status"] in ("not implemented", "module not found") else "red")
        passed = f"{row['passed']}/{row['total']}" if row["total"] else "-"
        table.add_row(row["stem"], passed, f"[{colour}]{escape(row['status'])}[/]")
    console.print(table)
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
        matches = [name] if name in STEMS else [s for s in STEMS if s.startswith(name)]
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
        print(f"error: exercise(s) {', '.join(problems)}; known: {', '.join(STEMS)}", file=sys.stderr)
        return 2
    stems = stems or list(STEMS)
    present = [s for s in stems if (exercises_dir / f"{s}.py").is_file()]
    got = run_public_tests(exercises_dir, present, args.cpu_seconds, args.timeout) if present else \
        {"outcomes": [], "error": None}
    return render(got["outcomes"], exercises_dir, stems, got["error"])

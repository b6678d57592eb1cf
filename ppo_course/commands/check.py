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
                        help="check only this exercise (e.g. ex4_gae); repeatable")
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


def render(outcomes: list[dict], exercises_dir: Path, stems: list[str], error: str | None, console=None) -> int:
    """Print a summary table and one panel per failed test; return the exit status (0 or 1)."""
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table

    from ppo_course.check_support.diagnoses import DIAGNOSES

    console = console or Console()
    if error:
        console.print(Panel(error, title="ppo-course check could not finish", border_style="red"))
        return 1
    table = Table(title=f"Public tests on {exercises_dir}")
    table.add_column("exercise")
    table.add_column("passed", justify="right")
    table.add_column("status")
    failed_any = False
    for stem in stems:
        mine = [o for o in outcomes if o["exercise"] == stem]
        if not (exercises_dir / f"{stem}.py").is_file():
            table.add_row(stem, "-", "[yellow]module not found[/]")
            failed_any = True
            continue
        ok = sum(o["passed"] for o in mine)
        status = "[green]all passed[/]" if mine and ok == len(mine) else "[red]see below[/]"
        failed_any |= ok != len(mine)
        table.add_row(stem, f"{ok}/{len(mine)}", status)
    console.print(table)
    for o in outcomes:
        if o["passed"]:
            continue
        diagnosis = o.get("diagnosis") or "wrong_value"
        body = f"{o.get('doc', '')}\n\n[bold]{diagnosis}[/]: {DIAGNOSES.get(diagnosis, '')}"
        if o.get("detail"):
            from rich.markup import escape

            body += "\n\n" + escape(o["detail"])
        console.print(Panel(body, title=f"{o['exercise']} · {o['test']}", border_style="red"))
    if not failed_any:
        console.print("[green]All public tests passed.[/] The hidden tests check more cases (dtypes, gradients, "
                      "padding, edge cases); see the exercise docstrings.")
    return 1 if failed_any else 0


def run(args: argparse.Namespace) -> int:
    """Check the given (or default) folder; 0 all passed, 1 some failed, 2 usage error."""
    exercises_dir = (args.exercises_dir or default_dir()).resolve()
    if not exercises_dir.is_dir():
        print(f"error: {exercises_dir} is not a folder", file=sys.stderr)
        return 2
    stems = list(dict.fromkeys(args.exercise)) or list(STEMS)
    unknown = [s for s in stems if s not in STEMS]
    if unknown:
        print(f"error: unknown exercise(s) {unknown}; known: {', '.join(STEMS)}", file=sys.stderr)
        return 2
    present = [s for s in stems if (exercises_dir / f"{s}.py").is_file()]
    got = run_public_tests(exercises_dir, present, args.cpu_seconds, args.timeout) if present else \
        {"outcomes": [], "error": None}
    return render(got["outcomes"], exercises_dir, stems, got["error"])

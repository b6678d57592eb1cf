"""The mistake catalogue: load entries, build submissions, grade them, report the kill rate.

An entry is a small Python file in `buggy/` (a realistic mistake) or `correct/`
(a correct-but-different implementation). Its module-level constants say what
it is:

    EXERCISE    = "ex4_gae"                      # the exercise module it replaces code in
    DIAGNOSIS   = "gae_bootstraps_from_padding"  # buggy only: the id from grader/mistakes/diagnose.py
    DESCRIPTION = "one line"
    SEEN_IN     = "owner/repo#123 ..."           # buggy only: where the mistake is seen in the wild
    MODE        = "append"                       # optional; "module" = the file is the whole module

The rest of the file is code written as a student would: full replacements of
the function(s) or class concerned. `compose_module` appends it to the solution
module (a later `def`/`class` overrides the earlier one), so an entry only holds
the mistake. Metadata is read with `ast` (the entry is never executed to read it).

Command line (from the repository root):

    python tests/catalogue/catalogue_tool.py list
    python tests/catalogue/catalogue_tool.py grade [--profile fast] [--out tests/catalogue/KILL_RATE.md]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import shutil
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, Field

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SOLUTIONS = REPO / "solutions"
EXERCISES = ("ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer",
             "ex6_kl_reward", "ex7_ppo_step")
# Public names of each exercise (shared/CONTRACT.md): used to make an oracle-backed base
# module when solutions/ does not hold the exercise yet.
PUBLIC_NAMES = {
    "ex1_ratio": ["logprobs_from_logits", "probability_ratio"],
    "ex2_clipped_loss": ["clipped_surrogate_loss"],
    "ex3_full_loss": ["clipped_value_loss", "entropy_from_logits", "ppo_loss"],
    "ex4_gae": ["compute_gae", "whiten"],
    "ex5_rollout_buffer": ["RolloutBuffer"],
    "ex6_kl_reward": ["per_token_kl", "kl_shaped_rewards", "AdaptiveKLController"],
}
# Diagnosis ids this catalogue expects but grader/mistakes/diagnose.py does not have (yet): proposed
# to the lead in the report. Every other expected id must be a key of DIAGNOSES.
# (All ten ids proposed so far were adopted by the graders: per_row_sum, five ppo_step_* ids,
# advantages_renormalised, entropy_from_sampled_token, kl_wrong_estimator, ratio_clamped.)
PROPOSED_DIAGNOSES: dict[str, str] = {
    "ppo_step_temperature_ignored": "log-probs recomputed without the sampling temperature (forward_response at T = 1)",
}
# Ids that name no specific mistake (the catch-alls: a wrong value, an exception on valid input) or only a consequence that is true of every wrong step
# (the 0-point own-pieces report of a wrong ex7 step; a step that does not learn): never "a wrong specific
# diagnosis" in the specific-and-correct rate.
# The exercise-7 stage ids (grader/mistakes/ppo_step_stages.py) say where a step departs, not which mistake: generic.
GENERIC_DIAGNOSES = frozenset({"wrong_value", "raises_error", "ppo_step_own_pieces_differ", "ppo_step_no_learning",
                               "ppo_step_stage_rollout", "ppo_step_stage_scores", "ppo_step_stage_kl",
                               "ppo_step_stage_rewards", "ppo_step_stage_gae", "ppo_step_stage_whitening",
                               "ppo_step_stage_losses", "ppo_step_stage_weights"})
# A real second mistake of nearly every appended entry (its replacement function drops the docstring's ValueError
# checks, which the `*_rejects_*` tests grade at 0.25 points): a true statement, never a wrong name of the entry.
OTHER_MISTAKE_OF_EVERY_ENTRY = "missing_documented_error"
ENTRY_SEPARATOR = "\n\n# ---- mistake-catalogue entry: {name} (overrides the definitions above) ----\n"


class Entry(BaseModel):
    """One catalogue entry (a file in buggy/ or correct/)."""

    name: str = Field(description="file stem, e.g. 'ex4_gae__runs_forward'")
    path: Path
    kind: Literal["buggy", "correct"]
    exercise: str
    description: str
    diagnosis: Optional[str] = Field(default=None, description="expected diagnosis id (buggy entries)")
    seen_in: Optional[str] = None
    mode: Literal["append", "module"] = "append"
    also: list[str] = Field(default_factory=list,
                            description="ids of further real mistakes of the entry (ALSO = 'id id'), so that "
                                        "naming them is not counted as a wrong specific diagnosis")


def _constants(path: Path) -> dict[str, str]:
    """Module-level NAME = "string" assignments of a file, read without executing it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            if isinstance(value, str):
                out[node.targets[0].id] = value
    return out


def load_entry(path: Path) -> Entry:
    """Parse one entry file; ValueError naming the file and the missing field if malformed."""
    kind = path.parent.name
    consts = _constants(path)
    required = ["EXERCISE", "DESCRIPTION"] + (["DIAGNOSIS", "SEEN_IN"] if kind == "buggy" else [])
    missing = [k for k in required if k not in consts]
    if missing:
        raise ValueError(f"{path}: missing module-level constant(s) {missing}")
    if consts["EXERCISE"] not in EXERCISES:
        raise ValueError(f"{path}: EXERCISE={consts['EXERCISE']!r} is not one of {EXERCISES}")
    if not path.stem.startswith(consts["EXERCISE"] + "__"):
        raise ValueError(f"{path}: file name must start with '{consts['EXERCISE']}__'")
    return Entry(name=path.stem, path=path, kind=kind, exercise=consts["EXERCISE"],
                 description=consts["DESCRIPTION"], diagnosis=consts.get("DIAGNOSIS"),
                 seen_in=consts.get("SEEN_IN"), mode=consts.get("MODE", "append"),
                 also=consts.get("ALSO", "").split())


def load_entries(kind: Optional[str] = None) -> list[Entry]:
    """All entries (or those of one kind), sorted by name."""
    kinds = [kind] if kind else ["buggy", "correct"]
    return [load_entry(p) for k in kinds for p in sorted((HERE / k).glob("ex*_*.py"))]


def solution_source(exercise: str, solutions_dir: Path = SOLUTIONS) -> Optional[str]:
    """The solution module's text, or None when solutions/ does not hold it yet."""
    path = solutions_dir / f"{exercise}.py"
    return path.read_text(encoding="utf-8") if path.exists() else None


def oracle_base(exercise: str) -> str:
    """A stand-in base module that re-exports the oracle's names (before solutions exist)."""
    names = ", ".join(PUBLIC_NAMES[exercise])
    return f"from catalogue_oracle import {names}  # noqa: F401 (oracle stand-in for the solution)\n"


def compose_module(entry: Entry, base: Optional[str] = None) -> str:
    """The student module for `entry`: base (the solution) + the entry appended, or the entry alone."""
    text = entry.path.read_text(encoding="utf-8")
    if entry.mode == "module":
        return text
    if base is None:
        base = solution_source(entry.exercise)
    if base is None:
        raise FileNotFoundError(f"no solutions/{entry.exercise}.py to append {entry.name} to")
    return base.rstrip("\n") + "\n" + ENTRY_SEPARATOR.format(name=entry.name) + text


def import_composed(entry: Entry, workdir: Path, base: Optional[str] = None,
                    solutions_dir: Path = SOLUTIONS):
    """Write the composed module to workdir/<exercise>.py and import it under a unique name.

    For ex7 the solution's ex1-ex6 are copied beside it, since it imports them
    as siblings; sys.path and the sibling entries of sys.modules are restored
    afterwards so that one entry's modules never leak into another's import.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{entry.exercise}.py"
    path.write_text(compose_module(entry, base), encoding="utf-8")
    if entry.exercise == "ex7_ppo_step":
        for sibling in EXERCISES[:-1]:
            shutil.copy(solutions_dir / f"{sibling}.py", workdir / f"{sibling}.py")
    if str(HERE) not in sys.path:  # the oracle stand-in base imports catalogue_oracle
        sys.path.append(str(HERE))
    saved_path = list(sys.path)
    saved_modules = {name: sys.modules.pop(name) for name in EXERCISES if name in sys.modules}
    sys.path.insert(0, str(workdir))
    try:
        spec = importlib.util.spec_from_file_location(f"catalogue_{entry.name}_{uuid.uuid4().hex[:8]}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # as an import does (a @dataclass looks its module up there)
        try:
            spec.loader.exec_module(module)
        finally:
            sys.modules.pop(spec.name, None)
    finally:
        sys.path[:] = saved_path
        for name in EXERCISES:
            sys.modules.pop(name, None)
        sys.modules.update(saved_modules)
    return module


def group_entries(entries: list[Entry]) -> list[list[Entry]]:
    """Pack entries into submissions holding at most one module per exercise."""
    per_exercise: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        per_exercise[e.exercise].append(e)
    n = max((len(v) for v in per_exercise.values()), default=0)
    return [[v[i] for v in per_exercise.values() if i < len(v)] for i in range(n)]


def build_submission(entries: list[Entry], dest: Path, solutions_dir: Path = SOLUTIONS) -> Path:
    """A submission folder holding one composed module per entry (one entry per exercise)."""
    seen = [e.exercise for e in entries]
    if len(seen) != len(set(seen)):
        raise ValueError(f"one entry per exercise per submission, got {seen}")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for e in entries:
        (dest / f"{e.exercise}.py").write_text(
            compose_module(e, solution_source(e.exercise, solutions_dir)), encoding="utf-8")
    return dest


# ----------------------------------------------------------------------------- grading
class Outcome(BaseModel):
    """What the hidden graders made of one entry."""

    entry: str
    kind: Literal["buggy", "correct"]
    exercise: str
    expected_diagnosis: Optional[str] = None
    score: float = 0.0
    max_score: float = 0.0
    exercise_status: str = ""
    lost_points: bool = False
    diagnoses_seen: list[str] = Field(default_factory=list, description="ids of the exercise's failed tests")
    failed_tests: list[str] = Field(default_factory=list)
    failures: list[dict] = Field(default_factory=list, description="each failed test of the exercise: kind "
                                 "(public/hidden), test, diagnosis, max_score")
    diagnosed: bool = False
    specific_and_correct: bool = Field(default=False, description="buggy: the expected id is seen and every "
                                       "specific id seen is a real mistake of the entry (GENERIC ids aside)")
    error: Optional[str] = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Buggy: lost points and got the expected diagnosis. Correct: full marks."""
        if self.error:
            return False
        if self.kind == "buggy":
            return self.lost_points and self.diagnosed
        return not self.lost_points


def _grade_function():
    """grader.grade.grade_submission (imported lazily: it is heavy and lands separately)."""
    from grader.grade import grade_submission

    return grade_submission


def grading_groups(entries: list[Entry]) -> list[tuple[list[Entry], list[str]]]:
    """Submissions to grade: (entries, exercises to grade), each exercise at most once per submission.

    Entries of ex1-ex6 are packed together, one per exercise per submission
    (each exercise is graded on its own module only). An ex7 entry gets a
    submission of its own beside the solution's ex1-ex6 (filled in by
    `grade_entries`), and only ex7 is graded there: ppo_step imports its
    siblings, and a buggy sibling would make an ex7 entry lose points for a
    mistake that is not its own (seen: a test raising inside a buggy ex6).
    """
    ex7 = [e for e in entries if e.exercise == "ex7_ppo_step"]
    rest = [e for e in entries if e.exercise != "ex7_ppo_step"]
    groups = [(g, sorted({e.exercise for e in g}, key=EXERCISES.index)) for g in group_entries(rest)]
    return groups + [([e], ["ex7_ppo_step"]) for e in ex7]


def _grade_folder(folder: str, exercises: list[str], profile: str) -> dict:
    """Grade one submission folder; the GradeResult as a dict (picklable, for worker processes)."""
    import inspect

    grade_submission = _grade_function()
    kwargs = {"profile": profile}
    if "exercises" in inspect.signature(grade_submission).parameters:
        kwargs["exercises"] = exercises
    return grade_submission(folder, **kwargs).model_dump(mode="json")


def _outcomes_for(group: list[Entry], result: Optional[dict], error: Optional[str],
                  seconds: float) -> list[Outcome]:
    """One Outcome per entry of a graded submission (result is a GradeResult dict)."""
    outs = []
    for e in group:
        out = Outcome(entry=e.name, kind=e.kind, exercise=e.exercise, expected_diagnosis=e.diagnosis,
                      error=error, seconds=seconds)
        if result is not None:
            ex = result["exercises"].get(e.exercise)
            if ex is None:
                out.error = f"{e.exercise} missing from the GradeResult"
            else:
                from grader.records.results import ExerciseResult

                status = ExerciseResult.model_validate(ex).status  # derived from the one state vocabulary
                out.score, out.max_score, out.exercise_status = ex["score"], ex["max_score"], status
                out.lost_points = ex["max_score"] <= 0 or ex["score"] < ex["max_score"] - 1e-9
            failed = [t for t in result["tests"] if t["exercise"] == e.exercise and t["status"] == "failed"]
            out.failed_tests = [t["test"] for t in failed]
            out.failures = [{"kind": t["kind"], "test": t["test"], "diagnosis": t.get("diagnosis"),
                             "max_score": t.get("max_score", 0.0)} for t in failed]
            out.diagnoses_seen = sorted({t["diagnosis"] for t in failed if t.get("diagnosis")})
            out.diagnosed = bool(e.diagnosis) and any(
                t.get("diagnosis") == e.diagnosis or f"[{e.diagnosis}]" in (t.get("output") or "") for t in failed)
            # Only tests worth points: a 0-point report (e.g. the docstrings' input validation, which many
            # entries skip on top of their mistake) is not a diagnosis of the entry's mistake.
            specific = {t["diagnosis"] for t in failed if t.get("diagnosis") and t.get("max_score", 1) > 0}
            specific -= GENERIC_DIAGNOSES | {OTHER_MISTAKE_OF_EVERY_ENTRY}
            out.specific_and_correct = out.diagnosed and specific <= {e.diagnosis, *e.also}
        outs.append(out)
    return outs


def grade_entries(entries: list[Entry], workdir: Path, profile: str = "fast", jobs: int = 1,
                  solutions_dir: Path = SOLUTIONS, progress=None) -> list[Outcome]:
    """Grade every entry with the hidden graders; one Outcome per entry, in input order.

    Args:
        entries: catalogue entries (buggy and/or correct).
        workdir: scratch folder for the submissions (one sub-folder per submission).
        profile: grader profile ("fast" keeps the catalogue run short).
        jobs: submissions graded at once (worker processes when > 1; each grading
            already forks its own sandboxed children, so 1 is right on a busy machine).
        progress: optional callable(done, total, label) for a progress display.

    A grader crash on one submission is recorded as the `error` of its entries
    instead of stopping the run.
    """
    groups = grading_groups(entries)
    folders = []
    for number, (group, exercises) in enumerate(groups):
        folder = build_submission(group, workdir / f"submission_{number:02d}", solutions_dir)
        if "ex7_ppo_step" in exercises:  # ppo_step imports ex1-ex6 as siblings
            for sibling in EXERCISES[:-1]:
                if not (folder / f"{sibling}.py").exists():
                    shutil.copy(solutions_dir / f"{sibling}.py", folder / f"{sibling}.py")
        folders.append(str(folder))

    outcomes: dict[str, Outcome] = {}

    def record(number: int, result: Optional[dict], error: Optional[str], seconds: float) -> None:
        group = groups[number][0]
        for out in _outcomes_for(group, result, error, seconds / max(1, len(group))):
            outcomes[out.entry] = out
        if progress:
            progress(len({o.entry for o in outcomes.values()}), len(entries), ", ".join(e.name for e in group))

    if jobs <= 1:
        for number, (folder, (_, exercises)) in enumerate(zip(folders, groups)):
            started = time.perf_counter()
            try:
                result, error = _grade_folder(folder, exercises, profile), None
            except Exception as exc:  # noqa: BLE001 - reported per entry
                result, error = None, f"grade_submission raised {type(exc).__name__}: {exc}"
            record(number, result, error, time.perf_counter() - started)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        started = time.perf_counter()
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(_grade_folder, folder, exercises, profile): number
                       for number, (folder, (_, exercises)) in enumerate(zip(folders, groups))}
            for future in as_completed(futures):
                try:
                    result, error = future.result(), None
                except Exception as exc:  # noqa: BLE001
                    result, error = None, f"grade_submission raised {type(exc).__name__}: {exc}"
                record(futures[future], result, error, time.perf_counter() - started)
    return [outcomes[e.name] for e in entries]


def kill_rate_markdown(outcomes: list[Outcome], entries: list[Entry], profile: str, seconds: float) -> str:
    """KILL_RATE.md: totals, then one row per entry; written by `write_kill_rate`, never by hand."""
    by_name = {e.name: e for e in entries}
    buggy = [o for o in outcomes if o.kind == "buggy"]
    correct = [o for o in outcomes if o.kind == "correct"]
    killed = [o for o in buggy if o.lost_points and not o.error]
    diagnosed = [o for o in buggy if o.lost_points and o.diagnosed and not o.error]
    full = [o for o in correct if not o.lost_points and not o.error]
    specific = [o for o in buggy if o.lost_points and o.specific_and_correct and not o.error]
    pct = lambda a, b: f"{100 * a / b:.0f}%" if b else "n/a"  # noqa: E731
    lines = [
        "# Mistake catalogue: kill rate",
        "",
        "Written by `tests/catalogue/catalogue_tool.py` (`write_kill_rate`) from a grading run; do not edit by hand.",
        f"Grader profile `{profile}`, {len(outcomes)} entries graded in {seconds:.0f} s.",
        "",
        f"- buggy entries that lose points: **{len(killed)} / {len(buggy)}** ({pct(len(killed), len(buggy))})",
        f"- buggy entries that lose points with the expected diagnosis: **{len(diagnosed)} / {len(buggy)}** "
        f"({pct(len(diagnosed), len(buggy))})",
        f"- buggy entries with a specific and correct diagnosis (the expected id, and no specific id that is "
        f"not a real mistake of the entry): **{len(specific)} / {len(buggy)}** ({pct(len(specific), len(buggy))})",
        f"- correct variants with full marks: **{len(full)} / {len(correct)}**",
        "",
        "## Per exercise (buggy: killed / diagnosed / specific and correct / total)",
        "",
        "| exercise | killed | diagnosed | specific and correct | total | specific and correct diagnosis rate "
        "| correct variants at full marks |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for ex in EXERCISES:
        b = [o for o in buggy if o.exercise == ex]
        c = [o for o in correct if o.exercise == ex]
        n_specific = sum(o in specific for o in b)
        lines.append(f"| `{ex}` | {sum(o in killed for o in b)} | {sum(o in diagnosed for o in b)} | {n_specific} | "
                     f"{len(b)} | {pct(n_specific, len(b))} | {sum(o in full for o in c)} / {len(c)} |")
    lines += [""] + [f"- `{ex}`: specific and correct diagnosis rate "
                     f"{pct(sum(o in specific for o in buggy if o.exercise == ex), sum(o.exercise == ex for o in buggy))}"
                     for ex in EXERCISES]
    lines += ["", "## Not caught or misdiagnosed (the lead's to-do list)", "",
              "| entry | expected | score | diagnoses seen | note |", "| --- | --- | --- | --- | --- |"]
    for o in buggy:
        if o in diagnosed and o in specific:
            continue
        note = o.error or ("not caught: full marks" if not o.lost_points else "caught, other diagnosis"
                           if o not in diagnosed else "also a specific id that is not a mistake of the entry")
        lines.append(f"| `{o.entry}` | `{o.expected_diagnosis}` | {o.score:g} / {o.max_score:g} | "
                     f"{', '.join(f'`{d}`' for d in o.diagnoses_seen) or '-'} | {note} |")
    for o in correct:
        if o not in full:
            lines.append(f"| `{o.entry}` (correct variant) | full marks | {o.score:g} / {o.max_score:g} | "
                         f"{', '.join(f'`{d}`' for d in o.diagnoses_seen) or '-'} | "
                         f"{o.error or 'a correct implementation lost points: ' + ', '.join(o.failed_tests)} |")
    lines += ["", "## All entries", "", "| entry | kind | score | expected | seen | description | seen in |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for o in outcomes:
        e = by_name[o.entry]
        mark = "ok" if o.ok else "**no**"
        lines.append(f"| `{o.entry}` | {o.kind} ({mark}) | {o.score:g} / {o.max_score:g} | "
                     f"{('`' + o.expected_diagnosis + '`') if o.expected_diagnosis else 'full marks'} | "
                     f"{', '.join(f'`{d}`' for d in o.diagnoses_seen) or '-'} | {e.description} | "
                     f"{e.seen_in or ''} |")
    return "\n".join(lines) + "\n"


def write_kill_rate(outcomes: list[Outcome], entries: list[Entry], path: Path, profile: str,
                    seconds: float) -> Path:
    """Write KILL_RATE.md (temporary file, then os.replace) and return its path."""
    text = kill_rate_markdown(outcomes, entries, profile, seconds)
    path = Path(path)
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def summary_line(outcomes: list[Outcome]) -> str:
    """One line for the terminal: killed / diagnosed / correct-at-full-marks."""
    buggy = [o for o in outcomes if o.kind == "buggy"]
    correct = [o for o in outcomes if o.kind == "correct"]
    killed = sum(o.lost_points and not o.error for o in buggy)
    diagnosed = sum(o.lost_points and o.diagnosed and not o.error for o in buggy)
    specific = sum(o.lost_points and o.specific_and_correct and not o.error for o in buggy)
    full = sum(not o.lost_points and not o.error for o in correct)
    return (f"kill rate: {killed}/{len(buggy)} buggy entries lose points, {diagnosed}/{len(buggy)} with the "
            f"expected diagnosis, {specific}/{len(buggy)} specific and correct; {full}/{len(correct)} correct "
            f"variants at full marks")


def main(argv: Optional[list[str]] = None) -> int:
    """`list` the entries or `grade` them all and write KILL_RATE.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="print the entries")
    g = sub.add_parser("grade", help="grade every entry and write KILL_RATE.md")
    g.add_argument("--profile", default="fast", choices=["fast", "full"])
    g.add_argument("--out", type=Path, default=HERE / "KILL_RATE.md")
    g.add_argument("--only", default="", help="grade only entries whose name contains this text")
    g.add_argument("--jobs", type=int, default=1, help="submissions graded in parallel (default 1)")
    args = parser.parse_args(argv)
    entries = [e for e in load_entries() if getattr(args, "only", "") in e.name]
    if args.command == "list":
        for e in entries:
            print(f"{e.kind:8s} {e.name:60s} {e.diagnosis or ''}")
        return 0
    import tempfile

    from rich.progress import Progress

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="catalogue_") as tmp, Progress(transient=True) as bar:
        task = bar.add_task("grading the catalogue", total=None)
        outcomes = grade_entries(entries, Path(tmp), profile=args.profile, jobs=args.jobs,
                                 progress=lambda done, total, label: bar.update(task, completed=done, total=total))
    seconds = time.perf_counter() - started
    path = write_kill_rate(outcomes, entries, args.out, args.profile, seconds)
    print(summary_line(outcomes))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The mistake catalogue: load entries, build submissions, grade them, report the kill rate.

An entry is a small Python file in `buggy/` (a realistic mistake) or `correct/`
(a correct-but-different implementation). Its module-level constants say what
it is:

    EXERCISE    = "ex4_gae"                      # the exercise module it replaces code in
    DIAGNOSIS   = "gae_bootstraps_from_padding"  # buggy only: the id from grader/diagnose.py
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
                 seen_in=consts.get("SEEN_IN"), mode=consts.get("MODE", "append"))


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


def import_composed(entry: Entry, workdir: Path, base: Optional[str] = None):
    """Write the composed module to workdir/<exercise>.py and import it under a unique name."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{entry.exercise}.py"
    path.write_text(compose_module(entry, base), encoding="utf-8")
    for p in (str(workdir), str(HERE)):
        if p not in sys.path:
            sys.path.insert(0, p)
    spec = importlib.util.spec_from_file_location(f"catalogue_{entry.name}_{uuid.uuid4().hex[:8]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
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

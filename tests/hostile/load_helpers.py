"""Helpers of the load-and-faults tests: a cohort of small mixed submissions and a replaying grade function.

The batch layer (``grader.batch``) starts one fresh worker process per
student, and each worker starts its own sandbox fork server: about 5 CPU
seconds per student before the first test runs (measured on the 2-core
machine), so 200 real gradings cannot fit the issue's ~4 minutes. The load
test therefore grades each *distinct* submission once for real
(``grade_submission`` in the test process: good, buggy and hostile code in
the real sandbox), and the workers replay that result (``replay_grade``,
installed in the batch's workers by ``tests/batch/stand_in_grader.install``). Everything the test is about (200
workers at ``--jobs 2``, a SIGKILL at a random moment, atomic writes,
resuming) runs for real; a few "live" students have no replay and are graded
for real inside the workers, so that the kill also lands on real grading
(workers, fork servers and sandbox children must all go).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

from hostile_helpers import ATTACKS, SOLUTIONS, TWINS, read_attack

HERE = Path(__file__).resolve().parent
CATALOGUE = HERE.parent / "catalogue" / "buggy"
#: Environment variable naming the replay folder (workers are fresh processes: they read it there).
CACHE_ENV = "PPO_HOSTILE_REPLAY_DIR"
GRADE_FN = "load_helpers:replay_grade"
LOAD_EXERCISES = ["ex1_ratio", "ex2_clipped_loss"]
#: Attacks in the cohort: cheap ones (no time-outs) that still fail in different ways.
COHORT_ATTACKS = ("a01", "a09", "a11", "a12", "a16", "a23", "a26", "a28")


def submission_key(folder: Path) -> str:
    """sha256 over the relative paths and bytes of the folder's regular files (the replay key)."""
    h = hashlib.sha256()
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def replay_grade(submission, *, exercises=None, profile="full", submission_limits=None, staged=False):
    """``grade_submission``'s signature (a ``GradeRequest`` or a path): the recorded result of an identical
    submission, else a real grading.

    Used by the batch workers (``stand_in_grader.install``); the recorded results live
    in ``$PPO_HOSTILE_REPLAY_DIR/<key>.json`` (``GradeResult`` as JSON).
    """
    from grader.records.results import GradeResult

    request = submission
    if hasattr(request, "submission"):  # a GradeRequest, as the workers pass it
        submission, exercises, profile = request.submission, request.exercises, request.profile
        staged = getattr(request, "staged", staged)
    replay = Path(os.environ[CACHE_ENV]) / f"{submission_key(Path(submission))}-{profile}-{'_'.join(exercises or [])}.json"
    if replay.is_file():
        result = GradeResult.model_validate_json(replay.read_text(encoding="utf-8"))
        return result.model_copy(update={"submission": Path(submission).name})
    from grader.grade import grade_submission

    if hasattr(request, "submission"):
        return grade_submission(request)
    return grade_submission(submission, exercises=exercises, profile=profile, staged=staged)


def record_grade(folder: Path, replay_dir: Path, *, exercises, profile: str, limits=None) -> None:
    """Grade ``folder`` for real and record the result for ``replay_grade``."""
    from grader.grade import grade_submission

    result = grade_submission(folder, exercises=exercises, profile=profile, limits=limits)
    replay_dir.mkdir(parents=True, exist_ok=True)
    name = f"{submission_key(folder)}-{profile}-{'_'.join(exercises or [])}.json"
    (replay_dir / name).write_text(result.model_dump_json(), encoding="utf-8")


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


def variants(hints: dict) -> dict[str, dict[str, bytes]]:
    """The distinct submissions of the cohort: ``{variant name: {file name: bytes}}`` (one or two exercises each).

    Good (solutions), buggy (the honest twins and the mistake catalogue's
    exercise 1-2 variants) and hostile (``COHORT_ATTACKS`` with their twin),
    plus an empty submission.
    """
    sol = {stem: (SOLUTIONS / f"{stem}.py").read_bytes() for stem in LOAD_EXERCISES}
    out: dict[str, dict[str, bytes]] = {
        "good-ex1": {"ex1_ratio.py": sol["ex1_ratio"]},
        "good-ex2": {"ex2_clipped_loss.py": sol["ex2_clipped_loss"]},
        "good-both": {"ex1_ratio.py": sol["ex1_ratio"], "ex2_clipped_loss.py": sol["ex2_clipped_loss"]},
        "twin-ex1": {"ex1_ratio.py": (TWINS / "ex1_unstable.py").read_bytes(), "ex2_clipped_loss.py": sol["ex2_clipped_loss"]},
        "twin-ex2": {"ex2_clipped_loss.py": (TWINS / "ex2_unmasked.py").read_bytes()},
        "empty": {},
    }
    for path in sorted(CATALOGUE.glob("ex[12]_*.py")):
        stem = path.name.split("__")[0]
        out[f"buggy-{path.stem}"] = {f"{stem}.py": path.read_bytes()}
    for path in sorted(ATTACKS.glob("a[0-9][0-9]_*.py")):
        if path.name[:3] not in COHORT_ATTACKS:
            continue
        attack = read_attack(path)
        out[f"hostile-{attack.name}"] = {f"{attack.target}.py": path.read_bytes(), "twin_code.py": attack.twin.read_bytes(),
                                         "hints.json": json.dumps(hints).encode()}
    return out


def write_cohort(root: Path, variant_files: dict[str, dict[str, bytes]], n: int, seed: int,
                 live: int = 0) -> dict[str, str]:
    """``n`` students ``sNNN-<variant>`` drawn (seeded) from the variants; returns ``{student id: variant}``.

    Every variant appears at least once. ``live`` students (drawn among the
    non-empty ones) get a trailing comment unique to them in each module, so
    that no replay matches and the worker grades them for real.
    """
    rng = random.Random(seed)
    names = sorted(variant_files)
    drawn = names + [rng.choice(names) for _ in range(n - len(names))]
    rng.shuffle(drawn)
    live_ids = set(rng.sample([i for i, v in enumerate(drawn) if variant_files[v]], live))
    cohort = {}
    for i, variant in enumerate(drawn):
        sid = f"s{i:03d}-{variant}" + ("-live" if i in live_ids else "")
        folder = root / sid
        folder.mkdir(parents=True)
        for name, data in variant_files[variant].items():
            if i in live_ids and name.endswith(".py") and name != "twin_code.py":
                data += f"\n# live student {sid}\n".encode()
            (folder / name).write_bytes(data)
        cohort[sid] = variant
    return cohort

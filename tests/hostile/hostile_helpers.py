"""Helpers of the hostile-submissions suite: the attacks, their honest twins and the submissions built from them.

A hostile entry is one module file in ``attacks/`` (what it tries and what it
must achieve, nothing, in its docstring; ``TARGET`` names the exercise module
it poses as, ``TWIN`` its honest twin in ``twins/``). Its honest twin is the
same wrong code submitted without the attack: the hostile submission ships
the twin as the helper module ``twin_code.py`` and calls it, so the two
differ by the attack alone.

The guards that watch the machine around a grading live in ``hostile_guards``;
attacks put the marker ``MARKER`` in every file name and command line they
create, so that those checks stay exact.
"""

from __future__ import annotations

import ast
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
ATTACKS = HERE / "attacks"
TWINS = HERE / "twins"
CANARY = HERE / "canary"
SOLUTIONS = REPO / "solutions"

MARKER = "ppohostile"
#: A modification time (2001-09-09) that no real edit produces: an attack's os.utime proves write access.
SENTINEL_MTIME = 1_000_000_007
#: The exercise whose correct module rides along in both submissions of a pair.
OTHER_EXERCISE = {"ex1_ratio": "ex2_clipped_loss", "ex2_clipped_loss": "ex1_ratio", "ex7_ppo_step": "ex6_kl_reward",
                  "ex4_gae": "ex5_rollout_buffer", "ex5_rollout_buffer": "ex4_gae"}


@dataclass(frozen=True)
class Attack:
    """One hostile entry of ``attacks/``: the file, the exercise it poses as and its twin."""

    path: Path
    target: str
    twin: Path
    doc: str

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def other(self) -> str:
        return OTHER_EXERCISE[self.target]


def read_attack(path: Path) -> Attack:
    """Read an attack's ``TARGET``, ``TWIN`` and docstring without importing it (it is hostile code).

    Raises:
        ValueError: if the file lacks a docstring, ``TARGET`` or ``TWIN``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    consts = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("TARGET", "TWIN"):
                consts[node.targets[0].id] = ast.literal_eval(node.value)
    doc = ast.get_docstring(tree) or ""
    if not doc or set(consts) != {"TARGET", "TWIN"}:
        raise ValueError(f"{path.name}: an attack needs a docstring, TARGET and TWIN")
    twin = TWINS / consts["TWIN"]
    if twin.is_file():
        # A twin that cannot be imported scores 0 (module_broken), and so does its attack, which imports it:
        # every comparison with it holds vacuously (a88's and a89's twins did not compile: a second docstring
        # before `from __future__`). compile() runs nothing.
        try:
            compile(twin.read_text(encoding="utf-8"), str(twin), "exec")
        except SyntaxError as exc:
            raise ValueError(f"{path.name}: its twin {twin.name} does not compile ({exc.msg}, line {exc.lineno})") \
                from None
    return Attack(path, consts["TARGET"], twin, doc)


def all_attacks() -> list[Attack]:
    """Every attack of ``attacks/`` (``aNN_*.py``, any number of digits: a99, a100 ...), in id order."""
    found = [p for p in ATTACKS.glob("a[0-9]*_*.py") if p.name.split("_")[0][1:].isdigit()]
    return [read_attack(p) for p in sorted(found, key=lambda p: (int(p.name.split("_")[0][1:]), p.name))]


def write_twin_submission(dest: Path, attack: Attack) -> Path:
    """The honest twin: the twin's wrong code as the target module, plus the correct other exercise."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(attack.twin, dest / f"{attack.target}.py")
    shutil.copyfile(SOLUTIONS / f"{attack.other}.py", dest / f"{attack.other}.py")
    return dest


def write_hostile_submission(dest: Path, attack: Attack, hints: dict) -> Path:
    """The hostile submission: the attack as the target module, the twin as ``twin_code.py``,
    the correct other exercise, and ``hints.json`` (paths and ports a well-informed attacker would know)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(attack.path, dest / f"{attack.target}.py")
    shutil.copyfile(attack.twin, dest / "twin_code.py")
    shutil.copyfile(SOLUTIONS / f"{attack.other}.py", dest / f"{attack.other}.py")
    (dest / "hints.json").write_text(json.dumps(hints, indent=1))
    return dest


def write_other_student(dest: Path) -> Path:
    """A canary "other student" beside the hostile one, holding correct modules (worth stealing)."""
    dest.mkdir(parents=True, exist_ok=True)
    for stem in OTHER_EXERCISE:
        shutil.copyfile(SOLUTIONS / f"{stem}.py", dest / f"{stem}.py")
    return dest


def scores_by_test(result) -> dict[tuple[str, str, str], tuple[float, float]]:
    """``{(exercise, kind, test): (score, max_score)}`` of a ``GradeResult``."""
    return {(t.exercise, t.kind, t.test): (t.score, t.max_score) for t in result.tests}


# --------------------------------------------------------------------------- the file system


def stable_results(results: dict) -> str:
    """results.json as sorted JSON without its timings (``execution_time``, ``extra_data.timing``): the only
    part allowed to differ between two gradings of the same submission."""
    data = json.loads(json.dumps(results))
    data.pop("execution_time", None)
    data.get("extra_data", {}).pop("timing", None)
    return json.dumps(data, sort_keys=True, indent=1)

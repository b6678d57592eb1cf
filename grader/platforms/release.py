"""The student bundle: ``build_release(out_dir)`` (behind ``ppo-course release OUT_DIR``).

What a student gets, and nothing else::

    OUT_DIR/
      pyproject.toml        distribution "ppo-course-student": packages ppo_course and quiz_bank only,
                            console script `ppo-course` (instructor commands are absent, so hidden)
      README.md             docs/student_guide.md (install, check, quiz, submit)
      install.sh            the one-command install (a venv, CPU torch, then this package)
      exercises/ex*.py      the stubs, generated now from solutions/ by tools/make_exercises.py
      ppo_course/           the public package: the small model, the config, the toy task,
                            `ppo-course check` and its public tests (ppo_course/public_tests/)
      ppo_course/training/reference_runs.json
                            the reference's training runs for ``REFERENCE_RUNS`` (per-step statistics only:
                            reward, KL, entropy, clip fraction, value loss, ...; no weights, no code), drawn by
                            `ppo-course train --mine` beside the student's run of the same config
      quiz_bank/            the question bank without keys (quiz_bank.export_public):
                            no keys.py, no `answer`, no `explanation`
      .ppo-course-release   a marker naming what wrote the folder (lets --force replace it safely)

What never ships: ``ppo_reference/`` (the trusted reference), ``grader/``
(hidden tests, points, comparison), ``solutions/``, quiz keys, caches. The
bundle is built from the instructor's source tree (an editable install or a
checkout): the stubs need ``solutions/`` and ``tools/make_exercises.py``.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

MARKER = ".ppo-course-release"
STUDENT_DISTRIBUTION = "ppo-course-student"
# Top-level names that must never appear in a bundle (checked after writing it).
FORBIDDEN_TOP_LEVEL = ("ppo_reference", "grader", "solutions", "tools", "tests", "benchmarks", "examples")
# Copied verbatim from the public package; caches, compiled files and shipped runs lying there are not.
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".pytest_cache", "*.egg-info", "reference_runs.json")

STUDENT_PYPROJECT = """\
# The student bundle of ppo-course (the PPO chapter's exercises, public tests and quiz).
# Install it with ./install.sh (a venv, CPU torch, then this package; see README.md).
[build-system]
requires = ["setuptools>=68", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
description = "PPO chapter (Book ch. 5): exercise stubs, public tests, `ppo-course check` and the quiz"
readme = "README.md"
requires-python = ">=3.10"
dependencies = [
    "torch>=2.1",
    "numpy>=1.24",
    "pydantic>=2.5",
    "pyyaml>=6.0",
    "rich>=13.0",
    "matplotlib>=3.7",
    "sympy>=1.12",
    "hypothesis==6.170.15",
    "pytest>=8.0",
]

[project.scripts]
ppo-course = "ppo_course.cli:main"

[tool.setuptools.packages.find]
# Only the public side: the instructor packages are not in this folder at all,
# and listing them here would not add them.
include = ["ppo_course*", "quiz_bank*"]

[tool.setuptools.package-data]
"*" = ["*.yaml", "*.md", "*.txt", "*.json"]
"""


#: The bundle's one-command install (``./install.sh``): what the repository's Makefile does for itself
#: (a venv, CPU torch first so pip never pulls a CUDA build, then the package). Rerunning it is harmless.
#: PYTHON, VENV, VENV_ARGS, PIP_ARGS and TORCH_INDEX_URL may be set (README: "Install"). torch comes from the
#: pip index the machine is configured with (PIP_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX, ``pip config``,
#: PIP_ARGS naming an index) when there is one, and from PyTorch's CPU index only when that fails or none is
#: configured: a mirror-only network never waits on download.pytorch.org. pip's in-tree
#: build leaves ``build/`` and ``*.egg-info`` in the bundle folder; install.sh removes the ones it made.
INSTALL_SH = """\
#!/bin/sh
# One command to install this bundle on your machine (Linux, macOS, WSL):
#     ./install.sh            (or: sh install.sh)
# It creates .venv in this folder, installs torch {torch} (the version the graders use; CPU) and then
# this folder's package (ppo_course, the quiz), and checks that `ppo-course` runs.
# Settings (environment variables): PYTHON (the interpreter), VENV (the environment's folder, default .venv),
# VENV_ARGS (for `python -m venv`), PIP_ARGS (for every `pip install`, e.g. "--no-index --find-links DIR"),
# TORCH_INDEX_URL (where CPU torch comes from when your pip has no index configured).
set -eu
cd "$(dirname "$0")"
PYTHON="${{PYTHON:-python3}}"
VENV="${{VENV:-.venv}}"
PIP_ARGS="${{PIP_ARGS:-}}"
TORCH_INDEX_URL="${{TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}}"
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
    echo "install.sh: needs Python 3.10 or newer as '$PYTHON' (run: PYTHON=/path/to/python3.11 ./install.sh)" >&2
    exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
    echo "creating $VENV ..."
    "$PYTHON" -m venv ${{VENV_ARGS:-}} "$VENV"
fi
# Is a pip index configured on this machine (a mirror, a wheel folder)? Then it is asked first.
index_configured() {{
    [ -n "${{PIP_INDEX_URL:-}}${{PIP_EXTRA_INDEX_URL:-}}${{PIP_FIND_LINKS:-}}${{PIP_NO_INDEX:-}}" ] && return 0
    case " $PIP_ARGS " in *index*|*find-links*|*" -i "*|*" -f "*) return 0 ;; esac
    "$VENV/bin/python" -m pip config list 2>/dev/null | grep -Eq '[.](index-url|extra-index-url|find-links|no-index)='
}}
if "$VENV/bin/python" -c 'import sys, torch; sys.exit(0 if torch.__version__.split("+")[0] == "{torch}" else 1)' 2>/dev/null; then
    echo "torch {torch} is already installed in $VENV"
elif index_configured; then
    echo "installing torch {torch} from your configured pip index ..."
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip install $PIP_ARGS "torch=={torch}" || {{
        echo "not found there; trying PyTorch's CPU index ($TORCH_INDEX_URL) ..."
        "$VENV/bin/python" -m pip install $PIP_ARGS "torch=={torch}" --index-url "$TORCH_INDEX_URL"; }}
else
    echo "installing CPU torch {torch} (about 200 MB) from $TORCH_INDEX_URL ..."
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip install $PIP_ARGS "torch=={torch}" --index-url "$TORCH_INDEX_URL"
fi
echo "installing this bundle's package ..."
had_build=no
[ -e build ] && had_build=yes
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install $PIP_ARGS .
# pip builds in this folder: remove what that build left (never a build/ folder that was here before).
[ "$had_build" = no ] && rm -rf build
rm -rf ./*.egg-info
"$VENV/bin/ppo-course" --help > /dev/null
echo
echo "Installed. Activate the environment with:  . $VENV/bin/activate"
echo "then check your work with:                 ppo-course check exercises"
"""
#: The torch version the graders use (installed first, CPU build, by install.sh).
TORCH_VERSION = "2.13.0"


#: The reference runs shipped in the bundle, as (``PPOConfig.toy`` overrides, steps): ``train --mine``'s defaults
#: (seed 0, 60 steps) and the three runs of the student guide's stop 8 (Book §5.9's danger table).
REFERENCE_RUNS: tuple[tuple[dict[str, float], int], ...] = (
    ({}, 60),
    ({"init_kl_coef": 0.001}, 100),
    ({"learning_rate": 1e-2}, 60),
    ({"init_kl_coef": 1.0}, 60),
)


class ReleaseError(RuntimeError):
    """The bundle cannot be written (missing source tree, non-empty target, a leak found)."""


def source_root() -> Path:
    """The instructor's source tree: the folder holding ``grader/``, ``solutions/`` and ``tools/``."""
    return Path(__file__).resolve().parents[2]


def _load_make_exercises(root: Path):
    """Import ``tools/make_exercises.py`` by path (``tools`` is not an installed package)."""
    path = root / "tools" / "make_exercises.py"
    if not path.is_file():
        raise ReleaseError(f"{path} is missing: the bundle is built from the source tree (a checkout), "
                           "not from an installed wheel")
    spec = importlib.util.spec_from_file_location("_ppo_course_make_exercises", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    # dataclasses look their module up in sys.modules while the module executes.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    return module


def _prepare_out_dir(out_dir: Path, force: bool) -> None:
    """Make ``out_dir`` an empty folder; only a previous bundle (with the marker) may be replaced."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ReleaseError(f"{out_dir} exists and is not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not force:
            raise ReleaseError(f"{out_dir} is not empty; choose an empty folder or pass --force "
                               "to replace a bundle written earlier")
        if not (out_dir / MARKER).is_file():
            # --force never deletes a folder we did not write (a typo must not wipe a home folder).
            raise ReleaseError(f"{out_dir} is not empty and holds no {MARKER} marker, so it was not written by "
                               "`ppo-course release`; refusing to delete it even with --force")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)


def ship_reference_runs(path: Path, runs: tuple[tuple[dict[str, float], int], ...] = REFERENCE_RUNS,
                        cache: Path | None = None) -> int:
    """Run the reference's training (CPU) for each of ``runs`` and write their per-step statistics to ``path``.

    Each run is read from, or written to, ``train --mine``'s reference cache (``ppo_course.training.report``:
    keyed by config, seed, steps, device and reference version), so a release after the first costs no training.

    Returns:
        How many runs came from the cache.
    """
    import warnings

    from rich.console import Console

    from grader.mistakes.train_reference import ReferenceTrainSide
    from ppo_course.config import PPOConfig
    from ppo_course.training.mine import reference_run
    from ppo_course.training.shipped import write_shipped

    side, shipped, cached = ReferenceTrainSide(), [], 0
    for overrides, steps in runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the stop-8 runs are outside the book's band on purpose
            config = PPOConfig.toy(**overrides)
        history, hit = reference_run(side, config, steps, device="cpu", console=Console(quiet=True),
                                     show_progress=False, cache=cache)
        shipped.append((config, history))
        cached += hit
    write_shipped(path, shipped)
    return cached


def _leaked(out_dir: Path) -> list[str]:
    """Instructor material found in the written bundle (forbidden top-level names, the quiz's keys)."""
    from quiz_bank.paths import BANK_DIR

    leaked = [name for name in FORBIDDEN_TOP_LEVEL if (out_dir / name).exists()]
    # The quiz's instructor side, by the names its modules have now (keys.py and the key modules beside it).
    instructor_quiz = BANK_DIR / "instructor"
    instructor_names = {"keys.py", "instructor"} | {p.name for p in instructor_quiz.glob("*.py") if p.name != "__init__.py"}
    return leaked + [str(p.relative_to(out_dir)) for p in out_dir.rglob("*") if p.name in instructor_names]


def build_release(out_dir: str | Path, *, force: bool = False,
                  reference_runs: tuple[tuple[dict[str, float], int], ...] = REFERENCE_RUNS,
                  cache: Path | None = None) -> list[Path]:
    """Write the student bundle into ``out_dir`` (layout in the module docstring).

    Args:
        out_dir: the target folder; created if absent; must be empty unless ``force``
            and it holds a bundle written earlier (the marker file).
        force: replace a bundle written earlier by this function.
        reference_runs: the reference runs to ship (``ship_reference_runs``); () ships none.
        cache: the reference runs' cache folder (None: ``ppo_course.training.report.cache_dir()``).

    Returns:
        Every file written, sorted.

    Raises:
        ReleaseError: if the source tree (solutions/, tools/) is absent, ``out_dir`` is not
            empty (and not a previous bundle with ``force``), or a forbidden top-level name
            (ppo_reference, grader, solutions, ...) ended up in the bundle.
    """
    import ppo_course
    from quiz_bank import export_public

    root = source_root()
    solutions = root / "solutions"
    if not any(solutions.glob("ex*.py")):
        raise ReleaseError(f"no solution modules in {solutions}: the stubs are generated from them")
    make = _load_make_exercises(root)
    out_dir = Path(out_dir).resolve()
    source_folders = [root] + [root / name for name in ("ppo_course", "ppo_reference", "grader", "quiz_bank",
                                                       "solutions", "exercises", "tools", "tests")]
    if any(out_dir == folder or (folder != root and folder in out_dir.parents) for folder in source_folders):
        # The repository root or one of its packages: --force could wipe source files, and a bundle
        # inside a package would be picked up by the instructor's own install.
        raise ReleaseError(f"{out_dir} is the source tree or one of its packages; write the bundle elsewhere "
                           "(e.g. dist/ppo-ch5-student)")
    _prepare_out_dir(out_dir, force)

    make.make_exercises(solutions, out_dir / "exercises")
    shutil.copytree(Path(ppo_course.__file__).resolve().parent, out_dir / "ppo_course", ignore=_IGNORE)
    if reference_runs:
        ship_reference_runs(out_dir / "ppo_course" / "training" / "reference_runs.json", reference_runs, cache)
    export_public(out_dir / "quiz_bank")
    (out_dir / "pyproject.toml").write_text(
        STUDENT_PYPROJECT.format(name=STUDENT_DISTRIBUTION, version=ppo_course.__version__), encoding="utf-8")
    guide = root / "docs" / "student_guide.md"
    readme = guide.read_text(encoding="utf-8") if guide.is_file() else (
        "# PPO chapter: student bundle\n\nInstall with `python -m pip install .`, then run `ppo-course check`.\n")
    (out_dir / "README.md").write_text(readme, encoding="utf-8")
    install = out_dir / "install.sh"
    install.write_text(INSTALL_SH.format(torch=TORCH_VERSION), encoding="utf-8")
    install.chmod(0o755)
    (out_dir / MARKER).write_text(f"written by `ppo-course release` (ppo-course {ppo_course.__version__})\n",
                                  encoding="utf-8")

    leaked = _leaked(out_dir)
    if leaked:  # pragma: no cover - a guard against a future edit of this function
        raise ReleaseError(f"instructor material ended up in the bundle: {leaked}")
    return sorted(p for p in out_dir.rglob("*") if p.is_file())

"""Where the instructor side plugs into the public quiz: answer keys, the attempt policy, the server's verbs.

The public engine (``quiz_bank/*.py``, what ships in the student bundle) imports nothing of
``quiz_bank/instructor/``. An instructor's install adds its side through one module, named here
(``INSTRUCTOR_EXTENSION``) and loaded by name only when it sits beside this package, as the
``ppo-course`` command line finds the grader's commands (``ppo_course.cli.INSTRUCTOR_COMMANDS``).
That module provides:

- ``compute(key_name, params) -> answer`` and ``key_names()`` (the registered key names): a
  parametric question's key;
- ``load_policy(path) -> AttemptPolicy``: the course's attempt policy (``path`` None: the default);
- ``add_server_arguments(verbs)``: the server's verbs on ``ppo-course quiz``'s sub-parsers, and
  ``SERVER_VERBS``, verb name -> ``run(args) -> int``.

The student bundle has no ``instructor/`` folder: :func:`instructor_extension` is then None, and the
engine records responses without checking them.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path
from types import ModuleType

#: The one module through which an instructor's install extends the public quiz.
INSTRUCTOR_EXTENSION = "quiz_bank.instructor.extension"


def extension_file() -> Path:
    """Where the instructor side's extension module sits in this install (it may be absent)."""
    return Path(__file__).resolve().parent.joinpath(*INSTRUCTOR_EXTENSION.split(".")[1:]).with_suffix(".py")


@lru_cache(maxsize=1)
def instructor_extension() -> ModuleType | None:
    """The instructor side's extension module, or None in the student bundle (found once per process).

    Only the file beside this package counts: an ``instructor`` package found through another install's
    import hook does not.

    Raises:
        ModuleNotFoundError: if the module is there but one of its own imports is missing (a broken
            install is reported, never hidden).
    """
    if not extension_file().is_file():
        return None
    return importlib.import_module(INSTRUCTOR_EXTENSION)

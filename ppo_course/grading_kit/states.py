"""The state of one exercise module, named once for the student's ``check`` and the TA's grader.

Student side: imports nothing trusted; ``grader`` imports it (``grader.records.results.ExerciseResult.state``),
never the reverse. An exercise module is in exactly one of these states:

* ``graded``: it imported and its tests ran (whatever their score);
* ``missing``: ``<stem>.py`` is not in the submission;
* ``syntax_error``: importing it raised ``SyntaxError`` (or ``IndentationError``/``TabError``), in the
  module itself or in a file it imports (``error_file``, ``error_line`` say where when known);
* ``import_error``: importing it failed otherwise (an exception, exit, crash or time-out at import);
* ``not_implemented``: it imported, and every one of its tests failed with ``NotImplementedError``.

Typed results end to end; the words follow the gradebook's message column
(``grader.records.outcome.exercise_reasons``) and ``ppo-course check``'s summary table.
"""

from __future__ import annotations

from typing import Literal, get_args

ExerciseState = Literal["graded", "missing", "syntax_error", "import_error", "not_implemented"]
#: Every state, in the order of the module docstring.
EXERCISE_STATES: tuple[str, ...] = get_args(ExerciseState)
#: The exception names that make an import failure a ``syntax_error`` (Python's SyntaxError family).
SYNTAX_ERROR_NAMES = frozenset({"SyntaxError", "IndentationError", "TabError"})


def import_failure_state(error_type: str) -> ExerciseState:
    """``syntax_error`` when ``error_type`` (an exception class name, "" if unknown) is a SyntaxError, else ``import_error``."""
    return "syntax_error" if error_type in SYNTAX_ERROR_NAMES else "import_error"


def error_place(stem: str, error_line: int | None, error_file: str | None) -> str:
    """Where an import failed, in the gradebook's words: "line 83", "in helper.py line 3", or "".

    Args:
        stem: the exercise module's stem (e.g. "ex4_gae"); an error in ``<stem>.py`` says "line N" alone.
        error_line: the 1-based line of the error, or None when unknown.
        error_file: the file's base name (e.g. "helper.py"), or None when unknown.

    Returns:
        "" unless both the line and the file are known (as Python's own ``str(SyntaxError)`` shows them).
    """
    if error_line is None or not error_file:
        return ""
    return f"line {error_line}" if error_file == f"{stem}.py" else f"in {error_file} line {error_line}"

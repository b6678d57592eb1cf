"""The "Raises: ValueError" promises of the exercise docstrings, graded (reported) by the hidden tests.

Each exercise's docstring promises a ValueError on malformed input (mismatched
shapes, an unknown placement, a non-positive horizon). A promise is graded or
not made: each of these tests is worth a small 0.25 points (``grader/points.yaml``),
counted once the exercise's value tests show that the functions compute
(``requires:``; a function that raises ValueError on every input has them too).
Listed in ``grader/mistakes/behaviours.yaml``.
"""

from __future__ import annotations

from collections.abc import Callable

from ppo_course.grading_kit.feedback import Mismatch


def expect_value_errors(cases: dict[str, Callable[[], object]], error_name: Callable[[BaseException], str | None],
                        what: str) -> None:
    """Mismatch('missing_documented_error') unless every case raises ValueError (the docstring's promise).

    Args:
        cases: {label (no hidden value in it): a call of the student's code on malformed input}.
        error_name: the provider's map from a caught exception to the student's exception type name.
        what: the function, for the message.

    Raises:
        Mismatch: naming the first case that did not raise ValueError.
    """
    for label, call in cases.items():
        try:
            call()
        except Exception as exc:  # the student's exception, reported by type name
            name = error_name(exc)
            if name is None:
                raise
            if name == "ValueError":
                continue
            if name == "NotImplementedError":
                raise Mismatch("not_implemented", name, what) from None
            raise Mismatch("missing_documented_error", f"{label}: {name} instead of ValueError", what) from None
        raise Mismatch("missing_documented_error", f"{label}: no ValueError", what)

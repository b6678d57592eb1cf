"""Points and visibility of every grader test, validated from `grader/points.yaml`.

One place decides what each test is worth and who sees it: `grade`, the
nbgrader course and the Gradescope bundle all read this file through
`load_points()`. Tests are keyed by exercise (module stem, e.g. "ex4_gae"),
by kind ("hidden": `grader/hidden/test_<stem>.py`; "public":
`ppo_course/public_tests/test_<stem>.py`, the subset students run with
`ppo-course check`) and by test function name.

In the YAML a test is either a number (its points, default visibility for its
kind) or a mapping `{points: 2, visibility: visible, tags: [...], twins: [...], requires: [...]}`.

Points rest on inputs no student has seen: a public test's
inputs are shown, so a table of its answers would pass it. Every public test
worth points names its hidden `twins` (the same property on inputs drawn from
the grader's secret, `grader.hidden.draws`), and its points count only when it
passes AND every twin passes (`ExercisePoints.counted`); a public test that
passes while a twin fails is reported as passed, worth 0.
A hidden test of a property that a function computing nothing also has (its
inputs left untouched, no gradient into constants) names the value tests it
`requires`: its points count when each of them passed or failed while the
function computes (`shows_work`: by behaviour, never by whether the mistake is
catalogued), so a module whose functions return None, zeros or an input does
not earn them, and a student with any computing mistake,
named or not, keeps them.
Visibility values are Gradescope's: hidden, after_due_date, after_published,
visible. Hidden tests default to "after_published": the student sees their
name, points and diagnosis once grades are out, never their inputs; public
tests default to "visible".
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ppo_course.syllabus import EXERCISES  # the one list (student side); re-exported here for points.yaml's readers

POINTS_FILE = Path(__file__).with_name("points.yaml")


Visibility = Literal["hidden", "after_due_date", "after_published", "visible"]
Kind = Literal["hidden", "public"]
DEFAULT_VISIBILITY: dict[str, Visibility] = {"hidden": "after_published", "public": "visible"}


class TestPoints(BaseModel):
    """What one test is worth (points ≥ 0) and who sees it."""

    __test__ = False  # not a pytest class despite the name
    model_config = ConfigDict(extra="forbid")

    points: float = Field(ge=0)
    visibility: Visibility | None = None
    tags: list[str] = Field(default_factory=list)
    #: Hidden tests of the same exercise whose passing a public test's points need (public tests only).
    twins: list[str] = Field(default_factory=list)
    #: Hidden tests of the same exercise whose passing a hidden *property* test's points need (hidden tests
    #: only): a property that a function computing nothing has (it leaves its inputs untouched, it keeps
    #: copies) is worth points only beside the values.
    requires: list[str] = Field(default_factory=list)

    @property
    def prerequisites(self) -> list[str]:
        """The hidden tests this test's points need: its `twins` (public) or its `requires` (hidden)."""
        return [*self.twins, *self.requires]


def _expand(tests: object) -> object:
    """Accept `name: 2` as shorthand for `name: {points: 2}`."""
    if isinstance(tests, dict):
        return {k: ({"points": v} if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
                for k, v in tests.items()}
    return tests


class ExercisePoints(BaseModel):
    """The tests of one exercise, hidden and public, with their points."""

    model_config = ConfigDict(extra="forbid")

    title: str
    hidden: dict[str, TestPoints] = Field(default_factory=dict)
    public: dict[str, TestPoints] = Field(default_factory=dict)

    _expand_hidden = field_validator("hidden", "public", mode="before")(lambda cls, v: _expand(v))

    @model_validator(mode="after")
    def _names_are_tests(self) -> "ExercisePoints":
        for kind in ("hidden", "public"):
            for name in getattr(self, kind):
                if not name.startswith("test_"):
                    raise ValueError(f"{kind} test {name!r}: pytest test names start with 'test_'")
        for name, entry in self.hidden.items():
            if entry.twins:
                raise ValueError(f"hidden test {name!r}: only public tests have twins")
            unknown = [t for t in entry.requires if t not in self.hidden or t == name]
            if unknown:
                raise ValueError(f"hidden test {name!r}: requires {unknown}, which are not other hidden tests "
                                 "of this exercise")
            chained = [t for t in entry.requires if self.hidden[t].requires]
            if chained:
                raise ValueError(f"hidden test {name!r}: requires {chained}, which require other tests themselves")
        for name, entry in self.public.items():
            if entry.requires:
                raise ValueError(f"public test {name!r}: only hidden tests have `requires` (public ones name twins)")
            if entry.points > 0 and not entry.twins:
                raise ValueError(f"public test {name!r} is worth points but names no hidden twin (see the rule above)")
            unknown = [t for t in entry.twins if t not in self.hidden]
            if unknown:
                raise ValueError(f"public test {name!r}: twins {unknown} are not hidden tests of this exercise")
        return self

    def counted(self, kind: Kind, name: str, passed: bool, passed_of: "Callable[[str], bool]",
                worked_of: "Callable[[str], bool] | None" = None) -> bool:
        """Whether a test's points count: it passed, every hidden twin of a public test passed, and every
        value test a hidden property test `requires` shows work (passed, or failed naming a known mistake).

        Args:
            kind, name: the test.
            passed: its own outcome.
            passed_of: hidden test name -> whether it passed in this grading (False when it did not run).
            worked_of: hidden test name -> whether the function did the work there: it passed or it failed
                with a computed value (`grader.points.shows_work`); default `passed_of`. A student with any
                computing mistake, catalogued or not, keeps the property's points (the promise of the points
                table); a function returning None, zeros or its input does not.
        """
        worked_of = worked_of or passed_of

        def holds(hidden: str) -> bool:  # a twin that requires value tests holds only with them
            entry = self.hidden.get(hidden)
            return passed_of(hidden) and all(worked_of(r) for r in (entry.requires if entry else ()))

        entry = self.entry(kind, name)
        return passed and all(holds(t) for t in entry.twins) and all(worked_of(r) for r in entry.requires)

    def entry(self, kind: Kind, name: str) -> TestPoints:
        """The entry of one test. Raises KeyError naming the test when it is not configured."""
        table = getattr(self, kind)
        if name not in table:
            raise KeyError(f"{kind} test {name!r} has no entry in grader/points.yaml")
        return table[name]

    def visibility(self, kind: Kind, name: str) -> Visibility:
        """The test's visibility, falling back to the default of its kind."""
        return self.entry(kind, name).visibility or DEFAULT_VISIBILITY[kind]

    @property
    def max_score(self) -> float:
        """Sum of the points of all tests of this exercise."""
        return float(sum(t.points for t in self.hidden.values()) + sum(t.points for t in self.public.values()))


#: Diagnoses that show no work: the function returned no usable value (None, one constant such as zeros, an
#: input unchanged: `computes_nothing`; another type, shape or dtype; NaN/inf), raised, or never ran. Every
#: other diagnosis, `wrong_value` included, is a function that computes: the rule looks at behaviour only,
#: never at whether the mistake is catalogued.
NO_WORK_DIAGNOSES = frozenset({
    "computes_nothing", "wrong_type", "wrong_dtype", "wrong_device", "wrong_shape", "not_scalar", "not_finite",
    "mask_dtype_unsupported", "modifies_input", "not_implemented", "missing_name", "module_missing",
    "module_broken", "missing_documented_error", "iterator_ended_early", "raises_error", "out_of_memory",
    "timeout", "wrong_signature", "prints_too_much", "crash", "grader_error"})


def shows_work(passed: bool, diagnosis: str | None) -> bool:
    """Whether a value test shows that the function computes: it passed, or it failed with a diagnosis that
    is not one of `NO_WORK_DIAGNOSES` (a wrong value the function computed, named or not)."""
    return passed or (diagnosis is not None and diagnosis not in NO_WORK_DIAGNOSES)


class PointsConfig(BaseModel):
    """The whole points file: a grader version and one entry per exercise (all seven, in order)."""

    model_config = ConfigDict(extra="forbid")

    grader_version: str
    exercises: dict[str, ExercisePoints]

    @model_validator(mode="after")
    def _all_exercises(self) -> "PointsConfig":
        got = tuple(self.exercises)
        if set(got) != set(EXERCISES):
            missing = sorted(set(EXERCISES) - set(got))
            extra = sorted(set(got) - set(EXERCISES))
            raise ValueError(f"points.yaml must list exactly the seven exercises; missing {missing}, unknown {extra}")
        return self

    @property
    def max_score(self) -> float:
        """Total points over all exercises."""
        return float(sum(e.max_score for e in self.exercises.values()))


@functools.lru_cache(maxsize=4)
def load_points(path: str | Path = POINTS_FILE) -> PointsConfig:
    """Read and validate the points file (cached per path).

    Raises:
        FileNotFoundError: if the file is missing.
        pydantic.ValidationError: if it does not follow the schema above (the message
            names the offending exercise and test).
    """
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    return PointsConfig.model_validate(data)

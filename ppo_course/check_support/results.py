"""The typed results of one ``ppo-course check`` run, from the child that ran the tests to the summary.

The child (``check_support.runner``) writes them as JSON; the parent reads them back into these
classes and never parses a traceback: the state of each module is the grader's own vocabulary
(``ppo_course.grading_kit.states.ExerciseState``), filled from the exception objects where they
were raised (``check_support.local.LocalProvider``).

``check`` uses the same typed states as ``grade``, with no regex over output.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from ppo_course.grading_kit.states import EXERCISE_STATES, ExerciseState


@dataclass
class ModuleReport:
    """What became of one exercise module (``<stem>.py``) when the child imported and called it.

    ``state``: ``graded`` (it imported), ``syntax_error`` or ``import_error`` (its import failed);
    ``missing`` and ``not_implemented`` are decided by the summary (a file absent; every test waiting).
    ``error_type``: the import's exception class name ("" when it imported); ``error_line`` (1-based)
    and ``error_file`` (a base name such as "ex4_gae.py" or "helper.py"): where, when known;
    ``detail``: the import's message as Python prints it (the student's own code, on their machine);
    ``not_implemented``: the functions of this module that raised ``NotImplementedError`` ("ppo_step",
    "RolloutBuffer.add"), in the order first seen.
    """

    state: ExerciseState = "graded"
    error_type: str = ""
    error_line: int | None = None
    error_file: str | None = None
    detail: str = ""
    not_implemented: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.state not in EXERCISE_STATES:
            raise ValueError(f"unknown exercise state {self.state!r}; one of {EXERCISE_STATES}")

    def merge(self, other: ModuleReport) -> None:
        """Fold the report of a later child (after a restart) into this one: an import failure stands."""
        if self.state == "graded" and other.state != "graded":
            self.state, self.error_type, self.error_line, self.error_file, self.detail = (
                other.state, other.error_type, other.error_line, other.error_file, other.detail)
        self.not_implemented += [n for n in other.not_implemented if n not in self.not_implemented]


@dataclass
class TestOutcome:
    """The outcome of one public test function over all its items (``grading_kit.collect.Outcome``, read back).

    ``diagnosis``: a mistake id of ``grading_kit.diagnoses.DIAGNOSES`` or a state of the run
    ("not_implemented", "module_broken", "module_missing", "wrong_signature", "timeout", "crash" ...);
    ``detail``: expected vs got, the failing example (public tests only); ``output``/``passed_output``:
    what the student's code printed (capped by ``check_support.guard``).
    """

    __test__ = False  # not a pytest test class, whatever its name

    exercise: str
    test: str
    kind: str = "public"
    doc: str = ""
    passed: bool = True
    diagnosis: str | None = None
    detail: str = ""
    items: int = 0
    failed_items: list[str] = field(default_factory=list)
    output: str = ""
    passed_output: str = ""
    printed_lines: int = 0

    @classmethod
    def from_dict(cls, data: dict) -> TestOutcome:
        """From ``Outcome.to_dict()`` (keys this class does not know are ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def merge(self, other: TestOutcome) -> None:
        """Fold another child's items of the same test function into this one (all items must pass)."""
        self.items += other.items
        self.failed_items += other.failed_items
        self.printed_lines += other.printed_lines
        if self.passed and not other.passed:
            self.passed, self.diagnosis, self.detail, self.output = (
                False, other.diagnosis, other.detail, other.output)
        self.passed_output = self.passed_output or other.passed_output


@dataclass
class CheckRun:
    """Everything one ``check`` run found: per-test outcomes, per-module reports, a run-level error.

    ``error``: set when the run could not finish (the child died outside any test, or too often);
    ``printed_lines``: lines the student's code printed over the run.
    """

    outcomes: list[TestOutcome] = field(default_factory=list)
    modules: dict[str, ModuleReport] = field(default_factory=dict)
    error: str | None = None
    printed_lines: int = 0

    def add_outcome(self, outcome: TestOutcome) -> None:
        """Add one test function's outcome, merged with an earlier one of the same (exercise, test)."""
        for have in self.outcomes:
            if (have.exercise, have.test) == (outcome.exercise, outcome.test):
                have.merge(outcome)
                return
        self.outcomes.append(outcome)

    def add_modules(self, reports: dict[str, dict]) -> None:
        """Add the module reports a child wrote (``{stem: asdict(ModuleReport)}``)."""
        for stem, data in reports.items():
            report = ModuleReport(**data)
            if stem in self.modules:
                self.modules[stem].merge(report)
            else:
                self.modules[stem] = report

    def module(self, stem: str) -> ModuleReport:
        """The report of ``stem`` (a fresh ``graded`` one when the child never loaded it)."""
        return self.modules.get(stem) or ModuleReport()


def module_reports_json(reports: dict[str, ModuleReport]) -> dict[str, dict]:
    """``{stem: dict}`` for JSON (the child's side of ``CheckRun.add_modules``)."""
    return {stem: asdict(report) for stem, report in reports.items()}

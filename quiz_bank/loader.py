"""Loading and validating the bank, with file, line and question id in every error.

PyYAML's composer keeps a start mark (line, column) on every node; a pydantic
error's ``loc`` (e.g. ``("questions", 3, "options", 1, "text")``) is walked
down that node tree to the deepest node it reaches, whose line is reported.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import ValidationError

from ppo_course.syllabus import N_STOPS
from quiz_bank.models import StopFile
from quiz_bank.paths import BANK_DIR

MIN_QUESTIONS_PER_STOP = 8
MIN_PARAMETRIC_FRACTION = 0.6  # most items drawn per (student, attempt): parametric or derived
MIN_ITEMS_PER_CLAIM = 2  # or one parametric item: a retry meets another question on a missed claim
MIN_UNDERSTAND_PER_STOP = 2
# Any fixed student id works: validation draws one variant per parametric
# question to check that its prompt's {fields} are all produced by the draw.
_PROBE_STUDENT = "validate-probe"


@dataclass(frozen=True)
class BankError:
    """One problem in the bank: ``file:line: [question id] message``."""

    file: str
    line: int | None
    question_id: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        qid = f" [{self.question_id}]" if self.question_id else ""
        return f"{where}:{qid} {self.message}"


class BankInvalid(Exception):
    """The bank failed validation; ``errors`` lists every :class:`BankError`."""

    def __init__(self, errors: list[BankError]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


@dataclass
class Bank:
    """The validated bank: stop number → :class:`StopFile`, plus where it was loaded from."""

    directory: Path
    stops: dict[int, StopFile]
    lines: dict[str, int] = field(default_factory=dict)  # question id -> line in its file

    def questions(self, stop: int | None = None) -> list:
        """The questions in bank order (stop 1 first), optionally of one stop only."""
        stops = [stop] if stop is not None else sorted(self.stops)
        return [q for s in stops for q in self.stops[s].questions]

    @cached_property
    def by_id(self) -> dict[str, Any]:
        """Question id → question."""
        return {q.id: q for q in self.questions()}

    def claims(self, stop: int | None = None) -> list:
        """The declared claims (:class:`quiz_bank.models.Claim`) in bank order, optionally of one stop."""
        stops = [stop] if stop is not None else sorted(self.stops)
        return [c for s in stops for c in self.stops[s].claims]

    def items_of(self, claim_id: str) -> list:
        """The questions that ask ``claim_id`` (interchangeable items), in bank order."""
        return [q for q in self.questions() if q.claim == claim_id]

    @property
    def has_fixed_keys(self) -> bool:
        """True when every fixed question carries its answer (false for the public bank)."""
        return all(q.has_key for q in self.questions())


def _node_at(root: yaml.Node, loc: Iterable[Any]) -> yaml.Node:
    """The deepest node reached by following ``loc`` (unknown steps, e.g. union tags, are skipped)."""
    node = root
    for step in loc:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == step:
                    node = value_node
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            node = node.value[step]
    return node


def _question_id(data: Any, loc: tuple) -> str | None:
    if len(loc) >= 2 and loc[0] == "questions" and isinstance(loc[1], int):
        try:
            qid = data["questions"][loc[1]].get("id")
            return str(qid) if qid is not None else f"questions[{loc[1]}]"
        except (KeyError, IndexError, TypeError, AttributeError):
            return None
    return None


def _template_fields(prompt: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(prompt) if name}


def load_stop_file(path: Path) -> tuple[StopFile | None, dict[str, int], list[BankError]]:
    """Parse and validate one ``stop<N>.yaml``; returns (model or None, id → line, errors)."""
    name = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return None, {}, [BankError(name, None, None, f"cannot read: {exc}")]
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        return None, {}, [BankError(name, line, None, f"YAML syntax error: {exc.problem or exc}")]
    if root is None or not isinstance(data, dict):
        return None, {}, [BankError(name, 1, None, "expected a mapping with stop, title and questions")]
    lines: dict[str, int] = {}
    questions_node = _node_at(root, ["questions"])
    if isinstance(questions_node, yaml.SequenceNode) and isinstance(data.get("questions"), list):
        for i, qnode in enumerate(questions_node.value):
            qid = _question_id(data, ("questions", i))
            if qid:
                lines[qid] = qnode.start_mark.line + 1
    try:
        model = StopFile.model_validate(data)
    except ValidationError as exc:
        errors = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            node = _node_at(root, loc)
            shown = ".".join(str(p) for p in loc[2:] if not (isinstance(p, str) and p in _TYPE_TAGS)) or ".".join(
                str(p) for p in loc
            )
            errors.append(
                BankError(name, node.start_mark.line + 1, _question_id(data, loc), f"{shown}: {err['msg']}")
            )
        return None, lines, errors
    try:
        from quiz_bank.derived import with_derived

        model = with_derived(model)
    except (ValidationError, ValueError) as exc:
        return None, lines, [BankError(name, 1, None, f"derived items: {exc}")]
    for q in model.questions:  # a derived item points at its source's line
        for suffix in ("-tf", "-pairs", "-judge"):
            if q.id not in lines and q.id.endswith(suffix) and q.id[: -len(suffix)] in lines:
                lines[q.id] = lines[q.id[: -len(suffix)]]
    expected_name = f"stop{model.stop}.yaml"
    if name != expected_name:
        return None, lines, [BankError(name, 1, None, f"file declares stop {model.stop}; it must be named {expected_name}")]
    return model, lines, []


_TYPE_TAGS = {"single", "multi", "true_false", "numeric", "symbolic", "ordering"}


def _kind_ok(q, value: Any) -> bool:
    """Whether a computed key has the type ``q`` answers with (an option id for a parametric single)."""
    if q.type == "true_false":
        return isinstance(value, bool)
    if q.type == "single":
        return isinstance(value, str) and value in {o.id for o in q.options}
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _parametric_errors(q, file: str, line: int | None, keys_module) -> list[BankError]:
    """A parametric question's draw, prompt fields and (instructor side) key, on every finite case.

    Generators over a finite list of cases (``variants.enumerate_cases``) are checked
    on each case, so that no case can lack a field or a key; others on one probe draw.
    """
    from quiz_bank import variants

    spec = q.parametric
    err = lambda message: BankError(file, line, q.id, message)  # noqa: E731
    if spec.generator not in variants.GENERATORS:
        return [err(f"parametric.generator: unknown generator {spec.generator!r}")]
    try:
        draws = variants.enumerate_cases(spec.generator, spec.args) or [
            variants.draw(spec.generator, spec.args, _PROBE_STUDENT, q.id, 1)]
    except Exception as exc:  # noqa: BLE001 - any failure of a draw is a bank error
        return [err(f"parametric: the draw failed: {type(exc).__name__}: {exc}")]
    try:
        fields = _template_fields(q.prompt)
    except ValueError as exc:
        return [err(f"prompt: not a valid template ({exc}); write literal braces as {{{{ }}}}")]
    for params in draws:
        missing = fields - set(params)
        if missing:
            return [err(f"prompt: fields {sorted(missing)} are not produced by {spec.generator} ({params.get('case', 'probe draw')})")]
        if keys_module is None:
            continue
        if spec.key not in keys_module.KEYS:
            return [err(f"parametric.key: unknown key function {spec.key!r}")]
        try:
            value = keys_module.compute(spec.key, params)
        except Exception as exc:  # noqa: BLE001
            return [err(f"parametric.key: {spec.key} failed: {type(exc).__name__}: {exc}")]
        if not _kind_ok(q, value):
            return [err(f"parametric.key: {spec.key} returned {value!r}, not a {q.type} answer")]
    return []


def _claim_errors(bank: Bank) -> list[BankError]:
    """The bank's coverage rules: each claim asked by ≥ 2 items (or ≥ 1 parametric), ≥ 2 understanding items per stop."""
    errors: list[BankError] = []
    for stop, stop_file in sorted(bank.stops.items()):
        file = f"stop{stop}.yaml"
        for claim in stop_file.claims:
            items = [q for q in stop_file.questions if q.claim == claim.id]
            if len(items) < MIN_ITEMS_PER_CLAIM and not any(q.is_parametric for q in items):
                errors.append(BankError(file, None, None, f"claim {claim.id} is asked by {len(items)} item(s); "
                                        f"it needs at least {MIN_ITEMS_PER_CLAIM}, or one parametric item"))
        from quiz_bank.derived import SUFFIXES

        # Derived items repeat their source's scenario: only written items count here.
        understand = sum(q.level == "understand" and not q.id.endswith(SUFFIXES) for q in stop_file.questions)
        if understand < MIN_UNDERSTAND_PER_STOP:
            errors.append(BankError(file, None, None, f"only {understand} understanding item(s); each stop needs "
                                    f"at least {MIN_UNDERSTAND_PER_STOP}"))
    return errors


def _semantic_errors(bank: Bank, check_keys: bool) -> list[BankError]:
    """Checks pydantic cannot make: generators, prompt fields, keys, claims, bank-wide counts."""
    errors: list[BankError] = []
    keys_module = None
    if check_keys:
        from quiz_bank.instructor import keys as keys_module  # noqa: PLW0406 - instructor side only

    for stop, stop_file in sorted(bank.stops.items()):
        file = f"stop{stop}.yaml"
        for q in stop_file.questions:
            line = bank.lines.get(q.id)
            if q.is_parametric:
                errors.extend(_parametric_errors(q, file, line, keys_module))
            elif check_keys and not q.has_key:
                errors.append(BankError(file, line, q.id, "answer: missing (the instructor bank needs every key)"))
    present = {p.name for p in bank.directory.glob("stop*.yaml")}
    for stop in range(1, N_STOPS + 1):
        if f"stop{stop}.yaml" not in present:
            errors.append(BankError(f"stop{stop}.yaml", None, None, "missing: the bank needs one file per stop 1–8"))
    errors.extend(_claim_errors(bank))
    total = len(bank.questions())
    parametric = sum(q.is_parametric for q in bank.questions())
    if total and parametric < MIN_PARAMETRIC_FRACTION * total:
        errors.append(BankError(str(bank.directory.name), None, None,
                                f"only {parametric}/{total} questions are parametric; at least {MIN_PARAMETRIC_FRACTION:.0%} must be"))
    return errors


@lru_cache(maxsize=1)
def keys_installed() -> bool:
    """True on an instructor's or self-learner's full install (found once per process: an install does not change).

    That is: ``keys.py`` sits beside this module (the exported student package
    has none; a ``quiz_bank.instructor.keys`` found elsewhere, e.g. through another
    install's import hook, does not count) and ``ppo_reference`` imports.
    """
    import importlib.util

    if not (Path(__file__).resolve().parent / "instructor" / "keys.py").is_file():
        return False
    try:
        return importlib.util.find_spec("ppo_reference") is not None
    except (ImportError, ValueError):
        return False


def validate_bank(directory: Path | str | None = None, *, check_keys: bool | None = None) -> tuple[Bank | None, list[BankError]]:
    """Load every ``stop*.yaml`` under ``directory`` and return (bank or None, errors).

    Args:
        directory: the bank folder (default: this package's folder).
        check_keys: also compute every parametric key once and insist on fixed
            answers; default: when the keys are installed and the YAML has answers.
    """
    directory = Path(directory) if directory is not None else BANK_DIR
    paths = sorted(directory.glob("stop*.yaml"))
    if not paths:
        return None, [BankError(str(directory), None, None, "no stop*.yaml files found")]
    stops: dict[int, StopFile] = {}
    lines: dict[str, int] = {}
    errors: list[BankError] = []
    for path in paths:
        model, file_lines, file_errors = load_stop_file(path)
        errors.extend(file_errors)
        lines.update(file_lines)
        if model is not None:
            if model.stop in stops:
                errors.append(BankError(path.name, 1, None, f"stop {model.stop} is defined twice"))
            stops[model.stop] = model
    bank = Bank(directory=directory, stops=stops, lines=lines)
    if check_keys is None:
        check_keys = keys_installed() and bool(stops) and bank.has_fixed_keys
    errors.extend(_semantic_errors(bank, check_keys))
    return (bank if not errors else None), errors


def load_bank(directory: Path | str | None = None) -> Bank:
    """The validated bank.

    Raises:
        BankInvalid: listing every error with file, line and question id.
    """
    bank, errors = validate_bank(directory, check_keys=False)
    if errors:
        raise BankInvalid(errors)
    return bank

"""The quiz engine: variants, answer checking, the completion policy and the 100% rule's pieces.

A variant is a function of (student, question, attempt) (``quiz_bank.variants``).
A stop passes only when *every* one of its questions is right; the chapter is
complete only when all eight stops pass and, when the instructor's completion
policy asks for it, a results.json grades the whole assignment at full marks
(every syllabus exercise's ``extra_data.exercises[stem].score == max_score``, status
graded, profile full: ``quiz_bank.grading.exercises_from_results``).

Answer statuses: ``correct``, ``wrong``, ``unparseable`` (the response could
not be read: reported as such, never as wrong, but it does not pass either),
``unanswered`` and ``undecided`` (the symbolic checker ran out of time).
Grading a responses file (the report, the answer key file) is ``quiz_bank.grading``,
which builds on this module; this one never imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from quiz_bank import variants
from quiz_bank.loader import Bank
from quiz_bank.parsing import Unparseable, parse_number

STATUSES = ("correct", "wrong", "unparseable", "unanswered", "undecided")


class KeysUnavailable(RuntimeError):
    """The answer keys are not installed (student bundle) or the bank has no answers."""


class ResponsesError(ValueError):
    """A malformed responses file; the message names the file and the problem."""


class CompletionPolicy(BaseModel):
    """The instructor's completion rule (``completion.yaml`` beside the stop files).

    Attributes:
        require_exercises: also require a results.json grading the whole assignment at full marks
            (every syllabus exercise, graded, full profile: ``grading.exercises_from_results``).
    """

    require_exercises: bool = Field(default=False)


def load_policy(bank: Bank) -> CompletionPolicy:
    """The completion policy of ``bank`` (defaults when ``completion.yaml`` is absent).

    Raises:
        ValueError: if the file exists but is not a valid policy.
    """
    import yaml

    path = bank.directory / "completion.yaml"
    if not path.exists():
        return CompletionPolicy()
    try:
        return CompletionPolicy.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    except (ValidationError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: invalid completion policy: {exc}") from None


@dataclass(frozen=True)
class Variant:
    """What one student sees for one question at one attempt.

    ``choices`` are (label, id, text) triples: the option list of single/multi
    questions, or the items of an ordering question shuffled with the variant's
    seed (so a retry also reshuffles them).
    """

    question: Any
    student_id: str
    attempt: int
    params: dict[str, Any] | None
    prompt: str
    choices: tuple[tuple[str, str, str], ...] = ()
    shuffled: bool = False

    def label_to_id(self) -> dict[str, str]:
        """Shown label → option/item id (the identity for an unshuffled choice question)."""
        return {label: option_id for label, option_id, _ in self.choices}


def render(question, student_id: str, attempt: int, *, shuffle: bool = False) -> Variant:
    """The variant of ``question`` for (student, attempt); pure and deterministic.

    With ``shuffle=True`` the options of a single/multi question are shown in
    an order drawn from ``variants.option_rng(student, question, attempt)`` and
    relabelled a, b, c… in that order (so the label a student sees says nothing
    about the key's position in the YAML); responses typed as labels are mapped
    back to option ids by :func:`normalise_response`. Grading of responses
    files (ids) renders without shuffling.
    """
    params = None
    prompt = question.prompt
    if question.is_parametric:
        spec = question.parametric
        params = variants.draw(spec.generator, spec.args, student_id, question.id, attempt)
        prompt = prompt.format(**params)
    choices: tuple = ()
    if question.type in ("single", "multi"):
        options = list(question.options)
        if shuffle:
            variants.option_rng(student_id, question.id, attempt).shuffle(options)
            labels = "abcdefghijklmnopqrstuvwxyz"
            choices = tuple((labels[i], o.id, o.text) for i, o in enumerate(options))
        else:
            choices = tuple((o.id, o.id, o.text) for o in options)
    elif question.type == "ordering":
        # Shuffled per variant, and independent of the key, so that the public
        # (key-less) bank shows exactly what the instructor's bank would.
        items = list(question.items)
        variants.variant_rng(student_id, question.id, attempt).shuffle(items)
        labels = "abcdefghijklmnopqrstuvwxyz"
        choices = tuple((labels[i], o.id, o.text) for i, o in enumerate(items))
    return Variant(question, student_id, attempt, params, prompt, choices, shuffle and question.type in ("single", "multi"))


def expected_answer(variant: Variant) -> Any:
    """The key of a variant, in the responses-file format.

    Raises:
        KeysUnavailable: if the bank has no fixed key or ``quiz_bank.instructor.keys`` /
            ``ppo_reference`` is not installed.
    """
    q = variant.question
    if q.is_parametric:
        from quiz_bank.loader import keys_installed

        if not keys_installed():
            raise KeysUnavailable(f"{q.id}: the answer keys are not installed (student bundle: submit your responses)")
        from quiz_bank.instructor import keys

        return keys.compute(q.parametric.key, variant.params)
    if q.answer is None:
        raise KeysUnavailable(f"{q.id}: this bank has no answer key (student bundle)")
    return list(q.answer) if isinstance(q.answer, list) else q.answer


# ---------------------------------------------------------------- reading responses

_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


def _split_ids(response: Any, known: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Option ids of a response: a list as given, or a string split on spaces/commas; one run of letters such
    as "acd" is read letter by letter unless it is itself one of the ``known`` ids (ids may be words)."""
    if isinstance(response, list):
        if not all(isinstance(x, str) for x in response):
            raise Unparseable("expected a list of option ids (strings)")
        return [x.strip().lower() for x in response]
    if isinstance(response, str):
        text = response.replace(",", " ").replace(";", " ").strip().lower()
        parts = text.split()
        if len(parts) == 1 and len(parts[0]) > 1 and parts[0].isalpha() and parts[0] not in known:
            parts = list(parts[0])  # "acd" typed without separators
        return parts
    raise Unparseable(f"expected option ids, got {type(response).__name__}")


def normalise_response(question, response: Any, variant: Variant | None = None) -> Any:
    """A response in canonical form (ids for choices, bool, float, str).

    For an ordering question a string of *labels* ("b a c") is mapped through
    the variant's shown labels to item ids; a list is taken as item ids.

    Raises:
        Unparseable: with the reason, for a response that cannot be read.
    """
    kind = question.type
    option_ids = {o.id for o in question.options} if kind in ("single", "multi") else set()
    if kind in ("single", "multi") and variant is not None and variant.shuffled and isinstance(response, str):
        labels = variant.label_to_id()
        response = [labels.get(x, x) for x in _split_ids(response, option_ids | set(labels))]
    if kind == "single":
        ids = _split_ids(response, option_ids)
        known = [o.id for o in question.options]
        if len(ids) != 1 or ids[0] not in known:
            raise Unparseable(f"expected exactly one of {', '.join(known)}")
        return ids[0]
    if kind == "multi":
        ids = _split_ids(response, option_ids)
        known = [o.id for o in question.options]
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise Unparseable(f"unknown option(s) {', '.join(unknown)}; choose from {', '.join(known)}")
        if len(set(ids)) != len(ids):
            raise Unparseable("an option is listed twice")
        return sorted(ids)
    if kind == "true_false":
        if isinstance(response, bool):
            return response
        if isinstance(response, str) and response.strip().lower() in _TRUE | _FALSE:
            return response.strip().lower() in _TRUE
        raise Unparseable("expected true or false")
    if kind == "numeric":
        return parse_number(response)
    if kind == "symbolic":
        if not isinstance(response, str):
            raise Unparseable(f"expected an expression as text, got {type(response).__name__}")
        return response
    if kind == "ordering":
        known = [o.id for o in question.items]
        if isinstance(response, str) and variant is not None:
            labels = {label: item_id for label, item_id, _ in variant.choices}
            ids = [labels.get(x, x) for x in _split_ids(response, set(known) | set(labels))]
        else:
            ids = [x.strip() for x in response] if isinstance(response, list) and all(isinstance(x, str) for x in response) else None
            if ids is None:
                raise Unparseable("expected the list of item ids, first to last")
        if sorted(ids) != sorted(known):
            raise Unparseable(f"list every item exactly once ({len(known)} items)")
        return ids
    raise Unparseable(f"unknown question type {kind!r}")  # pragma: no cover - models forbid it


@dataclass
class Outcome:
    """The verdict on one response: ``status`` (see STATUSES) and student-facing ``feedback``."""

    question_id: str
    status: str
    feedback: str
    response: Any = None
    attempt: int = 1

    @property
    def correct(self) -> bool:
        """True only for ``status == "correct"``."""
        return self.status == "correct"


def _feedback(question, status: str, detail: str = "") -> str:
    cite = question.source.cite()
    if status == "correct":
        return f"Correct. ({cite})"
    if status == "unanswered":
        return f"No answer given. ({cite})"
    if status == "unparseable":
        return f"Could not read your answer: {detail}. Nothing was marked wrong; answer again. ({cite})"
    if status == "undecided":
        return f"Your expression could not be checked: {detail}. Try a simpler equivalent form. ({cite})"
    # Never the explanation here: it states the key. It is shown once the stop is passed.
    return f"Not right. Reread {cite}."


def check(variant: Variant, response: Any, checker=None) -> Outcome:
    """Check one response against the variant's key.

    Args:
        variant: from :func:`render`.
        response: as read from a responses file or typed (see normalise_response).
        checker: a :class:`quiz_bank.symbolic.SymbolicChecker` (needed for symbolic questions).

    Raises:
        KeysUnavailable: when the key cannot be computed here.
    """
    q = variant.question
    if response is None or (isinstance(response, str) and not response.strip()):
        return Outcome(q.id, "unanswered", _feedback(q, "unanswered"), response, variant.attempt)
    try:
        given = normalise_response(q, response, variant)
    except Unparseable as exc:
        return Outcome(q.id, "unparseable", _feedback(q, "unparseable", str(exc)), response, variant.attempt)
    key = expected_answer(variant)
    if q.type == "numeric":
        tol = max(q.tolerance.abs, q.tolerance.rel * abs(float(key)))
        ok = abs(given - float(key)) <= tol
    elif q.type == "multi":
        ok = sorted(given) == sorted(key)
    elif q.type == "symbolic":
        if checker is None:
            from quiz_bank.symbolic import SymbolicChecker

            with SymbolicChecker() as own:
                verdict = own.check(key, given, list(q.symbols))
        else:
            verdict = checker.check(key, given, list(q.symbols))
        if verdict.status in ("unparseable", "undecided"):
            return Outcome(q.id, verdict.status, _feedback(q, verdict.status, verdict.detail), response, variant.attempt)
        ok = verdict.status == "equivalent"
    else:
        ok = given == key
    status = "correct" if ok else "wrong"
    return Outcome(q.id, status, _feedback(q, status), response, variant.attempt)


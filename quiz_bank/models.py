"""Pydantic models of the question bank (one YAML file per stop, Book §5.1–§5.9).

A stop file is a mapping ``{stop: N, title: ..., questions: [...]}``. Every
question has an id ``stop<N>.<slug>``, a ``type`` (the discriminator below), a
prompt and a ``source`` (section and page of the chapter). Fixed questions carry
their key in ``answer``; parametric questions carry ``parametric`` instead and
their key is computed per variant by ``quiz_bank.instructor.keys`` with ``ppo_reference``.
The public (student) bank is the same YAML with ``answer`` and ``explanation``
removed (see ``quiz_bank.export``), so both are optional here and the
instructor-side checks (``Bank.require_keys``) insist on them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ppo_course.syllabus import N_STOPS

QUESTION_ID = re.compile(r"^stop([1-8])\.[a-z0-9]+(?:-[a-z0-9]+)*$")
CLAIM_ID = QUESTION_ID  # claims are named like questions: stop<N>.<slug>
LEVELS = ("recall", "apply", "understand")
OPTION_ID = re.compile(r"^[a-z0-9_-]+$")
SYMBOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Strict):
    """Where in the chapter the question's claim is made: ``§5.x`` and ``p. 142``–``p. 150``."""

    section: str = Field(pattern=r"^§5\.\d+(\.\d+)?([,–-] ?(§?5\.)?\d+(\.\d+)?)*$")
    page: str = Field(pattern=r"^pp?\. 1(4[2-9]|50)([–,-] ?1(4[2-9]|50))*$")

    def cite(self) -> str:
        """``"Book §5.2, p. 142"``: the citation printed with feedback."""
        return f"Book {self.section}, {self.page}"


class Claim(_Strict):
    """One claim of the chapter, asked by several interchangeable items.

    ``text`` is a short topic label shown in feedback ("the claims you missed"); it
    names what the claim is about without stating it, so that it cannot answer an
    item. ``source`` is where to reread.
    """

    id: str = Field(pattern=CLAIM_ID.pattern)
    text: str = Field(min_length=3, max_length=90)
    source: Source

    @property
    def stop(self) -> int:
        """The stop number (1–8) taken from the id ``stop<N>.<slug>``."""
        return int(self.id[4])


class Option(_Strict):
    """One choice of a single/multiple-choice question or one item to order."""

    id: str = Field(pattern=OPTION_ID.pattern)
    text: str = Field(min_length=1)


class Tolerance(_Strict):
    """A numeric response x is right when |x − key| ≤ max(abs, rel·|key|)."""

    abs: float = Field(default=0.0, ge=0.0)
    rel: float = Field(default=0.0, ge=0.0)

    @model_validator(mode="after")
    def _some_tolerance(self) -> "Tolerance":
        if self.abs == 0.0 and self.rel == 0.0:
            raise ValueError("a tolerance needs abs > 0 or rel > 0 (exact float equality is too brittle)")
        return self


class Parametric(_Strict):
    """A per-student variant.

    ``generator`` names a parameter draw in ``quiz_bank.variants`` (public);
    ``key`` names the function of ``quiz_bank.instructor.keys`` (instructor side) that
    computes the answer for those parameters with ``ppo_reference``; ``args``
    are passed to the draw.
    """

    generator: str = Field(min_length=1)
    key: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class _Question(_Strict):
    id: str = Field(pattern=QUESTION_ID.pattern)
    prompt: str = Field(min_length=10)
    source: Source
    explanation: str | None = Field(default=None, min_length=10)
    # Shown after a failed attempt instead of the explanation: where to look, never the key.
    # Public (ships in the student bundle); the explanation is private and shown once the stop passes.
    hint: str | None = Field(default=None, min_length=10)
    # The claim this item asks (an id of the stop's ``claims``); items of one claim are
    # interchangeable, so a retry can meet another item on a claim it missed.
    claim: str = Field(pattern=CLAIM_ID.pattern)
    # recall: the chapter's words; apply: plug numbers into a formula the stem or chapter
    # gives; understand: a scenario the chapter does not spell out, no formula in the stem.
    level: Literal["recall", "apply", "understand"]

    @property
    def stop(self) -> int:
        """The stop number (1–8) taken from the id ``stop<N>.<slug>``."""
        return int(self.id[4])

    @property
    def is_parametric(self) -> bool:
        """True when each (student, attempt) gets its own variant."""
        return getattr(self, "parametric", None) is not None

    @property
    def has_key(self) -> bool:
        """True when the fixed key is present (parametric keys are computed, never stored)."""
        return self.is_parametric or getattr(self, "answer", None) is not None


def _distinct_options(options: list[Option], what: str) -> list[Option]:
    ids = [o.id for o in options]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"{what} ids must be distinct; repeated: {', '.join(dupes)}")
    return options


class SingleChoice(_Question):
    """Exactly one option is right; a response is one option id.

    May be parametric: the drawn parameters fill the prompt and ``keys`` returns
    the right option's id for them (the options themselves are fixed).
    """

    type: Literal["single"]
    options: list[Option] = Field(min_length=2)
    answer: str | None = None
    parametric: Parametric | None = None

    @field_validator("options")
    @classmethod
    def _check_options(cls, v: list[Option]) -> list[Option]:
        return _distinct_options(v, "option")

    @model_validator(mode="after")
    def _answer_is_an_option(self) -> "SingleChoice":
        if self.parametric is not None and self.answer is not None:
            raise ValueError("a parametric question must not carry a fixed answer (its key is computed)")
        if self.answer is not None and self.answer not in {o.id for o in self.options}:
            raise ValueError(f"answer {self.answer!r} is not one of the options {[o.id for o in self.options]}")
        return self


class MultipleSelect(_Question):
    """Any subset of the options may be right; a response is a list of option ids (order ignored)."""

    type: Literal["multi"]
    options: list[Option] = Field(min_length=3)
    answer: list[str] | None = None
    # A template with {statement}: also ask the options one at a time (quiz_bank.derived).
    statements: str | None = Field(default=None, pattern=r"\{statement\}")

    @field_validator("options")
    @classmethod
    def _check_options(cls, v: list[Option]) -> list[Option]:
        return _distinct_options(v, "option")

    @model_validator(mode="after")
    def _answer_are_options(self) -> "MultipleSelect":
        if self.answer is not None:
            unknown = [a for a in self.answer if a not in {o.id for o in self.options}]
            if unknown:
                raise ValueError(f"answer ids {unknown} are not options {[o.id for o in self.options]}")
            if len(set(self.answer)) != len(self.answer):
                raise ValueError("answer repeats an option id")
        return self


class TrueFalse(_Question):
    """A statement to judge; a response is a boolean. May be parametric (key computed per variant)."""

    type: Literal["true_false"]
    answer: bool | None = None
    parametric: Parametric | None = None

    @model_validator(mode="after")
    def _fixed_xor_parametric(self) -> "TrueFalse":
        if self.parametric is not None and self.answer is not None:
            raise ValueError("a parametric question must not carry a fixed answer (its key is computed)")
        return self


class Numeric(_Question):
    """A number; responses such as "0.2", "1/5", "2e-1" or "20%" are accepted (quiz_bank.parsing)."""

    type: Literal["numeric"]
    answer: float | None = None
    tolerance: Tolerance
    parametric: Parametric | None = None

    @model_validator(mode="after")
    def _fixed_xor_parametric(self) -> "Numeric":
        if self.parametric is not None and self.answer is not None:
            raise ValueError("a parametric question must not carry a fixed answer (its key is computed)")
        return self


class Symbolic(_Question):
    """An expression in the declared symbols, checked for sympy equivalence (quiz_bank.symbolic)."""

    type: Literal["symbolic"]
    symbols: dict[str, str] = Field(min_length=1, description="name -> what it stands for")
    answer: str | None = None

    @field_validator("symbols")
    @classmethod
    def _symbol_names(cls, v: dict[str, str]) -> dict[str, str]:
        from quiz_bank.parsing import FUNCTIONS, CONSTANTS

        for name in v:
            if not SYMBOL_NAME.match(name):
                raise ValueError(f"symbol name {name!r} must be an ASCII identifier")
            if name in FUNCTIONS or name in CONSTANTS:
                raise ValueError(f"symbol name {name!r} clashes with a function/constant name")
        return v

    @model_validator(mode="after")
    def _answer_parses(self) -> "Symbolic":
        if self.answer is not None:
            from quiz_bank.parsing import Unparseable, parse_expression_ast

            try:
                parse_expression_ast(self.answer, set(self.symbols))
            except Unparseable as exc:
                raise ValueError(f"answer {self.answer!r} does not parse: {exc}") from None
        return self


class Ordering(_Question):
    """Items to put in order; a response is the list of all item ids, first to last."""

    type: Literal["ordering"]
    items: list[Option] = Field(min_length=3)
    answer: list[str] | None = None
    # A template with {first} and {second}: also ask one pair of items per draw (quiz_bank.derived).
    pairs: str | None = Field(default=None, pattern=r"\{first\}.*\{second\}")

    @field_validator("items")
    @classmethod
    def _check_items(cls, v: list[Option]) -> list[Option]:
        return _distinct_options(v, "item")

    @model_validator(mode="after")
    def _answer_is_permutation(self) -> "Ordering":
        if self.answer is not None and sorted(self.answer) != sorted(o.id for o in self.items):
            raise ValueError(f"answer must list every item id exactly once: {[o.id for o in self.items]}")
        return self


Question = Annotated[
    Union[SingleChoice, MultipleSelect, TrueFalse, Numeric, Symbolic, Ordering],
    Field(discriminator="type"),
]


class StopFile(_Strict):
    """One ``stop<N>.yaml``: its stop number, title, its claims and at least 8 questions."""

    stop: int = Field(ge=1, le=N_STOPS)
    title: str = Field(min_length=3)
    claims: list[Claim] = Field(min_length=1)
    questions: list[Question] = Field(min_length=8)

    @model_validator(mode="after")
    def _claims_belong_to_stop(self) -> "StopFile":
        ids = [c.id for c in self.claims]
        for c in self.claims:
            if c.stop != self.stop:
                raise ValueError(f"claim {c.id!r} is in the stop {self.stop} file but its id says stop {c.stop}")
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"claim ids must be distinct; repeated: {', '.join(dupes)}")
        undeclared = [f"{q.id} → {q.claim}" for q in self.questions if q.claim not in ids]
        if undeclared:
            raise ValueError(f"questions name undeclared claims: {'; '.join(undeclared)}")
        return self

    @model_validator(mode="after")
    def _ids_belong_to_stop(self) -> "StopFile":
        seen: set[str] = set()
        for q in self.questions:
            if q.stop != self.stop:
                raise ValueError(f"question {q.id!r} is in the stop {self.stop} file but its id says stop {q.stop}")
            if q.id in seen:
                raise ValueError(f"question id {q.id!r} appears twice")
            seen.add(q.id)
        return self


class Responses(_Strict):
    """A responses file, and the key file of ``quiz key`` (same schema).

    ``{"student_id": ..., "attempt": N, "answers": {question_id: answer}}``; an
    answer is an option id (single), a list of option ids (multi, ordering), a
    boolean (true/false), a number or string (numeric) or a string (symbolic).
    ``attempts`` (optional, an extension) overrides the attempt number per
    question, for a file that gathers stops taken at different attempts.
    """

    student_id: str = Field(min_length=1, max_length=200)
    attempt: int = Field(default=1, ge=1)
    answers: dict[str, Union[bool, int, float, str, list[str], None]]
    attempts: dict[str, int] = Field(default_factory=dict)

    @field_validator("attempts")
    @classmethod
    def _positive_attempts(cls, v: dict[str, int]) -> dict[str, int]:
        bad = {k: n for k, n in v.items() if n < 1}
        if bad:
            raise ValueError(f"attempt numbers start at 1; got {bad}")
        return v

    def attempt_of(self, question_id: str) -> int:
        """The attempt number this file answers ``question_id`` at."""
        return self.attempts.get(question_id, self.attempt)

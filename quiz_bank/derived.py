"""Items generated from other items: one statement or one pair per draw.

A multiple-select question with a ``statements`` template ("The chapter says … :
{statement}") also yields a true/false item ``<id>-tf`` that shows *one* of its
options per (student, attempt) as a statement to judge; an ordering question with a
``pairs`` template ("… does {first} come before {second}?") yields ``<id>-pairs``,
one pair of its items per draw, in a random order; every fixed single-choice
question with 3+ options yields ``<id>-judge``: one of its options, shown with "is the
right answer" or "is not the right answer" (each half the draws, so "True" is the key
in half of them whatever the number of options). Each derived item asks the same
claim at the same level as its source, so a retry meets another statement of the
claim rather than the same list, and no answer can be reached by elimination over a
visible option list.

Everything here uses only prompts, options and items (public); the keys of derived
items are read by ``quiz_bank.instructor.keys`` from the source question's answer in the
instructor bank, so the student bank derives the same items without any key.
"""

from __future__ import annotations

from typing import Any

from quiz_bank.models import StopFile, TrueFalse

MULTI_SUFFIX = "-tf"
PAIRS_SUFFIX = "-pairs"
JUDGE_SUFFIX = "-judge"
SUFFIXES = (MULTI_SUFFIX, PAIRS_SUFFIX, JUDGE_SUFFIX)


def _statement_item(q) -> TrueFalse:
    cases = {f"{q.id}#{o.id}": o.text for o in q.options}
    return TrueFalse(
        id=q.id + MULTI_SUFFIX, type="true_false", claim=q.claim, level=q.level, source=q.source, hint=q.hint,
        prompt=q.statements,
        parametric={"generator": "pick_case", "key": "multi_option", "args": {"cases": cases}},
    )


def _pair_item(q) -> TrueFalse:
    return TrueFalse(
        id=q.id + PAIRS_SUFFIX, type="true_false", claim=q.claim, level=q.level, source=q.source, hint=q.hint,
        prompt=q.pairs,
        parametric={"generator": "ordered_pair", "key": "ordering_pair",
                    "args": {"question": q.id, "items": {o.id: o.text for o in q.items}}},
    )


def _judge_item(q) -> TrueFalse:
    stem = q.prompt.replace("{", "{{").replace("}", "}}").rstrip()
    return TrueFalse(
        id=q.id + JUDGE_SUFFIX, type="true_false", claim=q.claim, level=q.level, source=q.source, hint=q.hint,
        prompt=stem + " True or false: “{option}” is {polarity}the right answer.",
        parametric={"generator": "judge_option", "key": "single_option",
                    "args": {"question": q.id, "options": {o.id: o.text for o in q.options}}},
    )


def derived_questions(stop_file: StopFile) -> list[Any]:
    """The items generated from ``stop_file``'s questions, in source order.

    Raises:
        pydantic.ValidationError: if a template produces an invalid item (e.g. too short a prompt).
    """
    out = []
    for q in stop_file.questions:
        if q.type == "multi" and q.statements:
            out.append(_statement_item(q))
        elif q.type == "ordering" and q.pairs:
            out.append(_pair_item(q))
        elif q.type == "single" and not q.is_parametric and len(q.options) >= 3:
            out.append(_judge_item(q))
    return out


def with_derived(stop_file: StopFile) -> StopFile:
    """``stop_file`` with its derived items appended (ids checked for collisions).

    Raises:
        ValueError: if a derived id is already a question id of the stop.
    """
    extra = derived_questions(stop_file)
    taken = {q.id for q in stop_file.questions}
    clash = [q.id for q in extra if q.id in taken]
    if clash:
        raise ValueError(f"derived item ids collide with questions: {', '.join(clash)}")
    return stop_file.model_copy(update={"questions": list(stop_file.questions) + extra})

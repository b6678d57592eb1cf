"""The quiz notebook (stops 1-8 of the question bank) and its grading outside the kernel.

Every question becomes three cells: a locked markdown cell (the prompt of the
course-wide variant, its options or items with labels, the book section), an
answer cell (``solution: true``; the source notebook holds the key between
nbgrader's solution markers, which ``generate_assignment`` removes) and an
autograded test cell worth 1 point. Parametric questions are rendered for one
fixed variant (``VARIANT_STUDENT``, attempt 1), the same for the whole course,
because an nbgrader assignment is one notebook for everybody.

Answers are read from the answer cell's *source*: the last top-level
``answer = <literal>`` statement, parsed with ``ast.literal_eval`` (never
executed), and checked by ``quiz_bank.engine.check`` in the grading process.
The feedback says correct / not right / unanswered / unreadable with the book
section, never the key or its explanation. The per-stop 100% completion rule
is `ppo-course quiz`'s; in nbgrader each question simply earns its point.
"""

from __future__ import annotations

import ast
from typing import Any

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.platforms.nbgrader_course.notebooks import BEGIN, END, KERNELSPEC, nbgrader_meta
from ppo_course.syllabus import STOPS

VARIANT_STUDENT = "nbgrader-course"
POINTS_PER_QUESTION = 1.0

# Neutral forms (no concrete option id or value that could coincide with a key).
HOW_TO_ANSWER = {
    "single": 'answer = "?"           # one option id: the letter in front of it',
    "multi": 'answer = ["?", "?"]    # the ids of every right option',
    "true_false": "answer = ...           # True or False",
    "numeric": "answer = ...           # a number",
    "symbolic": 'answer = "..."         # an expression in the listed symbols, as text',
    "ordering": 'answer = "? ? ?"       # the labels, first to last, separated by spaces',
}


def cell_id(question_id: str) -> str:
    """A grade_id-safe form of a question id (nbgrader allows letters, digits, '-' and '_')."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in question_id)


def _prompt_markdown(number: int, variant) -> str:
    q = variant.question
    lines = [f"**Question {number}** (`{q.id}`, {q.type.replace('_', '/')}): {variant.prompt.strip()}", ""]
    if q.type in ("single", "multi", "ordering"):
        lines += [f"- `{label}`: {text}" for label, _id, text in variant.choices]
        lines.append("")
    if q.type == "symbolic":
        lines += ["Symbols: " + ", ".join(f"`{name}` = {meaning}" for name, meaning in q.symbols.items()), ""]
    form, what = (part.strip() for part in HOW_TO_ANSWER[q.type].split("#", 1))
    lines.append(f"*Source: {q.source.cite()}.* Answer in the cell below with `{form}` ({what}).")
    return "\n".join(lines)


def _key_source(variant, key: Any) -> str:
    """The key as an ``answer = ...`` line (labels for ordering questions, as students answer)."""
    if variant.question.type == "ordering":
        label_of = {item_id: label for label, item_id, _ in variant.choices}
        key = " ".join(label_of[item_id] for item_id in key)
    return f"answer = {key!r}"


def quiz_notebook():
    """The source quiz notebook: every question of stops 1-8 with its key between solution markers.

    Raises:
        quiz_bank.engine.KeysUnavailable: if the keys (quiz_bank.instructor.keys, ppo_reference) are not installed.
    """
    from quiz_bank.engine import expected_answer, render
    from quiz_bank.loader import load_bank

    bank = load_bank()
    cells = [new_markdown_cell(
        "# PPO chapter quiz (Book ch. 5, stops 1-8)\n\n"
        "Answer each question by replacing `raise NotImplementedError()` in the cell under it with one line "
        "`answer = ...` (the form is shown with each question). Answers are read from the text of the cell, "
        "not from your kernel, so write a plain literal (a string, a number, a list, True/False). "
        f"Each question is worth {POINTS_PER_QUESTION:g} point.",
        metadata={"nbgrader": nbgrader_meta("quiz-intro", grade=False, solution=False, locked=True)})]
    number = 0
    for stop in STOPS:
        questions = bank.questions(stop)
        if not questions:
            continue
        cells.append(new_markdown_cell(f"## Stop {stop}", metadata={
            "nbgrader": nbgrader_meta(f"quiz-stop{stop}", grade=False, solution=False, locked=True)}))
        for q in questions:
            number += 1
            variant = render(q, VARIANT_STUDENT, 1)
            cid = cell_id(q.id)
            cells.append(new_markdown_cell(_prompt_markdown(number, variant), metadata={
                "nbgrader": nbgrader_meta(f"quiz-{cid}-prompt", grade=False, solution=False, locked=True)}))
            answer = f"# {HOW_TO_ANSWER[q.type]}\n{BEGIN}\n{_key_source(variant, expected_answer(variant))}\n{END}"
            cells.append(new_code_cell(answer, metadata={
                "nbgrader": nbgrader_meta(f"quiz-{cid}-answer", grade=False, solution=True, locked=False),
                "ppo_course": {"quiz_answer": q.id}}))
            cells.append(new_code_cell(
                "# Checked after you submit, outside your kernel, from the text of the cell above.\n0.0",
                metadata={"nbgrader": nbgrader_meta(f"quiz-{cid}-graded", grade=True, solution=False, locked=True,
                                                    points=POINTS_PER_QUESTION),
                          "ppo_course": {"quiz": q.id}}))
    return new_notebook(cells=cells, metadata={"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}})


class NoAnswer(Exception):
    """The answer cell holds no readable ``answer = <literal>`` line."""


def read_answer(source: str) -> Any:
    """The literal of the last top-level ``answer = ...`` in ``source`` (never executed).

    Raises:
        NoAnswer: if there is no such statement (unanswered) or the cell does not parse
            or the value is not a plain literal (the message says which).
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise NoAnswer(f"the answer cell is not valid Python ({exc.msg}, line {exc.lineno})") from None
    found = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "answer" for t in node.targets):
            found = node
    if found is None:
        raise NoAnswer("no `answer = ...` line")
    try:
        return ast.literal_eval(found.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise NoAnswer("`answer` must be a plain literal (a string, number, list or True/False)") from None


def grade_answers(answers: dict[str, str]) -> dict[str, tuple[float, str]]:
    """Check every question's answer-cell source; {question id: (points earned, feedback line)}.

    Args:
        answers: {question id: source of the student's answer cell} ("" when absent).

    Raises:
        quiz_bank.engine.KeysUnavailable: on a key-less install.
    """
    from quiz_bank.engine import check, render
    from quiz_bank.loader import load_bank
    from quiz_bank.symbolic import SymbolicChecker

    bank = load_bank()
    by_id = bank.by_id
    out: dict[str, tuple[float, str]] = {}
    with SymbolicChecker() as checker:
        for qid, source in answers.items():
            q = by_id.get(qid)
            if q is None:
                out[qid] = (0.0, f"unknown question {qid!r}")
                continue
            cite = q.source.cite()
            try:
                response = read_answer(source)
            except NoAnswer as exc:
                out[qid] = (0.0, f"Not graded: {exc}. ({cite})")
                continue
            outcome = check(render(q, VARIANT_STUDENT, 1), response, checker)
            words = {"correct": "Correct.", "wrong": "Not right.", "unanswered": "No answer given.",
                     "unparseable": "Could not read your answer.", "undecided": "Your expression could not be checked."}
            out[qid] = (POINTS_PER_QUESTION if outcome.correct else 0.0,
                        f"{words.get(outcome.status, outcome.status)} ({cite})")
    return out


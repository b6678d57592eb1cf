"""The interactive ``quiz take`` session (rich output, one answer per input line).

With keys installed (an instructor's or self-learner's full install) every
answer is checked at once and told right or not right, nothing more. A stop
passes only when every question is right in one attempt (as on the quiz
server): after a failed attempt the missed questions get a hint and the
section to reread (never the right option, never the explanation), and the
retry asks the whole stop again at attempt + 1, so parametric questions come
back as fresh variants and choice options in a fresh order
(``render(..., shuffle=True)``). The explanations are shown once the stop is
passed. Every question keeps its number in the stop ("Question 4/11") across
resumes.

Without keys (the student bundle) the session records the answers of a whole
stop at the next attempt number and writes a responses file to submit.

Each answer is stored in its own transaction before the next question is
shown, so a crash or Ctrl-D loses at most the question on screen.
"""

from __future__ import annotations

from typing import Any

from rich.panel import Panel
from rich.text import Text

from quiz_bank.engine import Variant, check, normalise_response, render
from quiz_bank.parsing import Unparseable, parse_expression_ast

_HINTS = {
    "single": "one letter",
    "multi": "every letter that applies, e.g. a,c",
    "true_false": "true or false",
    "numeric": "a number: 0.2, 1/5, 2e-1 and 20% all work",
    "ordering": "the letters first to last, e.g. c a b",
}


class _EndOfInput(Exception):
    pass


class Session:
    """One student's run through some stops.

    Args:
        bank: the loaded bank. store: an AttemptStore. student_id: whose variants.
        console: a rich Console. reader: has ``read_line() -> str | None`` (None at EOF).
        keyed: True when answers can be checked here.
    """

    def __init__(self, bank, store, student_id: str, console, reader, *, keyed: bool) -> None:
        self.bank, self.store, self.student_id = bank, store, student_id
        self.console, self.reader, self.keyed = console, reader, keyed
        self._checker = None

    # -------------------------------------------------------------- driving

    def run(self, stops: list[int] | None = None) -> bool:
        """Take ``stops`` (default: every stop not yet passed). True when all of them were finished."""
        if self.keyed:
            from quiz_bank.symbolic import SymbolicChecker

            self._checker = SymbolicChecker()
        try:
            if stops:
                todo = stops
            elif self.keyed:
                todo = [s for s in sorted(self.bank.stops) if s not in self.store.completed_stops(self.student_id)]
            else:
                todo = [s for s in sorted(self.bank.stops) if not self.stop_recorded(s)]
            if not todo:
                self.console.print(
                    "Every stop is passed: the chapter quiz is complete." if self.keyed
                    else "Every stop is recorded: submit your responses file (retake one with --stop N)."
                )
                return True
            for stop in todo:
                done = self._keyed_stop(stop) if self.keyed else self._recorded_stop(stop)
                if not done:
                    self.console.print("Progress saved; run `ppo-course quiz take` again to continue.")
                    return False
            return True
        except _EndOfInput:
            self.console.print("\nEnd of input: progress saved; run `ppo-course quiz take` again to continue.")
            return False
        finally:
            if self._checker is not None:
                self._checker.close()

    def _header(self, stop: int) -> None:
        title = self.bank.stops[stop].title
        self.console.rule(Text(f"Stop {stop} — {title}"))

    def _keyed_stop(self, stop: int) -> bool:
        self._header(stop)
        questions = self.bank.questions(stop)
        if stop in self.store.completed_stops(self.student_id):
            self.console.print(f"Stop {stop} is already passed.")
            return True
        # A question keeps its number in the stop (issue 13 item 7): a resumed take asks
        # "Question 4/11", never renumbers the pending ones 1, 2, ...
        number = {q.id: i for i, q in enumerate(questions, 1)}
        while True:
            attempt, done = self._current_attempt(stop)
            if done:
                self.console.print(f"Resuming attempt {attempt} of stop {stop}.")
            for q in questions:
                if q.id in done:
                    continue
                variant = render(q, self.student_id, attempt, shuffle=True)
                outcome, response = self._ask(variant, f"{number[q.id]}/{len(questions)}")
                round_right = self._round_right(stop, attempt, exclude=q.id)
                completes = stop if outcome.correct and round_right == len(questions) - 1 else None
                self.store.record(self.student_id, q.id, attempt, response, outcome.status, completed_stop=completes)
                self.console.print(Text("Right." if outcome.correct else "Not right.", style="green" if outcome.correct else "red"))
            right = self._round_right(stop, attempt)
            if right == len(questions):
                self.console.print(Text(f"Stop {stop} passed: {right}/{len(questions)}.", style="bold green"))
                for q in questions:  # the explanations, in full, once the stop is passed
                    if q.explanation:
                        self.console.print(Text(f"{number[q.id]}. {q.explanation} ({q.source.cite()})", style="dim"))
                return True
            self.console.print(f"Stop {stop}, attempt {attempt}: {right}/{len(questions)} right — a stop passes only at 100%.")
            for q in questions:
                latest = [a for a in self.store.attempts(self.student_id, q.id) if a.attempt == attempt]
                if latest and latest[0].status != "correct":
                    hint = q.hint or "Reread the section cited here."
                    self.console.print(Text(f"  Question {number[q.id]} ({q.id}): not right. Hint: {hint} ({q.source.cite()})",
                                            style="yellow"))
            self.console.print(f"Start attempt {attempt + 1} now: every question again, fresh numbers and option order? [Y/n]")
            answer = self._read()
            if answer.strip().lower() in ("n", "no", "q"):
                return False

    def _round_right(self, stop: int, attempt: int, exclude: str | None = None) -> int:
        """How many of the stop's questions were answered right at ``attempt`` (all but ``exclude``)."""
        count = 0
        for q in self.bank.questions(stop):
            if q.id == exclude:
                continue
            count += any(a.attempt == attempt and a.status == "correct" for a in self.store.attempts(self.student_id, q.id))
        return count

    def _current_attempt(self, stop: int) -> tuple[int, set[str]]:
        """(attempt to record, ids already recorded at it): resume an interrupted attempt, else start the next."""
        questions = self.bank.questions(stop)
        recorded = {q.id: {a.attempt for a in self.store.attempts(self.student_id, q.id)} for q in questions}
        last = max((max(s) for s in recorded.values() if s), default=0)
        done = {qid for qid, s in recorded.items() if last in s}
        if last == 0 or len(done) == len(questions):
            return last + 1, set()
        return last, done

    def stop_recorded(self, stop: int) -> bool:
        """True when every question of the stop has an answer at the stop's latest attempt."""
        attempt, done = self._current_attempt(stop)
        return attempt > 1 and not done

    def _recorded_stop(self, stop: int) -> bool:
        self._header(stop)
        questions = self.bank.questions(stop)
        attempt, done = self._current_attempt(stop)
        self.console.print(f"No answer keys here: your answers are recorded (attempt {attempt}) for grading.")
        for i, q in enumerate(questions, 1):
            if q.id in done:
                continue  # answered before an interruption: resume after it
            variant = render(q, self.student_id, attempt, shuffle=True)
            _, response = self._ask(variant, f"{i}/{len(questions)}")
            self.store.record(self.student_id, q.id, attempt, response, "recorded")
        self.console.print(f"Stop {stop}: all {len(questions)} answers recorded.")
        return True

    # -------------------------------------------------------------- one question

    def _read(self) -> str:
        self.console.print("> ", end="")
        line = self.reader.read_line()
        if line is None:
            raise _EndOfInput
        return line

    def _show(self, variant: Variant, position: str) -> None:
        q = variant.question
        body = Text(variant.prompt)
        for label, _, text in variant.choices:
            body.append(f"\n  {label}) {text}")
        hint = _HINTS.get(q.type) or f"an expression in {', '.join(f'{k} = {v}' for k, v in q.symbols.items())}; use * and ** (or ^)"
        subtitle = f"{q.id} · attempt {variant.attempt}"
        self.console.print(Panel(body, title=f"Question {position}", subtitle=subtitle, subtitle_align="right"))
        self.console.print(Text(f"Answer with {hint}.", style="dim"))

    def _ask(self, variant: Variant, position: str) -> tuple[Any, Any]:
        """Show the question and read until the answer can be read; returns (outcome or None, stored response)."""
        self._show(variant, position)
        q = variant.question
        while True:
            line = self._read()
            if not line.strip():
                self.console.print("Please type an answer (Ctrl-D to stop; progress is saved).")
                continue
            try:
                response = normalise_response(q, line, variant)
                if q.type == "symbolic":
                    parse_expression_ast(response, set(q.symbols))
            except Unparseable as exc:
                self.console.print(Text(f"Could not read that: {exc}. Try again.", style="yellow"))
                continue
            if not self.keyed:
                return None, response
            # The typed line, not ``response``: shown labels are mapped to ids once, inside check().
            outcome = check(variant, line, self._checker)
            if outcome.status in ("unparseable", "undecided"):
                self.console.print(Text(outcome.feedback, style="yellow"))
                continue
            return outcome, response

    # -------------------------------------------------------------- submission

    def responses_file(self) -> dict[str, Any]:
        """Everything this student has recorded, as a responses file (latest attempt per question)."""
        latest = self.store.latest(self.student_id)
        attempt = max((a.attempt for a in latest.values()), default=1)
        return {
            "student_id": self.student_id,
            "attempt": attempt,
            "answers": {qid: a.response for qid, a in latest.items()},
            "attempts": {qid: a.attempt for qid, a in latest.items() if a.attempt != attempt},
        }

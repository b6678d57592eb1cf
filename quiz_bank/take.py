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

Without keys (the student bundle) the session asks the questions of the
attempt the grader will count (``--attempt N``, else the next one): the
mastery draw of ``quiz_bank.offline``, one question or more per claim, the
same questions the grader draws for that attempt. It records the answers and
writes a responses file to submit; the grader judges it by the web quiz's rule.

Each answer is stored in its own transaction before the next question is
shown, so a crash or Ctrl-D loses at most the question on screen.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.panel import Panel
from rich.text import Text

from quiz_bank import mastery
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


@dataclass(frozen=True)
class _Finished:
    """A finished attempt as the attempt policy's ``refusal`` reads it."""

    finished_at: float
    passed: bool = False


def course_policy(path=None):
    """The attempt policy the quiz server uses (``quiz_bank/instructor/server/attempt_policy.yaml``, or ``path``).

    Only a keyed take (an instructor's or self-learner's install, which has the
    server package) checks answers, so only it needs the policy.

    Raises:
        ValueError: if the policy file is invalid.
    """
    from quiz_bank.extension_point import instructor_extension

    return instructor_extension().load_policy(path)


class Session:
    """One student's run through some stops.

    Args:
        bank: the loaded bank. store: an AttemptStore. student_id: whose variants.
        console: a rich Console. reader: has ``read_line() -> str | None`` (None at EOF).
        keyed: True when answers can be checked here.
    """

    def __init__(self, bank, store, student_id: str, console, reader, *, keyed: bool, policy=None,
                 new_attempt: bool = False, attempt: int | None = None) -> None:
        self.bank, self.store, self.student_id = bank, store, student_id
        self.console, self.reader, self.keyed = console, reader, keyed
        self.policy = policy if policy is not None else (course_policy() if keyed else None)
        self.new_attempt, self.attempt = new_attempt, attempt
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
                    else (f"Every stop is recorded for attempt {self._target_attempt()}: submit your responses file "
                          "(answer a new attempt with --attempt N or --new-attempt).")
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
        policy = self.policy.for_stop(stop)
        if stop in self.store.completed_stops(self.student_id) and not self.new_attempt:
            self.console.print(f"Stop {stop} is already passed (it stays passed). For a practice attempt, which "
                               "never lowers a passed stop, add --new-attempt.")
            return True
        number = {q.id: i for i, q in enumerate(self.bank.questions(stop), 1)}
        while True:
            opened = self._open_or_start(stop, policy)
            if opened is None:
                return False
            attempt, order, done = opened
            if done:
                self.console.print(f"Resuming attempt {attempt} of stop {stop}.")
            stale = self._stale(stop, attempt, order)
            for i, qid in enumerate(order, 1):
                if qid in done:
                    continue
                variant = render(self.bank.by_id[qid], self.student_id, attempt, shuffle=True)
                outcome, response = self._ask(variant, f"{i}/{len(order)}")
                marks = self._marks(attempt, order) | {qid: outcome.correct}
                completes = stop if len(marks) == len(order) and self._passes(policy, order, marks, stale) else None
                self.store.record(self.student_id, qid, attempt, response, outcome.status, completed_stop=completes)
                if policy.shows_verdicts:
                    self.console.print(Text("Right." if outcome.correct else "Not right.",
                                            style="green" if outcome.correct else "red"))
                else:
                    self.console.print(Text("Recorded.", style="dim"))
            marks = self._marks(attempt, order)
            if self._passes(policy, order, marks, stale):
                self.console.print(Text(f"Stop {stop} passed: {len(order)}/{len(order)}.", style="bold green"))
                for qid in order:  # the explanations, in full, once the stop is passed
                    q = self.bank.by_id[qid]
                    if q.explanation:
                        self.console.print(Text(f"{number[q.id]}. {q.explanation} ({q.source.cite()})", style="dim"))
                return True
            self._after_failed(stop, policy, attempt, order, marks, stale, number)
            if stop in self.store.completed_stops(self.student_id):
                self.console.print(f"Stop {stop} stays passed (this was a practice attempt).")
                return True
            reason = self._refusal(self._history(stop), policy)
            if reason:  # do not offer an attempt the policy would refuse at once
                self.console.print(f"The next attempt at stop {stop} is not open yet: {reason}. Run the same "
                                   "command again then.")
                return False
            self.console.print(f"Start attempt {attempt + 1} now: new questions where the bank has them, fresh numbers "
                               "and option order? [Y/n]")
            if self._read().strip().lower() in ("n", "no", "q"):
                return False

    def _after_failed(self, stop, policy, attempt, order, marks, stale, number) -> None:
        """What a failed attempt tells: the claims missed (mastery) or the questions missed with a hint."""
        right = sum(marks.get(q, False) for q in order)
        if policy.is_mastery:
            missed = mastery.missed_claims(self.bank, stop, order, marks, stale, count_seen=policy.count_seen)
            n_claims = len(mastery.stop_claims(self.bank, stop))
            self.console.print(f"Stop {stop}, attempt {attempt}: {len(missed)} of {n_claims} claims not established "
                               "— a stop passes only when every claim is, on questions you had not seen before.")
            for claim in missed:
                self.console.print(Text(f"  Reread: {claim.text} ({claim.cite})", style="yellow"))
            return
        self.console.print(f"Stop {stop}, attempt {attempt}: {right}/{len(order)} right — a stop passes only at 100%.")
        for qid in order:
            if not marks.get(qid, False):
                q = self.bank.by_id[qid]
                hint = q.hint or "Reread the section cited here."
                self.console.print(Text(f"  Question {number[q.id]} ({q.id}): not right. Hint: {hint} ({q.source.cite()})",
                                        style="yellow"))

    def _passes(self, policy, order, marks, stale) -> bool:
        if policy.is_mastery:
            return mastery.attempt_passes(order, marks, stale, count_seen=policy.count_seen)
        return all(marks.get(q, False) for q in order)

    def _marks(self, attempt: int, order) -> dict[str, bool]:
        """Question id → right, for the answers recorded at ``attempt``."""
        out = {}
        for qid in order:
            for a in self.store.attempts(self.student_id, qid):
                if a.attempt == attempt:
                    out[qid] = a.status == "correct"
        return out

    def _history(self, stop: int) -> list[tuple[int, tuple[str, ...], float]]:
        """Recorded attempts at ``stop`` (older stores without attempt rows: rebuilt from the answers)."""
        rows = self.store.stop_attempts(self.student_id, stop)
        if rows:
            return rows
        by_attempt: dict[int, list[str]] = {}
        for q in self.bank.questions(stop):
            for a in self.store.attempts(self.student_id, q.id):
                by_attempt.setdefault(a.attempt, []).append(q.id)
        return [(n, tuple(ids), 0.0) for n, ids in sorted(by_attempt.items())]

    def _stale(self, stop: int, attempt: int, order) -> set[str]:
        earlier = [(n, ids) for n, ids, _ in self._history(stop) if n < attempt]
        return mastery.stale_items(self.bank, order, mastery.last_seen_from(earlier, self.bank, self.student_id),
                                   self.student_id, attempt)

    def _open_or_start(self, stop: int, policy):
        """(attempt, its questions, those answered) of the open attempt, else of a new one; None when refused."""
        history = self._history(stop)
        if history:
            n, order, _ = history[-1]
            done = set(self._marks(n, order))
            if len(done) < len(order):
                return n, order, done
        now = time.time()
        reason = None if self.new_attempt and stop in self.store.completed_stops(self.student_id) else \
            self._refusal(history, policy, now)
        if reason:
            self.console.print(f"A new attempt at stop {stop} cannot start: {reason}.")
            return None
        n = (history[-1][0] if history else 0) + 1
        if policy.is_mastery:
            seen = mastery.last_seen_from(((a, ids) for a, ids, _ in history), self.bank, self.student_id)
            drawn = set(mastery.draw(self.bank, stop, self.student_id, n, seen))
            order = tuple(q.id for q in self.bank.questions(stop) if q.id in drawn)  # bank order: stable numbering
        else:
            order = tuple(q.id for q in self.bank.questions(stop))
        self.store.start_stop_attempt(self.student_id, stop, n, list(order), now)
        self.new_attempt = False
        return n, order, set()

    def _refusal(self, history, policy, now: float | None = None) -> str | None:
        """Why the policy refuses a new attempt after ``history``'s finished attempts now (None: it may start)."""
        return policy.refusal([_Finished(t) for t in self._finish_times(history)], time.time() if now is None else now)

    def _finish_times(self, history) -> list[float]:
        """When each finished attempt ended (its last answer), as epoch seconds."""
        from datetime import datetime

        out = []
        for n, order, started in history:
            stamps = [a.recorded_at for qid in order for a in self.store.attempts(self.student_id, qid) if a.attempt == n]
            out.append(max((datetime.fromisoformat(t).timestamp() for t in stamps), default=started))
        return out

    def _recorded(self, stop: int) -> dict[str, set[int]]:
        """Question id → the attempts at which it has a recorded answer (key-less take), for the questions this
        take's attempt asks."""
        return {qid: {a.attempt for a in self.store.attempts(self.student_id, qid)} for qid in self._asked(stop)}

    def _asked(self, stop: int) -> tuple[str, ...]:
        """The questions the key-less take's attempt asks at ``stop``: the mastery draw the grader makes for it
        (``quiz_bank.offline``), in bank order so that numbering is stable across resumes."""
        from quiz_bank.offline import attempt_at

        drawn = set(attempt_at(self.bank, stop, self.student_id, self._target_attempt()).order)
        return tuple(q.id for q in self.bank.questions(stop) if q.id in drawn)

    def latest_attempt(self) -> int:
        """The highest attempt with a recorded answer, any stop (0 when none)."""
        return max((a.attempt for a in self.store.latest(self.student_id).values()), default=0)

    def _target_attempt(self) -> int:
        """The attempt a key-less take records: ``--attempt N``, a new one with ``--new-attempt``, else the latest (or 1)."""
        if self.attempt is None:  # fixed once per take, so that every stop of it records the same attempt
            latest = self.latest_attempt()
            self.attempt = latest + 1 if self.new_attempt or latest == 0 else latest
        return self.attempt

    def stop_recorded(self, stop: int) -> bool:
        """True when every question of the stop has an answer at the attempt this take records."""
        target = self._target_attempt()
        return all(target in s for s in self._recorded(stop).values())

    def _recorded_stop(self, stop: int) -> bool:
        self._header(stop)
        questions = [self.bank.by_id[qid] for qid in self._asked(stop)]
        attempt = self._target_attempt()
        done = {qid for qid, s in self._recorded(stop).items() if attempt in s}
        if len(done) == len(questions):
            # Never a silent new attempt: a new one needs --new-attempt or --attempt N.
            self.console.print(f"Stop {stop} is already recorded for attempt {attempt}; nothing changed. To answer it "
                               f"again for your next submission, run `ppo-course quiz take --attempt N` with the attempt "
                               "number your grader's feedback gives (or --new-attempt).")
            return True
        if attempt not in {n for n, _, _ in self.store.stop_attempts(self.student_id, stop)}:
            self.store.start_stop_attempt(self.student_id, stop, attempt, [q.id for q in questions], time.time())
        self.console.print(f"No answer keys here: your answers are recorded for attempt {attempt}, to be graded. "
                           f"This attempt asks {len(questions)} questions on the stop's "
                           f"{len(mastery.stop_claims(self.bank, stop))} claims; {mastery.RULE}")
        for i, q in enumerate(questions, 1):
            if q.id in done:
                continue  # answered before an interruption: resume after it
            variant = render(q, self.student_id, attempt, shuffle=True)
            _, response = self._ask(variant, f"{i}/{len(questions)}")
            self.store.record(self.student_id, q.id, attempt, response, "recorded")
        self.console.print(f"Stop {stop}: all {len(questions)} answers recorded for attempt {attempt}.")
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
        """The answers recorded at one attempt (this take's), as a responses file.

        The grader grades every answer as its own count of this student's
        submissions, so a file holds one attempt only (``quiz_bank.ledger``).
        """
        attempt = self._target_attempt()
        answers = {a.question_id: a.response for a in self.store.attempts(self.student_id) if a.attempt == attempt}
        return {"student_id": self.student_id, "attempt": attempt, "answers": answers}

"""The quiz as the server runs it: stop attempts, one question at a time, the 100% rule.

Under the mastery policy (the default, ``quiz_bank.mastery``) an attempt shows
one question per claim of the stop, unseen ones first; answers are recorded
without a verdict; the attempt passes when every claim is answered right on a
question the student had not seen before; the review names the claims missed
and the sections to reread. Under the older policies (``cooldown``,
``budget``) an attempt shows every question of the stop once, in an order drawn
from (student, stop, attempt), each question rendered as the variant of that
attempt with its options shuffled (``engine.render(..., shuffle=True)``): a
retry is attempt + 1, so parametric questions come back with fresh numbers and
every question in a fresh place with its options in a fresh order. Each answer
is checked at once (right / not right, nothing more) and committed before the
reply; the attempt passes only when every answer is right (Book: "100% to
complete"), and the chapter is complete when all eight stops are passed.

After a failed attempt the review shows, per missed question, the student's
own answer, a hint and the section to reread, never the right option; once the
stop is passed it shows the explanations in full. Keys and explanations never
reach a page before that, and the option ids stay on the server (a page posts
the label it showed).
"""

from __future__ import annotations

import hashlib
import hmac
import random
import threading
from dataclasses import dataclass, field
from typing import Any

from quiz_bank import mastery, variants
from quiz_bank.engine import Variant, check, normalise_response, render
from quiz_bank.loader import Bank
from quiz_bank.parsing import Unparseable
from quiz_bank.instructor.server.db import Conflict, QuizDB, StopAttempt, answer_refusal
from quiz_bank.instructor.server.policy import PolicyFile

MAX_ANSWER_CHARS = 500


class BadAnswer(ValueError):
    """An answer that cannot be read (nothing is recorded; the student answers again)."""


@dataclass
class Verdict:
    """What the student learns right after answering: right or not, and where the attempt stands."""

    question_id: str
    correct: bool
    attempt: StopAttempt
    answered: int
    total: int
    shown: bool = True  # False under mastery: the page says "recorded", never right / not right


@dataclass
class ReviewItem:
    """One question of a finished attempt, as the review page shows it."""

    number: int
    prompt: str
    your_answer: str
    correct: bool
    cite: str
    hint: str | None = None
    explanation: str | None = None


@dataclass
class StopProgress:
    """One stop on the home page."""

    stop: int
    title: str
    n_questions: int
    attempts: int
    best: int
    best_of: int
    passed: bool
    open_attempt: int | None = None
    answered_in_open: int = 0
    open_of: int = 0
    unit: str = "questions"  # what n_questions counts: "claims" under the mastery rule


@dataclass
class QuizService:
    """Everything the routes need from the bank and the database (no HTTP here).

    Args:
        bank: the instructor bank (with keys). db: the server's QuizDB.
        policy: the attempt policies. checker: a SymbolicChecker (shared; calls are serialised).
    """

    bank: Bank
    db: QuizDB
    policy: PolicyFile
    checker: Any = None
    variant_key: bytes | None = None
    _checker_lock: threading.Lock = field(default_factory=threading.Lock)

    def variant_id(self, student_id: str) -> str:
        """The id a student's variants and draws are seeded with: an HMAC of the id under ``variant_key``.

        Without a key, the student id itself (``quiz take`` and the responses-file path, whose variants the
        student bundle must reproduce). The server keys it (``create_app``: derived from the token secret), so a
        student cannot compute the next attempt's questions and numbers with the public ``quiz_bank.variants``
        and work them out in the interactives, which are open between attempts (session 6, bot "predict").
        """
        if self.variant_key is None:
            return student_id
        return "v1:" + hmac.new(self.variant_key, student_id.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    # ------------------------------------------------------------------ drawing

    def question_order(self, student_id: str, stop: int, attempt: int) -> list[str]:
        """The questions of one attempt, in order (reproducible from the student's history, stop and attempt).

        Mastery: one per claim, unseen first (``mastery.draw``); otherwise every question of the stop.
        """
        if self.policy.for_stop(stop).is_mastery:
            return mastery.draw(self.bank, stop, self.variant_id(student_id), attempt,
                                self.last_seen(student_id, stop, before=attempt))
        ids = [q.id for q in self.bank.questions(stop)]
        random.Random(variants.variant_seed(self.variant_id(student_id), f"stop{stop}#order", attempt)).shuffle(ids)
        return ids

    def variant(self, student_id: str, question_id: str, attempt: int) -> Variant:
        """The variant shown in that attempt: fresh parameters and option order per attempt."""
        return render(self.bank.by_id[question_id], self.variant_id(student_id), attempt, shuffle=True)

    def last_seen(self, student_id: str, stop: int, before: int | None = None) -> dict[str, int]:
        """Fact (a fixed question's id, a parametric draw's fact) → last attempt (before ``before``) that showed it
        to the student (``mastery.last_seen_from``)."""
        rows = [a for a in self.db.attempts(student_id, stop) if before is None or a.attempt < before]
        return mastery.last_seen_from(((a.attempt, a.question_order) for a in rows), self.bank,
                                      self.variant_id(student_id))

    def stale(self, student_id: str, stop: int, attempt: int, order) -> set[str]:
        """The questions of ``attempt`` the student had already seen in an earlier attempt."""
        return mastery.stale_items(self.bank, order, self.last_seen(student_id, stop, before=attempt),
                                   self.variant_id(student_id), attempt)

    def claims_per_attempt(self, stop: int) -> int:
        """How many claims (mastery: an attempt asks each on one question or more) or questions an attempt asks."""
        if self.policy.for_stop(stop).is_mastery:
            return len(mastery.stop_claims(self.bank, stop))
        return len(self.bank.questions(stop))

    def has_open_attempt(self, student_id: str) -> int | None:
        """The stop of the student's open attempt (None when no attempt is open)."""
        rows = [a for a in self.db.attempts(student_id) if a.is_open]
        return rows[0].stop if rows else None

    # ------------------------------------------------------------------ state

    def progress(self, student_id: str) -> list[StopProgress]:
        """The eight stops with attempts, best score and whether each is passed."""
        by_stop: dict[int, list[StopAttempt]] = {}
        for a in self.db.attempts(student_id):
            by_stop.setdefault(a.stop, []).append(a)
        out = []
        for stop in sorted(self.bank.stops):
            rows = by_stop.get(stop, [])
            open_rows = [a for a in rows if a.is_open]
            answered = len(self.db.answers(student_id, stop, open_rows[-1].attempt)) if open_rows else 0
            best = max(rows, key=lambda a: a.n_correct or 0, default=None)
            out.append(StopProgress(
                stop=stop, title=self.bank.stops[stop].title, n_questions=self.claims_per_attempt(stop),
                attempts=len(rows), best=(best.n_correct or 0) if best else 0,
                best_of=len(best.question_order) if best else self.claims_per_attempt(stop),
                passed=any(a.passed for a in rows), open_attempt=open_rows[-1].attempt if open_rows else None,
                answered_in_open=answered, open_of=len(open_rows[-1].question_order) if open_rows else 0,
                unit="claims" if self.policy.for_stop(stop).is_mastery else "questions",
            ))
        return out

    def open_attempt(self, student_id: str, stop: int) -> StopAttempt | None:
        """The student's open attempt at ``stop``, if any."""
        rows = self.db.attempts(student_id, stop)
        return rows[-1] if rows and rows[-1].is_open else None

    def next_question(self, attempt: StopAttempt) -> tuple[int, Variant] | None:
        """(1-based number, variant) of the attempt's next unanswered question; None when all are answered."""
        done = self.db.answers(attempt.student_id, attempt.stop, attempt.attempt)
        for i, qid in enumerate(attempt.question_order, 1):
            if qid not in done:
                return i, self.variant(attempt.student_id, qid, attempt.attempt)
        return None

    def refusal(self, student_id: str, stop: int, now: float) -> str | None:
        """Why a new attempt cannot start now, by the stop's policy (None when it can)."""
        finished = [a for a in self.db.attempts(student_id, stop) if not a.is_open]
        return self.policy.for_stop(stop).refusal(finished, now)

    # ------------------------------------------------------------------ actions

    def start(self, student_id: str, stop: int, now: float | None = None) -> StopAttempt:
        """The open attempt, or a new one if the policy allows it.

        Raises:
            Conflict: with the policy's reason when a new attempt may not start.
        """
        policy = self.policy.for_stop(stop)
        return self.db.start_attempt(
            student_id, stop, lambda n: self.question_order(student_id, stop, n), now=now,
            may_start=lambda rows, t: policy.refusal([a for a in rows if not a.is_open], t),
        )

    def answer(self, student_id: str, stop: int, attempt: int, question_id: str, raw: str | list[str],
               now: float | None = None) -> Verdict:
        """Check one answer and commit it (see :meth:`QuizDB.record_answer`).

        Args:
            raw: what the form posted: the label(s) shown, true/false, a number or an expression.

        Raises:
            Conflict: stale or forged attempt, a question not in this attempt, already answered.
            BadAnswer: empty, overlong or unreadable answer (nothing recorded).
        """
        rows = {a.attempt: a for a in self.db.attempts(student_id, stop)}
        if attempt not in rows:
            raise Conflict(f"attempt {attempt} of stop {stop} does not exist for you; reload the stop's page")
        # An answer that cannot be recorded is refused before any check: the symbolic checker is one per server.
        refusal = answer_refusal(rows[attempt], set(self.db.answers(student_id, stop, attempt)), question_id)
        if refusal:
            raise Conflict(refusal)
        text = ",".join(raw) if isinstance(raw, list) else str(raw)
        if len(text) > MAX_ANSWER_CHARS:
            raise BadAnswer(f"the answer is longer than {MAX_ANSWER_CHARS} characters")
        if not text.strip():
            raise BadAnswer("no answer given: choose or type one")
        variant = self.variant(student_id, question_id, attempt)
        try:
            response = normalise_response(variant.question, text, variant)
        except Unparseable as exc:
            raise BadAnswer(f"could not read the answer: {exc}") from None
        with self._checker_lock:
            outcome = check(variant, text, self.checker)
        if outcome.status in ("unparseable", "undecided", "unanswered"):
            raise BadAnswer(outcome.feedback.split(" (Book")[0])
        policy = self.policy.for_stop(stop)
        passes = None
        if policy.is_mastery:
            stale = self.stale(student_id, stop, attempt, rows[attempt].question_order)

            def passes(order, marks):
                return mastery.attempt_passes(order, marks, stale, count_seen=policy.count_seen)
        after = self.db.record_answer(student_id, stop, attempt, question_id, response, outcome.correct, now=now,
                                      passes=passes)
        answered = len(self.db.answers(student_id, stop, attempt))
        return Verdict(question_id, outcome.correct, after, answered, len(after.question_order),
                       shown=policy.shows_verdicts)

    # ------------------------------------------------------------------ review

    def describe_response(self, variant: Variant, response: Any) -> str:
        """A stored (canonical) response as the student saw it: option texts, not ids."""
        q = variant.question
        texts = {option_id: text for _, option_id, text in variant.choices}
        if q.type in ("single", "multi", "ordering"):
            ids = [response] if isinstance(response, str) else list(response or [])
            return "; ".join(texts.get(i, i) for i in ids)
        if q.type == "true_false":
            return "true" if response else "false"
        return str(response)

    def missed_claims(self, student_id: str, stop: int, attempt: int) -> list[mastery.Claim]:
        """Mastery: the claims a finished attempt did not establish (wrong, or right on a question seen before)."""
        rows = {a.attempt: a for a in self.db.attempts(student_id, stop)}
        order = rows[attempt].question_order
        marks = {q: a.correct for q, a in self.db.answers(student_id, stop, attempt).items()}
        return mastery.missed_claims(self.bank, stop, order, marks, self.stale(student_id, stop, attempt, order),
                                     count_seen=self.policy.for_stop(stop).count_seen)

    def exhausted_claims(self, student_id: str, stop: int) -> list[mastery.Claim]:
        """Mastery: claims whose questions the student has all seen (the next attempt cannot establish them)."""
        if not self.policy.for_stop(stop).is_mastery or self.policy.for_stop(stop).count_seen:
            return []
        next_attempt = max((a.attempt for a in self.db.attempts(student_id, stop)), default=0) + 1
        return mastery.exhausted_claims(self.bank, stop, self.last_seen(student_id, stop), self.variant_id(student_id),
                                        next_attempt)

    def review(self, student_id: str, stop: int, attempt: int) -> list[ReviewItem]:
        """The finished attempt, question by question (hints when missed; explanations once the stop is passed).

        Under mastery a failed attempt has no per-question review (see :meth:`missed_claims`): an empty list.
        """
        rows = {a.attempt: a for a in self.db.attempts(student_id, stop)}
        stop_passed = any(a.passed for a in rows.values())
        if self.policy.for_stop(stop).is_mastery and not stop_passed:
            return []
        answers = self.db.answers(student_id, stop, attempt)
        items = []
        for i, qid in enumerate(rows[attempt].question_order, 1):
            variant = self.variant(student_id, qid, attempt)
            stored = answers.get(qid)
            q = variant.question
            correct = bool(stored and stored.correct)
            items.append(ReviewItem(
                number=i, prompt=variant.prompt,
                your_answer=self.describe_response(variant, stored.response) if stored else "(not answered)",
                correct=correct, cite=q.source.cite(),
                hint=None if (correct or stop_passed) else (q.hint or "Reread the section cited here."),
                explanation=q.explanation if stop_passed else None,
            ))
        return items

"""How many attempts a student who does not understand the chapter needs to reach 100% (a script, not a test).

    python benchmarks/bench_quiz_integrity.py [--students 3] [--cap 60] [--stops 1 2 ...]
                                              [--bots always-a longest text-match elimination understanding]
                                              [--policy attempt_policy.yaml]

Bots take the quiz against the real engine and the server's own policy code,
in process: ``quiz_bank.instructor.server.quiz.QuizService`` on a temporary database,
the same calls the routes make (start an attempt, answer the next question,
read the verdict or, under mastery, the claims missed). A simulated clock
skips each cooldown. The bots (issue 20, "A measurement, in the project"):

- ``always-a``: the first option shown (true; the first number of the stem).
- ``longest``: the longest option (for a multi, every option at least as long as the mean).
- ``text-match``: the option whose words best match a passage of the chapter
  (TF-IDF cosine over the chapter's paragraphs); a true/false is "true" when
  the stem matches the chapter well; an ordering follows where each item
  matches the chapter. The chapter is ``--chapter``, ``$PPO_COURSE_CHAPTER``,
  ``../shared/seed/000_51c4e4947e0c3958.txt`` from the repository root or
  ``/work/shared/seed/…``; without it this bot is left out (said so).
- ``elimination``: perfect memory across attempts: per fixed question, the
  answers shown not to work (a missed claim, or a "not right") are never given
  again and a known-right answer is always repeated; parametric questions
  come back with new numbers, where memory does not help: there it guesses
  (a random option, true/false at random, a number of the stem at random).
- ``understanding``: answers from the keys (``quiz_bank.instructor.keys``, instructor side).

For each stop it prints each bot's median number of attempts to pass (over
``--students`` simulated students), ``never`` when not within ``--cap``
attempts, or ``never*`` when the policy makes passing impossible for that bot
(a claim whose questions it has all seen, under mastery), and the cooldown
time the elimination bot's median implies. ``fixed-only claims`` counts the
claims asked by fixed questions only: a student who has seen all of them
cannot establish that claim any more under strict mastery (the stop page
sends them to the TA), so a bank should give each claim a parametric item or
several fixed ones. The table is Markdown, to paste
into ``docs/quiz_audit.md``. Goals: every bot but ``understanding`` ≥ 30
attempts per stop or never; ``understanding`` passes every stop in 1.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHAPTER_NAME = "000_51c4e4947e0c3958.txt"
BOTS = ("always-a", "longest", "text-match", "elimination", "understanding")
_WORD = re.compile(r"[a-zA-Z][a-zA-Z0-9_]+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def find_chapter(explicit: Path | None = None) -> Path | None:
    """The chapter's text: ``explicit``, ``$PPO_COURSE_CHAPTER``, ``../shared/seed/`` from the repo, ``/work/shared/seed/``."""
    candidates = [explicit, os.environ.get("PPO_COURSE_CHAPTER"), REPO.parent / "shared" / "seed" / CHAPTER_NAME,
                  Path("/work/shared/seed") / CHAPTER_NAME]
    for c in candidates:
        if c and Path(c).is_file():
            return Path(c)
    return None


# ---------------------------------------------------------------- chapter text matching


class ChapterIndex:
    """TF-IDF vectors of the chapter's paragraphs; :meth:`score` is a text's best cosine against one of them."""

    def __init__(self, text: str) -> None:
        self.paragraphs = [p for p in re.split(r"\n\s*\n", text) if len(p.split()) >= 4]
        docs = [Counter(self.words(p)) for p in self.paragraphs]
        n = len(docs)
        df = Counter(w for d in docs for w in d)
        self.idf = {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}
        self.unseen_idf = math.log(1 + n) + 1.0  # a word the chapter never uses: rarest of all
        self.vectors = [self._vector(d) for d in docs]

    @staticmethod
    def words(text: str) -> list[str]:
        """Lower-case word tokens."""
        return [w.lower() for w in _WORD.findall(text)]

    def _vector(self, counts: Counter) -> dict[str, float]:
        vec = {w: c * self.idf.get(w, self.unseen_idf) for w, c in counts.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {w: v / norm for w, v in vec.items()}

    def best(self, text: str) -> tuple[float, int]:
        """(best cosine, index of the best paragraph) of ``text``."""
        q = self._vector(Counter(self.words(text)))
        scores = [sum(v * p.get(w, 0.0) for w, v in q.items()) for p in self.vectors]
        i = max(range(len(scores)), key=scores.__getitem__) if scores else 0
        return (scores[i] if scores else 0.0), i


# ---------------------------------------------------------------- bots


def _prompt_number(variant) -> str:
    numbers = _NUMBER.findall(variant.prompt)
    return numbers[0] if numbers else "1"


def _fallback(variant) -> str | list[str]:
    """What a bot that cannot compute types for a non-choice question."""
    q = variant.question
    if q.type == "true_false":
        return "true"
    if q.type == "numeric":
        return _prompt_number(variant)
    if q.type == "symbolic":
        return next(iter(q.symbols))
    return " ".join(label for label, _, _ in variant.choices)  # ordering: as shown


@dataclass
class Bot:
    """A strategy: ``answer(variant) -> form value``; ``observe`` learns from what the policy tells."""

    name: str
    memory: dict = field(default_factory=dict)

    def answer(self, variant, service=None):
        """The form value(s) this bot posts for ``variant``."""
        raise NotImplementedError

    def observe(self, variant, given, verdict: bool | None) -> None:
        """``verdict``: True/False when the policy told right/wrong (or the claim was established/missed)."""


class AlwaysA(Bot):
    """The first option shown; see the module docstring."""

    def answer(self, variant, service=None):
        if variant.question.type == "single":
            return variant.choices[0][0]
        if variant.question.type == "multi":
            return [variant.choices[0][0]]
        return _fallback(variant)


class Longest(Bot):
    """The longest option (multi: those at least as long as the mean)."""

    def answer(self, variant, service=None):
        kind = variant.question.type
        if kind == "single":
            return max(variant.choices, key=lambda c: len(c[2]))[0]
        if kind == "multi":
            mean = statistics.fmean(len(c[2]) for c in variant.choices)
            return [c[0] for c in variant.choices if len(c[2]) >= mean]
        return _fallback(variant)


class TextMatch(Bot):
    """Options matched to the chapter's words (TF-IDF cosine)."""

    def __init__(self, name: str, index: ChapterIndex) -> None:
        super().__init__(name)
        self.index = index

    def answer(self, variant, service=None):
        kind = variant.question.type
        scored = [(self.index.best(text)[0], label) for label, _, text in variant.choices]
        if kind == "single":
            return max(scored)[1]
        if kind == "multi":
            mean = statistics.fmean(s for s, _ in scored)
            return [label for s, label in scored if s >= mean] or [max(scored)[1]]
        if kind == "ordering":
            where = sorted((self.index.best(text)[1], label) for label, _, text in variant.choices)
            return " ".join(label for _, label in where)
        if kind == "true_false":
            return "true" if self.index.best(variant.prompt)[0] >= 0.25 else "false"
        return _fallback(variant)


class Elimination(Bot):
    """Perfect memory across attempts (see the module docstring)."""

    def _candidates(self, variant) -> list:
        q = variant.question
        ids = [option_id for _, option_id, _ in variant.choices]
        if q.type == "single":
            return [(i,) for i in sorted(ids)]
        if q.type == "multi":
            return [tuple(c) for n in range(1, len(ids) + 1) for c in itertools.combinations(sorted(ids), n)]
        if q.type == "true_false":
            return [("true",), ("false",)]
        if q.type == "ordering":
            return [tuple(p) for p in itertools.islice(itertools.permutations(sorted(ids)), 720)]
        return []

    def _guess(self, variant):
        """A seeded random guess (a parametric question: nothing to remember)."""
        from quiz_bank import variants

        rng = random.Random(variants.variant_seed(f"bot:{variant.student_id}", variant.question.id, variant.attempt))
        q, labels = variant.question, [label for label, _, _ in variant.choices]
        if q.type == "single":
            return rng.choice(labels)
        if q.type == "multi":
            return rng.sample(labels, rng.randint(1, len(labels)))
        if q.type == "true_false":
            return rng.choice(["true", "false"])
        if q.type == "numeric":
            return rng.choice(_NUMBER.findall(variant.prompt) or ["1"])
        if q.type == "ordering":
            rng.shuffle(labels)
            return " ".join(labels)
        return _fallback(variant)

    def answer(self, variant, service=None):
        q = variant.question
        candidates = self._candidates(variant)
        if q.is_parametric or not candidates:
            return self._guess(variant)
        known = self.memory.setdefault(q.id, {"right": None, "wrong": set()})
        pick = known["right"] or next((c for c in candidates if c not in known["wrong"]), candidates[0])
        label_of = {option_id: label for label, option_id, _ in variant.choices}
        if q.type == "single":
            return label_of[pick[0]]
        if q.type == "multi":
            return [label_of[i] for i in pick]
        if q.type == "true_false":
            return pick[0]
        return " ".join(label_of[i] for i in pick)

    def observe(self, variant, given, verdict):
        q = variant.question
        if q.is_parametric or verdict is None or q.id not in self.memory:
            return
        label_to_id = variant.label_to_id()
        values = given if isinstance(given, list) else str(given).split()
        ids = tuple(label_to_id.get(v, v) for v in values)
        if q.type in ("single", "multi"):
            ids = tuple(sorted(ids))
        known = self.memory[q.id]
        if verdict:
            known["right"] = ids
        elif known["right"] != ids:
            known["wrong"].add(ids)


class Understanding(Bot):
    """Answers from the keys (``quiz_bank.instructor.keys``): what a student who understands the chapter answers."""

    def answer(self, variant, service=None):
        from quiz_bank.engine import expected_answer

        key = expected_answer(variant)
        label_of = {option_id: label for label, option_id, _ in variant.choices}
        kind = variant.question.type
        if kind == "single":
            return label_of[key]
        if kind == "multi":
            return sorted(label_of[i] for i in key)
        if kind == "true_false":
            return "true" if key else "false"
        if kind == "ordering":
            return " ".join(label_of[i] for i in key)
        return repr(float(key)) if kind == "numeric" else str(key)


def make_bot(name: str, index: ChapterIndex | None) -> Bot:
    """A fresh bot (fresh memory) by name."""
    if name == "text-match":
        return TextMatch(name, index)
    return {"always-a": AlwaysA, "longest": Longest, "elimination": Elimination, "understanding": Understanding}[name](name)


# ---------------------------------------------------------------- one simulated student


def attempts_to_pass(service, bot: Bot, student: str, stop: int, cap: int) -> int | str:
    """Attempts ``bot`` needs to pass ``stop`` as ``student`` (int), ``"never"`` within ``cap``, or
    ``"never*"`` when the policy makes it impossible (under mastery, a claim with no unseen question left)."""
    from quiz_bank.instructor.server.db import Conflict

    policy = service.policy.for_stop(stop)
    clock = 1_000_000.0
    for n in range(1, cap + 1):
        if policy.is_mastery and not policy.count_seen and n > 1 and service.exhausted_claims(student, stop):
            return "never*"
        try:
            attempt = service.start(student, stop, now=clock)
        except Conflict:  # out of a budget
            return "never*"
        shown = []
        while (nxt := service.next_question(attempt)) is not None:
            _, variant = nxt
            given = bot.answer(variant, service)
            verdict = service.answer(student, stop, attempt.attempt, variant.question.id, given, now=clock)
            shown.append((variant, given, verdict.correct if policy.shows_verdicts else None))
            attempt = verdict.attempt
        if attempt.passed:
            return n
        if not policy.shows_verdicts:  # mastery: only the claims missed are told
            missed = {c.id for c in service.missed_claims(student, stop, attempt.attempt)}
            from quiz_bank.mastery import claim_of

            stale = service.stale(student, stop, attempt.attempt, attempt.question_order)
            shown = [(v, g, None if v.question.id in stale else claim_of(v.question) not in missed)
                     for v, g, _ in shown]
        for variant, given, verdict in shown:
            bot.observe(variant, given, verdict)
        clock += policy.cooldown_s + 1.0
    return "never"


def median_cell(results: list) -> str:
    """The median of a bot's results ("never" counts as above every number)."""
    ranked = sorted(results, key=lambda r: (isinstance(r, str), r if isinstance(r, int) else 0))
    mid = ranked[(len(ranked) - 1) // 2]
    return str(mid)


def measure(bank, policy, stops, bots, students: int, cap: int, index, checker=None, workdir: Path | None = None) -> dict:
    """{stop: {bot: [result per student]}}: every bot at every stop, each student a fresh database row set."""
    from quiz_bank.instructor.server.db import QuizDB
    from quiz_bank.instructor.server.quiz import QuizService

    workdir = Path(workdir or tempfile.mkdtemp(prefix="quiz-integrity-"))
    db = QuizDB(workdir / "bench.sqlite", durable=False)  # a benchmark database: no fsync per answer
    service = QuizService(bank, db, policy, checker)
    table: dict = {}
    for stop in stops:
        table[stop] = {}
        for name in bots:
            table[stop][name] = [attempts_to_pass(service, make_bot(name, index), f"{name}-s{stop}-{i}", stop, cap)
                                 for i in range(students)]
    return table


def render_table(table: dict, bank, policy, cap: int, bots) -> str:
    """The Markdown table (one row per stop) printed by the script."""
    from quiz_bank.mastery import stop_claims

    head = ["stop", "claims", "fixed-only claims", *bots, "elimination's cooldown"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for stop, row in table.items():
        p = policy.for_stop(stop)
        cells = [median_cell(row[b]) for b in bots]
        elim = row.get("elimination")
        wait = "—"
        if elim is not None and median_cell(elim).isdigit():
            wait = f"{(int(median_cell(elim)) - 1) * p.cooldown_s / 3600:.1f} h"
        elif elim is not None:
            wait = f"> {(cap - 1) * p.cooldown_s / 3600:.1f} h" if median_cell(elim) == "never" else "—"
        claims = stop_claims(bank, stop)
        fixed_only = sum(all(not bank.by_id[q].is_parametric for q in c.items) for c in claims)
        lines.append("| " + " | ".join([str(stop), str(len(claims)), str(fixed_only), *cells, wait]) + " |")
    return "\n".join(lines)


def goals_met(table: dict, bots) -> list[str]:
    """The goals the run misses (empty when all are met)."""
    misses = []
    for stop, row in table.items():
        for b in bots:
            for r in [median_cell(row[b])]:
                if b == "understanding" and r != "1":
                    misses.append(f"stop {stop}: understanding needs {r} attempts (goal 1)")
                if b != "understanding" and r.isdigit() and int(r) < 30:
                    misses.append(f"stop {stop}: {b} passes in {r} attempts (goal ≥ 30 or never)")
    return misses


def main(argv: list[str] | None = None) -> int:
    """Run the bots and print the table (exit 0; 1 when a goal is missed)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=3)
    parser.add_argument("--cap", type=int, default=60)
    parser.add_argument("--stops", type=int, nargs="+", default=list(range(1, 9)))
    parser.add_argument("--bots", nargs="+", choices=BOTS, default=list(BOTS))
    parser.add_argument("--policy", type=Path, default=None, help="attempt policy YAML (default: the course's)")
    parser.add_argument("--chapter", type=Path, default=None)
    parser.add_argument("--bank", type=Path, default=None)
    args = parser.parse_args(argv)

    from quiz_bank.loader import load_bank
    from quiz_bank.instructor.server.policy import load_policy
    from quiz_bank.symbolic import SymbolicChecker

    bank, policy = load_bank(args.bank), load_policy(args.policy)
    bots = list(args.bots)
    chapter = find_chapter(args.chapter)
    index = ChapterIndex(chapter.read_text(encoding="utf-8")) if chapter else None
    if index is None and "text-match" in bots:
        bots.remove("text-match")
        print("note: the chapter's text was not found: the text-match bot is left out", file=sys.stderr)
    started = time.perf_counter()
    with SymbolicChecker() as checker, tempfile.TemporaryDirectory() as tmp:
        table = measure(bank, policy, args.stops, bots, args.students, args.cap, index, checker, Path(tmp))
    modes = sorted({policy.for_stop(s).mode for s in args.stops})
    print(f"policy: {', '.join(modes)}; median over {args.students} simulated students; cap {args.cap} attempts; "
          f"never* = impossible under the policy (a claim with no unseen question left)")
    print(render_table(table, bank, policy, args.cap, bots))
    misses = goals_met(table, bots)
    print(f"goals: {'met' if not misses else 'missed: ' + '; '.join(misses)} ({time.perf_counter() - started:.0f} s)")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())

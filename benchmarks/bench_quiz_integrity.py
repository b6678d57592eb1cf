"""How many attempts a student who does not understand the chapter needs to reach 100% (a script, not a test).

    python benchmarks/bench_quiz_integrity.py [--students 3] [--cap 60] [--stops 1 2 ...]
                                              [--bots always-a longest text-match elimination variant-memory
                                                      understanding]
                                              [--policy attempt_policy.yaml]

Bots take the quiz against the real engine and the server's own policy code,
in process: ``quiz_bank.instructor.server.quiz.QuizService`` on a temporary database,
the same calls the routes make (start an attempt, answer the next question,
read the verdict or, under mastery, the claims missed). A simulated clock
skips each cooldown. The bots:

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
- ``variant-memory``: ``elimination`` that also remembers each
  parametric *variant* (question and prompt): a small grid repeats a statement
  word for word a few attempts later, and then it answers from memory.
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
import sys
import tempfile
import time
from pathlib import Path

from ppo_course.syllabus import STOPS

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from quiz_integrity_bench.bots import BOTS, Bot, ChapterIndex, find_chapter, make_bot  # noqa: E402


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
    parser.add_argument("--stops", type=int, nargs="+", default=list(STOPS))
    parser.add_argument("--bots", nargs="+", choices=BOTS, default=list(BOTS))
    parser.add_argument("--policy", type=Path, default=None, help="attempt policy YAML (default: the course's)")
    parser.add_argument("--chapter", type=Path, default=None)
    parser.add_argument("--bank", type=Path, default=None)
    args = parser.parse_args(argv)

    from quiz_bank.instructor.server.policy import load_policy
    from quiz_bank.loader import load_bank
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

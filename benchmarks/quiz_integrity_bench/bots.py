"""The bots of ``benchmarks/bench_quiz_integrity.py``: students who do not understand the chapter, and one who does.

``make_bot(name, index)`` builds one of ``BOTS`` (see the benchmark's
docstring for what each does); ``ChapterIndex`` is the TF-IDF index over the
chapter's paragraphs that the ``text-match`` bot reads, and ``find_chapter``
finds the chapter's text. A bot sees what a student sees (the rendered
variant, and the verdict or the claims missed) and answers with the responses
format of ``quiz_bank.engine``.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHAPTER_NAME = "000_51c4e4947e0c3958.txt"
BOTS = ("always-a", "longest", "text-match", "elimination", "variant-memory", "understanding")
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

    @staticmethod
    def _key(variant) -> str | None:
        """What the memory is keyed by: a fixed question's id; None for a parametric one (not remembered)."""
        q = variant.question
        return None if q.is_parametric else q.id

    def answer(self, variant, service=None):
        q = variant.question
        candidates = self._candidates(variant)
        key = self._key(variant)
        if key is None or not candidates:
            return self._guess(variant)
        if q.is_parametric and key not in self.memory:  # a variant met for the first time: guessed, then remembered
            self.memory[key] = {"right": None, "wrong": set()}
            return self._guess(variant)
        known = self.memory.setdefault(key, {"right": None, "wrong": set()})
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
        key = self._key(variant)
        if key is None or verdict is None or key not in self.memory:
            return
        label_to_id = variant.label_to_id()
        values = given if isinstance(given, list) else str(given).split()
        ids = tuple(label_to_id.get(v, v) for v in values)
        if variant.question.type in ("single", "multi"):
            ids = tuple(sorted(ids))
        known = self.memory[key]
        if verdict:
            known["right"] = ids
        elif known["right"] != ids:
            known["wrong"].add(ids)


class VariantMemory(Elimination):
    """Elimination that also remembers parametric variants.

    A parametric question draws its parameters from a small grid (often one statement of 4-8), so the
    same variant (same question, same parameters, hence the same prompt) comes back a few attempts
    later: this bot keys its memory by the variant (question id and the prompt it showed) and answers a
    repeated variant from what the policy told about it before, exactly as ``elimination`` does for a
    fixed question; a variant it has not met is guessed.
    """

    @staticmethod
    def _key(variant) -> str:
        q = variant.question
        return q.id if not q.is_parametric else f"{q.id}\x1f{variant.prompt}"


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
    return {"always-a": AlwaysA, "longest": Longest, "elimination": Elimination, "variant-memory": VariantMemory,
            "understanding": Understanding}[name](name)


# ---------------------------------------------------------------- one simulated student

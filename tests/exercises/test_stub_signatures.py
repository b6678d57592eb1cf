"""`ppo_course.grading_kit.signatures.STUB_SIGNATURES` is the stubs' signatures, read from exercises/."""

from __future__ import annotations

from pathlib import Path

from ppo_course.grading_kit.signatures import STUB_SIGNATURES, signature_problems, stub_signatures

REPO = Path(__file__).resolve().parents[2]


def test_table_matches_the_stubs():
    stubs = {p.stem: stub_signatures(p.read_text(encoding="utf-8")) for p in sorted((REPO / "exercises").glob("ex*.py"))}
    assert stubs == STUB_SIGNATURES


def test_stubs_and_solutions_have_no_signature_problem():
    for folder in ("exercises", "solutions"):
        for p in sorted((REPO / folder).glob("ex*.py")):
            assert signature_problems(p.stem, p) == {}, p

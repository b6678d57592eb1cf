"""The synthetic class of ``benchmarks/grading_bench/scaling.py``: its students and its per-window arithmetic.

The figures are the benchmark's (they depend on the machine); this checks the pieces they are computed from,
on hand-made numbers.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from grading_bench import scaling  # noqa: E402


def test_cpu_at_takes_the_first_sample_with_k_students_finished():
    """Samples (finished, CPU-s): (0, 5.0) (1, 5.5) (3, 6.0) (3, 6.2) (7, 8.0): student 2 → 6.0, 7 → 8.0."""
    samples = [(0, 5.0), (1, 5.5), (3, 6.0), (3, 6.2), (7, 8.0)]
    assert scaling.cpu_at(samples, 2) == 6.0
    assert scaling.cpu_at(samples, 7) == 8.0
    with pytest.raises(ValueError):
        scaling.cpu_at(samples, 8)


def test_the_class_holds_the_cohort_and_every_catalogue_mistake(tmp_path):
    """16 cohort entries + one student per buggy module; replicated to 300 with unique ids."""
    cohort = ROOT / "examples" / "cohort" / "submissions"
    sources = scaling.originals(cohort, tmp_path / "w")
    n_bugs = len(list((ROOT / "tests" / "catalogue" / "buggy").glob("*.py")))
    n_cohort = len([p for p in cohort.iterdir() if not p.name.startswith(".")])
    assert len(sources) == n_cohort + n_bugs
    one = next(s for s in sources if s.name.startswith("m-ex4_gae-"))
    bug = one.name[len("m-"):].replace("-", "__", 1)
    assert (one / "ex4_gae.py").read_bytes() == (ROOT / "tests/catalogue/buggy" / f"{bug}.py").read_bytes()
    assert (one / "ex1_ratio.py").read_bytes() == (ROOT / "solutions" / "ex1_ratio.py").read_bytes()
    ids = scaling.replicate(sources, 300, tmp_path / "class")
    assert len(ids) == len(set(ids)) == 300
    assert len(list((tmp_path / "class").iterdir())) == 300


def test_growth_is_the_largest_rise_from_an_earlier_window_to_a_later_one():
    """Hand numbers: 0.02 → 0.008 → 0.0088 is a fall then a 10% rise (+10%); 0.01 → 0.012 → 0.009 rises 20%."""
    assert scaling.largest_growth({16: 0.02, 200: 0.008, 1000: 0.0088}) == pytest.approx(0.10)
    assert scaling.largest_growth({16: 0.01, 200: 0.012, 1000: 0.009}) == pytest.approx(0.20)
    assert scaling.largest_growth({16: 0.03, 200: 0.02, 1000: 0.01}) < 0

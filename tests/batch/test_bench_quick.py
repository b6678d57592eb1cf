"""`benchmarks/bench_grading.py --quick` runs end to end and prints every figure the contract names.

The figures themselves are goals for the benchmark, not for a unit test (they
depend on the machine and its load): this only checks that each required line
is printed once with a finite, positive number, and that the two consistency
checks the benchmark makes (the floor graded exactly what ppo-course graded,
every batch wrote the same gradebook) hold.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Line prefixes → the number that must follow (CONTRACT.md names the first two).
REQUIRED = {
    "ratio ppo-course/floor:": r"ratio ppo-course/floor: ([^\s(]+)",
    "ratio nbgrader/ppo-course per submission (CPU):": r"ratio nbgrader/ppo-course per submission \(CPU\): ([^\s(]+)",
    "throughput --jobs 2 / --jobs 1:": r"throughput --jobs 2 / --jobs 1: ([^\s(]+)",
    "peak memory at --jobs 2:": r"peak memory at --jobs 2: ([^\s(]+) GB PSS",
    "ppo-course grade-batch --jobs 1:": r"ppo-course grade-batch --jobs 1: ([^\s(]+) CPU-s and ([^\s(]+) s wall",
    "ppo-course grade-batch --jobs 2:": r"ppo-course grade-batch --jobs 2: ([^\s(]+) CPU-s and ([^\s(]+) s wall",
    "floor (same tests": r"floor \(same tests, one warm process, trusted modules, no sandbox\): ([^\s(]+) CPU-s",
}


@pytest.mark.slow
def test_quick_benchmark_prints_every_figure():
    """--quick (two students, fast profile): each required line once, numbers finite and > 0."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_grading.py"), "--quick"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    for prefix, pattern in REQUIRED.items():
        found = [line for line in lines if line.startswith(prefix)]
        assert len(found) == 1, f"{prefix!r} printed {len(found)} times:\n{proc.stdout}"
        match = re.match(pattern, found[0])
        assert match, f"{found[0]!r} does not match {pattern!r}"
        for text in match.groups():
            value = float(text)
            assert math.isfinite(value) and value > 0, f"{found[0]!r}: {text} is not a finite positive number"
    assert "floor scores equal ppo-course's: True" in lines, proc.stdout
    assert "gradebooks of every batch run identical: True" in lines, proc.stdout

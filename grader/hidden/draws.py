"""Hidden inputs drawn from the grader's own secret, so that a submission cannot tell a hidden call from a public one.

The public tests (``ppo_course/public_tests/``, shipped to students) use fixed,
visible payloads. Hidden tests draw ALL their inputs (the hypothesis seed of
every ``@given`` test, every generator seed, the numbers of hand-built cases,
exercise 5's graph probe; issue 19, class 5) from HMAC-SHA256(key, label), key = SHA-256(secret ‖ grader_version): the secret
lives in ``grader/hidden/grader_secret.txt`` (instructor side: never in the
public package or the student bundle, ``grader.platforms.release``), so the draws are
unknown to students, yet deterministic for one grader version (the same
submission gets the same grade on every run and machine) and change with the
version. Issue 10, class 2.
"""

from __future__ import annotations

import hashlib
import hmac
from functools import lru_cache
from pathlib import Path

SECRET_FILE = Path(__file__).with_name("grader_secret.txt")


@lru_cache(maxsize=1)
def _key() -> bytes:
    """SHA-256 of the secret file's bytes and the grader version (grader/points.yaml).

    Raises:
        FileNotFoundError: the secret file is missing (a grader install without it cannot grade).
    """
    from grader.points import load_points

    secret = SECRET_FILE.read_bytes().strip()
    if len(secret) < 16:
        raise ValueError(f"{SECRET_FILE}: the grader secret is too short (< 16 bytes)")
    version = load_points().grader_version.encode("utf-8")
    return hashlib.sha256(secret + b"\0" + version).digest()


def draw_int(label: str, low: int, high: int) -> int:
    """An integer in [low, high] for `label` (e.g. "ex7.default.seed"), fixed per grader version.

    Raises:
        ValueError: if high < low.
    """
    if high < low:
        raise ValueError(f"draw_int({label!r}): empty range [{low}, {high}]")
    digest = hmac.new(_key(), label.encode("utf-8"), hashlib.sha256).digest()
    return low + int.from_bytes(digest[:8], "big") % (high - low + 1)


def draw_choice(label: str, options: tuple):
    """One of `options` for `label`, fixed per grader version."""
    return options[draw_int(label, 0, len(options) - 1)]


def draw_seed(label: str) -> int:
    """A generator seed in [0, 2**31 - 1] for `label` (e.g. "ex4.no_bootstrap"), fixed per grader version."""
    return draw_int(f"{label}.seed", 0, 2**31 - 1)


def draw_generator(label: str):
    """A CPU ``torch.Generator`` seeded with :func:`draw_seed` (`label`): a hidden test's tensors, drawn."""
    import torch

    return torch.Generator().manual_seed(draw_seed(label))


def draw_float(label: str, low: float, high: float, steps: int = 1000) -> float:
    """One of ``steps + 1`` evenly spaced floats in [low, high] for `label` (a hand case's number, drawn).

    Raises:
        ValueError: if high < low or steps < 1.
    """
    if high < low or steps < 1:
        raise ValueError(f"draw_float({label!r}): empty range [{low}, {high}] or steps {steps}")
    return low + (high - low) * draw_int(label, 0, steps) / steps


def hypothesis_seed(module: str, qualname: str) -> int:
    """The seed of a hidden ``@given`` test's examples: drawn per test from the secret and ``grader_version``.

    Hypothesis' derandomised seed is the test function's digest, the same in every version and public in
    effect (the source is all it takes); this one changes with the secret and the version, and is the same
    on every run of one version (`grader/hidden/conftest.py` sets it, `hypothesis_replay` records with it).
    """
    return draw_int(f"hypothesis.{module}.{qualname}", 0, 2**64 - 1)

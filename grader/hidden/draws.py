"""Hidden inputs drawn from the course's grader secret, so that a submission cannot tell a hidden call from a public one.

The public tests (``ppo_course/public_tests/``, shipped to students) use fixed,
visible payloads. Hidden tests draw ALL their inputs (the hypothesis seed of
every ``@given`` test, every generator seed, the numbers of hand-built cases,
exercise 5's graph probe) from HMAC-SHA256(key, label), key = SHA-256(secret ‖ grader_version):
the secret is the course's own (``grader.course_secret``: a file outside the
repository, the package and the student bundle, made per course), so the draws
are unknown to students and differ between courses, yet deterministic for one
secret and grader version (the same submission gets the same grade on every run
and machine) and change with either.
"""

from __future__ import annotations

import hashlib
import hmac
from functools import lru_cache

from grader.course_secret import load_secret, secret_path


def draws_key() -> bytes:
    """The draws' key: SHA-256 of the course's secret and the grader version (``grader/points.yaml``).

    Read once per process and secret file (a grading never sees its key change halfway).

    Raises:
        grader.course_secret.GraderSecretError: no usable secret (a grader fault: nothing may be graded).
    """
    return _key()


def forget_key() -> None:
    """Read the secret again at the next draw (a process that rotated or switched its secret file)."""
    _key_of.cache_clear()


def _key() -> bytes:
    return _key_of(str(secret_path()))


@lru_cache(maxsize=4)
def _key_of(path: str) -> bytes:
    from grader.points import load_points

    secret = load_secret(path)
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

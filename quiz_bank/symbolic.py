"""Symbolic equivalence of two expressions, decided in a worker process under a time limit.

The response is first checked in the calling process by
:func:`quiz_bank.parsing.parse_expression_ast` (cheap, nothing evaluated), so
hostile or malformed input is reported as unparseable without ever reaching
sympy. Well-formed responses go to a long-lived worker subprocess (one per
:class:`SymbolicChecker`, reused across questions and students so that a batch
pays sympy's import once); each check has a wall-clock limit, and a worker that
overruns is killed and replaced, the check being reported as undecided.

Equivalence: the two are probed numerically at fixed pseudo-random points
(symbols drawn in [0.3, 2.5], positive so that logs are real); any clear
disagreement means "different", and so does a response that is undefined
(NaN or infinite: ``0/0``, ``a/0``, ``0*log(0)``) or beyond a double's range
at a point where the key is a finite number: a probe agrees only when
``|expected − given|`` is within its bound, never because a comparison with NaN
is false. Agreement at every probe point is "equivalent" (it always was: simplify
could only confirm it, e.g. not for log identities it will not apply), so
``sympy.simplify`` runs only in the case no probe decides, and one check costs
milliseconds whatever a student types: the checker is shared by every student
of a server, one check at a time.
"""

from __future__ import annotations

import ast
import cmath
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass

from quiz_bank.parsing import Unparseable, parse_expression_ast

DEFAULT_TIMEOUT_S = 5.0
_N_PROBES = 6


@dataclass(frozen=True)
class Verdict:
    """Outcome of one check: ``status`` is equivalent | different | unparseable | undecided."""

    status: str
    detail: str = ""


def _is_exp_call(node: ast.AST) -> bool:
    """``exp(...)`` or a power of it (``exp(b)**-1``)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _is_exp_call(node.left)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "exp"


def _factors(node: ast.AST, inverted: bool = False) -> list[tuple[ast.AST, bool]]:
    """The factors of a product/quotient chain, each with whether it divides."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        return _factors(node.left, inverted) + _factors(node.right, inverted ^ isinstance(node.op, ast.Div))
    return [(node, inverted)]


def unstable_exp_ratio(tree: ast.AST) -> bool:
    """True when ``tree`` divides (or multiplies) two exponentials, e.g. ``exp(a)/exp(b)``, ``2*exp(a)/exp(b)``.

    Mathematically equal to ``exp(a - b)``, but the form eq. 5.20 exists to avoid: for
    log-probabilities of a long response both exponentials underflow (float32: exp(−120)
    is 0) and the quotient is 0/0 = NaN (Book §5.7.1–5.7.5, p. 146–148). A structural
    test on the parsed tree (any product/quotient chain with two or more ``exp`` factors),
    independent of numeric equivalence.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            if sum(_is_exp_call(f) for f, _ in _factors(node)) >= 2:
                return True
    return False


def decide(expected: str, given: str, symbols: list[str]) -> Verdict:
    """Decide equivalence in *this* process (the worker's body; call via :class:`SymbolicChecker`).

    Raises nothing: parse failures become ``Verdict("unparseable", reason)``. A response
    that divides or multiplies two exponentials where the key does not
    (:func:`unstable_exp_ratio`) is ``different``: numerically unstable, whatever sympy says.
    The work is bounded by the probes (:func:`_probe`): ``sympy.simplify`` runs only when no
    probe point could compare the two, so no well-formed response holds the checker for seconds.
    """
    import sympy as sp

    from quiz_bank.parsing import to_sympy

    names = set(symbols)
    try:
        given_tree = parse_expression_ast(given, names)
    except Unparseable as exc:
        return Verdict("unparseable", str(exc))
    expected_tree = parse_expression_ast(expected, names)
    if unstable_exp_ratio(given_tree) and not unstable_exp_ratio(expected_tree):
        return Verdict("different", "divides exponentials: the numerically unstable form; take exp of a difference (eq. 5.20)")
    expected_expr = to_sympy(expected_tree, names)
    given_expr = to_sympy(given_tree, names)
    verdict = _probe(expected_expr, given_expr)
    if verdict is not None:
        return verdict
    if sp.simplify(expected_expr - given_expr) == 0:
        return Verdict("equivalent", "sympy: expected − given simplifies to 0")
    return Verdict("different", "no probe point where both are defined, and sympy cannot show them equal")


def _float_value(function, values: list[float]) -> float | None:
    """``function(*values)`` in IEEE double arithmetic (``math``), or None when it overflows, leaves the real domain
    or divides by zero (microseconds, whatever the expression: a double cannot hold a tower of exponentials)."""
    try:
        value = complex(function(*values))
    except (OverflowError, ValueError, ZeroDivisionError, TypeError):
        return None
    return value.real if cmath.isfinite(value) and value.imag == 0 else None


def _probe(expected_expr, given_expr) -> Verdict | None:
    """The verdict of the fixed probe points, or None when no point could compare the two (the key undefined at all).

    At each point (symbols drawn in [0.3, 2.5]) both are first evaluated in doubles: a response whose value
    overflows a double, is complex or undefined where the key's is a finite real number is ``different`` at once
    (sympy's 30-digit evaluation of ``exp(exp(exp(exp(p)*q)))`` ran for minutes). Then 30-digit values must agree
    within 1e-9 relative: NaN-safe, a probe agrees only when the difference is within that bound. Agreement at
    every point where the key is defined is ``equivalent`` (sympy's simplify would only restate it).
    """
    import random

    import sympy as sp

    free = sorted(expected_expr.free_symbols | given_expr.free_symbols, key=str)
    want_f, got_f = (sp.lambdify(free, e, modules="math") for e in (expected_expr, given_expr))
    rng = random.Random(20170720)  # fixed probe points: a verdict never depends on the run
    agreed = 0
    for _ in range(_N_PROBES):
        point = {s: sp.Rational(rng.randint(30, 250), 100) for s in free}
        shown = ", ".join(f"{k}={v}" for k, v in point.items()) or "every point"
        values = [float(point[s]) for s in free]
        if _float_value(want_f, values) is None:
            continue  # the key itself is undefined here: this point decides nothing
        if _float_value(got_f, values) is None:
            return Verdict("different", f"not a finite real number at {shown} (a division by zero, the log of 0 or "
                                        "a value beyond a double's range)")
        want = complex(sp.N(expected_expr.subs(point), 30))
        got = complex(sp.N(given_expr.subs(point), 30))
        if not abs(want - got) <= 1e-9 * (1.0 + abs(want)):  # NaN-safe: only a difference within it agrees
            return Verdict("different", f"differs at {shown}: expected {want.real:.6g}, got {got.real:.6g}")
        agreed += 1
    return Verdict("equivalent", f"equal at {agreed} probe points") if agreed else None


def serve() -> None:
    """Worker loop: one JSON request per stdin line → one JSON verdict per stdout line."""
    for line in sys.stdin:
        try:
            request = json.loads(line)
            verdict = decide(request["expected"], request["given"], request["symbols"])
        except Exception as exc:  # noqa: BLE001 - the worker must answer every request
            verdict = Verdict("undecided", f"checker error: {type(exc).__name__}: {exc}")
        sys.stdout.write(json.dumps({"status": verdict.status, "detail": verdict.detail}) + "\n")
        sys.stdout.flush()


class SymbolicChecker:
    """A reusable worker that checks expressions for sympy equivalence under a time limit.

    Use as a context manager (the worker is started lazily and stopped on exit)::

        with SymbolicChecker() as checker:
            checker.check("exp(a - b)", "exp(a)/exp(b)", ["a", "b"])  # Verdict("equivalent", ...)

    Args:
        timeout_s: wall-clock seconds allowed per check (sympy can hang on
            adversarial but well-formed input); an overrun kills the worker and
            returns ``Verdict("undecided", ...)``.
    """

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen | None = None
        self._warm = False  # the first check of a worker also pays for importing sympy

    def __enter__(self) -> "SymbolicChecker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> subprocess.Popen:
        package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        code = f"import sys; sys.path.insert(0, {package_parent!r}); from quiz_bank.symbolic import serve; serve()"
        return subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )

    def close(self) -> None:
        """Stop the worker (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                proc.stdin.close()
                proc.wait(timeout=2)
            except Exception:  # noqa: BLE001 - a stuck worker is killed below
                pass
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def check(self, expected: str, given: str, symbols: list[str]) -> Verdict:
        """Is ``given`` equivalent to ``expected`` over ``symbols``?

        Unparseable or hostile input is rejected here, before any subprocess or
        sympy sees it. Returns a :class:`Verdict`; never raises for bad input.
        """
        try:
            parse_expression_ast(given, set(symbols))
        except Unparseable as exc:
            return Verdict("unparseable", str(exc))
        if self._proc is None or self._proc.poll() is not None:
            self._proc, self._warm = self._start(), False
        request = json.dumps({"expected": expected, "given": given, "symbols": list(symbols)})
        try:
            self._proc.stdin.write(request + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            self.close()
            return Verdict("undecided", "the equivalence checker stopped unexpectedly")
        deadline = time.monotonic() + self.timeout_s
        if not self._warm:
            deadline += 10.0  # start-up grace, not a longer limit for the check itself
        while True:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self._proc.stdout], [], [], max(remaining, 0))
            if ready:
                line = self._proc.stdout.readline()
                if not line:
                    self.close()
                    return Verdict("undecided", "the equivalence checker stopped unexpectedly")
                self._warm = True
                reply = json.loads(line)
                return Verdict(reply["status"], reply.get("detail", ""))
            if remaining <= 0:
                self.close()
                self._warm = False
                return Verdict("undecided", f"could not decide within {self.timeout_s:g} s")


if __name__ == "__main__":  # pragma: no cover - the worker entry point
    serve()

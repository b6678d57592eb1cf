"""Safe parsing of numeric and symbolic responses (no eval, no sympify).

``sympy.sympify`` and ``parse_expr`` call ``eval``, so a response such as
``__import__('os').system(...)`` would run. Here a response is parsed with
Python's ``ast`` into a tree that is checked against a whitelist of node types,
symbol names, function names and sizes *before* anything is built from it. A
response that fails the whitelist raises :class:`Unparseable` (reported to the
student as unparseable, never as wrong).
"""

from __future__ import annotations

import ast
import math
from fractions import Fraction

MAX_CHARS = 300
MAX_NODES = 120
MAX_DEPTH = 30
# A literal exponent beyond this is rejected unevaluated: 9**9**9 would hang
# sympy (and the interpreter); no answer in the bank needs more than squares.
MAX_EXPONENT = 64
MAX_LITERAL = 1e12
# The numeric parser evaluates exactly: a power beyond this many bits is refused (a float stops near 2**1024).
MAX_POWER_BITS = 1 << 14

FUNCTIONS = frozenset({"exp", "log", "sqrt", "Abs", "abs", "min", "max", "Min", "Max", "clip"})
CONSTANTS = frozenset({"pi", "E"})

_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_UNARY = (ast.UAdd, ast.USub)


class Unparseable(ValueError):
    """A response that is not a well-formed, allowed expression (message says why)."""


def _normalise(text: str) -> str:
    # Students type what the book prints: "−" (U+2212), "×", "·", "^".
    return (
        text.strip()
        .replace("\u2212", "-")
        .replace("\u00d7", "*")
        .replace("\u00b7", "*")
        .replace("\u22c5", "*")
        # "^" is XOR in Python and binds looser than "*": 1.5*10^-6 must mean 1.5e-6.
        .replace("^", "**")
    )


def _parse_tree(text: str) -> ast.Expression:
    if not isinstance(text, str):
        raise Unparseable(f"expected text, got {type(text).__name__}")
    text = _normalise(text)
    if not text:
        raise Unparseable("empty answer")
    if len(text) > MAX_CHARS:
        raise Unparseable(f"answer longer than {MAX_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        hint = " (write products with *, e.g. 2*a)" if "invalid syntax" in str(exc) else ""
        raise Unparseable(f"not an expression: {exc.msg}{hint}") from None
    except (RecursionError, MemoryError, ValueError) as exc:  # deep nesting, NUL bytes
        raise Unparseable(f"not an expression: {type(exc).__name__}") from None
    n_nodes = sum(1 for _ in ast.walk(tree))
    if n_nodes > MAX_NODES:
        raise Unparseable(f"expression too large ({n_nodes} nodes > {MAX_NODES})")
    return tree


def _literal(node: ast.AST) -> float | None:
    """The value of a (possibly signed, nested) numeric literal, or None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, _UNARY):
        inner = _literal(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    return None


def _exponent_value(node: ast.AST) -> float | None:
    """The value of an exponent made of numbers only (``64``, ``-2``, ``8*8``), or None when it has a name or call.

    Evaluated by :func:`_exact_value`, which refuses huge intermediates, so ``9**(64*64*64*64)`` is caught here
    before sympy (which evaluates integer powers eagerly) or the numeric parser sees it.
    """
    literal = _literal(node)
    if literal is not None:
        return literal
    if any(isinstance(n, (ast.Name, ast.Call)) or not isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator,
                                                                       ast.unaryop)) for n in ast.walk(node)):
        return None
    try:
        return float(_exact_value(node))
    except (OverflowError, ValueError, ZeroDivisionError, TypeError):
        return float("inf")  # not a usable exponent: refused as too large


def _stacked_exponent(node: ast.AST) -> float:
    """The product of the literal exponents of a chain of powers of powers, ``((x**a)**b)**c`` → |a·b·c|
    (signs and parentheses on the left skipped; a non-literal exponent counts as 1, towers are refused apart)."""
    total = 1.0
    while True:
        while isinstance(node, ast.UnaryOp) and isinstance(node.op, _UNARY):
            node = node.operand
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)):
            return total
        exponent = _exponent_value(node.right)
        total *= abs(exponent) if exponent is not None else 1.0
        node = node.left


def _check(node: ast.AST, symbols: set[str], depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise Unparseable("expression nested too deeply")
    if isinstance(node, ast.Expression):
        return _check(node.body, symbols, depth + 1)
    if isinstance(node, ast.Constant):
        if type(node.value) not in (int, float):
            raise Unparseable(f"only numbers are allowed as literals, not {node.value!r}")
        if abs(node.value) > MAX_LITERAL:
            raise Unparseable(f"number {node.value!r} is implausibly large")
        return None
    if isinstance(node, ast.Name):
        if node.id in symbols or node.id in CONSTANTS:
            return None
        if node.id in FUNCTIONS:
            raise Unparseable(f"{node.id} is a function: write {node.id}(...)")
        if not symbols:  # a number question: say what is expected, not that no symbol is allowed
            raise Unparseable(f"{node.id!r} is not a number: give a number or an expression of numbers "
                              "(0.5, 1/2, exp(-1))")
        raise Unparseable(f"unknown name {node.id!r} (allowed symbols: {', '.join(sorted(symbols))})")
    if isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, _UNARY):
            raise Unparseable(f"operator {type(node.op).__name__} is not allowed")
        return _check(node.operand, symbols, depth + 1)
    if isinstance(node, ast.BinOp):
        if not isinstance(node.op, _BINOPS):
            raise Unparseable(f"operator {type(node.op).__name__} is not allowed")
        if isinstance(node.op, ast.Pow):
            # Check the exponent before anything can be evaluated.
            exponent = _exponent_value(node.right)
            if exponent is not None and abs(exponent) > MAX_EXPONENT:
                raise Unparseable(f"exponent {exponent:g} is too large (limit {MAX_EXPONENT})")
            # (9**64)**64 nests to 9**4096: the exponents multiply, and four levels pin the interpreter for minutes.
            if _stacked_exponent(node) > MAX_EXPONENT:
                raise Unparseable(f"powers of powers multiply their exponents beyond {MAX_EXPONENT}")
            if exponent is None and isinstance(node.right, ast.BinOp) and isinstance(node.right.op, ast.Pow):
                raise Unparseable("towers of powers (a**b**c) are not allowed")
        _check(node.left, symbols, depth + 1)
        return _check(node.right, symbols, depth + 1)
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            name = node.func.id if isinstance(node.func, ast.Name) else type(node.func).__name__
            raise Unparseable(f"function {name!r} is not allowed (allowed: {', '.join(sorted(FUNCTIONS))})")
        if node.keywords:
            raise Unparseable("keyword arguments are not allowed")
        n_args = len(node.args)
        want = {"clip": (3, 3), "min": (2, 8), "max": (2, 8), "Min": (2, 8), "Max": (2, 8)}.get(node.func.id, (1, 1))
        if not want[0] <= n_args <= want[1]:
            raise Unparseable(f"{node.func.id} takes {want[0]}" + ("" if want[0] == want[1] else f"–{want[1]}") + " argument(s)")
        for arg in node.args:
            _check(arg, symbols, depth + 1)
        return None
    raise Unparseable(f"{type(node).__name__} is not allowed in an answer")


def parse_expression_ast(text: str, symbols: set[str]) -> ast.Expression:
    """Parse ``text`` into a whitelisted expression tree over ``symbols``.

    Allowed: numbers, the names in ``symbols``, ``pi``, ``E``, + − * / ** (``^``
    is read as power), and the functions in :data:`FUNCTIONS`. Nothing is evaluated.

    Raises:
        Unparseable: with the reason, for anything else (syntax errors, other
            names, attributes, subscripts, strings, lambdas, huge exponents...).
    """
    tree = _parse_tree(text)
    _check(tree, symbols)
    return tree


def to_sympy(tree: ast.Expression, symbols: set[str]):
    """Build the sympy expression of a tree accepted by :func:`parse_expression_ast`.

    Only sympy constructors are called (no ``eval``); ``clip(x, lo, hi)`` becomes
    ``Min(Max(x, lo), hi)``. Symbols are real (probabilities, ratios, advantages).
    """
    import sympy as sp

    syms = {name: sp.Symbol(name, real=True) for name in symbols}
    functions = {
        "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt, "Abs": sp.Abs, "abs": sp.Abs,
        "min": sp.Min, "Min": sp.Min, "max": sp.Max, "Max": sp.Max,
        "clip": lambda x, lo, hi: sp.Min(sp.Max(x, lo), hi),
    }
    constants = {"pi": sp.pi, "E": sp.E}

    def build(node: ast.AST):
        if isinstance(node, ast.Expression):
            return build(node.body)
        if isinstance(node, ast.Constant):
            # Floats through their decimal text, so 0.1 is exactly 1/10.
            return sp.Integer(node.value) if type(node.value) is int else sp.Rational(repr(node.value))
        if isinstance(node, ast.Name):
            return syms[node.id] if node.id in syms else constants[node.id]
        if isinstance(node, ast.UnaryOp):
            value = build(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            left, right = build(node.left), build(node.right)
            op = node.op
            if isinstance(op, ast.Add):
                return left + right
            if isinstance(op, ast.Sub):
                return left - right
            if isinstance(op, ast.Mult):
                return left * right
            if isinstance(op, ast.Div):
                return left / right
            return left**right
        if isinstance(node, ast.Call):
            return functions[node.func.id](*[build(a) for a in node.args])
        raise Unparseable(f"{type(node).__name__} is not allowed")  # unreachable after _check

    return build(tree)


def _exact_value(node: ast.AST) -> Fraction:
    """The exact value of a literal arithmetic tree (numbers, + − * /, powers) checked by ``parse_number``.

    Raises:
        Unparseable: a division by zero (a zero to a negative power included).
    """
    if isinstance(node, ast.Expression):
        return _exact_value(node.body)
    if isinstance(node, ast.Constant):
        return Fraction(repr(node.value)) if isinstance(node.value, float) else Fraction(node.value)
    if isinstance(node, ast.UnaryOp):
        return -_exact_value(node.operand) if isinstance(node.op, ast.USub) else _exact_value(node.operand)
    left, right = _exact_value(node.left), _exact_value(node.right)
    if isinstance(node.op, ast.Add):
        return left + right
    if isinstance(node.op, ast.Sub):
        return left - right
    if isinstance(node.op, ast.Mult):
        return left * right
    if isinstance(node.op, ast.Div):
        if right == 0:
            raise Unparseable("division by zero")
        return left / right
    if right.denominator != 1:
        return Fraction(float(left) ** float(right))
    if left == 0 and right < 0:
        raise Unparseable("division by zero")
    size = max(left.numerator.bit_length(), left.denominator.bit_length())
    if size > 1 and abs(int(right)) * size > MAX_POWER_BITS:  # 9**(64*64*64*64) would run for minutes
        raise Unparseable(f"a power too large to evaluate (over {MAX_POWER_BITS} bits)")
    return left ** int(right)


def parse_number(value: object) -> float:
    """A numeric response as a float: 0.2, "0.2", "1/5", "2e-1", "20%", "1.5×10^-6", "65K".

    Arithmetic of literals (+ − * / and small powers) is evaluated exactly with
    ``fractions.Fraction`` on the whitelisted tree; no names are allowed.

    Raises:
        Unparseable: booleans, names, non-finite values or malformed text.
    """
    if isinstance(value, bool):
        raise Unparseable("true/false is not a number")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise Unparseable(f"{value!r} is not a finite number")
        return float(value)
    if not isinstance(value, str):
        raise Unparseable(f"expected a number, got {type(value).__name__}")
    text = _normalise(value)
    percent = text.endswith("%")
    if percent:
        text = text[:-1]
    # The chapter writes "65K transitions" and "10K steps": accept a K/M suffix on a plain number.
    scale = 1
    if text[-1:] in ("K", "k", "M") and text[:-1].replace(".", "", 1).isdigit():
        scale, text = (1000 if text[-1] in "Kk" else 1_000_000), text[:-1]
    tree = parse_expression_ast(text, set())
    if any(isinstance(n, (ast.Name, ast.Call)) for n in ast.walk(tree)):
        raise Unparseable("a numeric answer may only contain numbers and + - * / ^")

    try:
        number = float(_exact_value(tree))
    except (OverflowError, ValueError, ZeroDivisionError, TypeError) as exc:
        if isinstance(exc, Unparseable):
            raise
        raise Unparseable(f"cannot evaluate {value!r} as a number: {exc}") from None
    if not math.isfinite(number):
        raise Unparseable(f"{value!r} is not a finite number")
    number *= scale
    return number / 100.0 if percent else number

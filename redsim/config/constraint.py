"""Sweep constraints: a small, bounded expression language over a grid point's
axis values (``constraint:`` in a sweep file).

A constraint is a small expression over the point's axis values, evaluated once
per grid point: its cost must not depend on what the user writes. So it is not
handed to Python's eval (where `9 ** 9 ** 9` runs for ever and `[0] * 10 ** 10`
allocates 80 GB) but walked node by node here, with every intermediate number
bounded, and only a fixed grammar accepted when the file is loaded.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from typing import Any

from redsim.config.errors import show

MAX_CONSTRAINT_CHARS = 500
"""Longest constraint, in characters (a few comparisons fit in 100)."""
MAX_CONSTRAINT_DEPTH = 32
"""Deepest nesting of operators in a constraint (``not not ... x`` counts each)."""
MAX_MAGNITUDE = 1e300
"""Largest magnitude of any number in a constraint, written or computed: a float
reaches 1.8e308, and an integer past this has over 300 digits, which no axis
value (seconds, bytes, counts) comes near."""
MAX_STRING_CHARS = 200
"""Longest string constant (compared with a string axis such as ``appendfsync``)."""
MAX_IN_ITEMS = 100
"""Most items in the literal list of an ``in`` / ``not in`` test."""

CONSTRAINT_GRAMMAR = (
    "an expression over axis names and numbers: + - * / // % **, comparisons "
    "(< <= > >= == !=), and/or/not, parentheses, 'string' constants compared with "
    "== or !=, and `name in (1, 2, 'a')`")

_ARITH = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
          ast.Mod: "%", ast.Pow: "**"}
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
        ast.GtE: ">=", ast.In: "in", ast.NotIn: "not in"}


class ConstraintError(ValueError):
    """A constraint that cannot be evaluated at a point (division by zero, a
    result beyond ``MAX_MAGNITUDE``, arithmetic on a string); the message says
    which, and the sweep reports it with the file, the constraint and the point."""


def _is_number(v: Any) -> bool:
    # bool counts: `aof + 1` is as harmless as in Python, and `not aof` needs no number.
    return isinstance(v, (int, float))


def _constant_problem(value: Any) -> str | None:
    """Why a written constant is refused, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if not abs(value) <= MAX_MAGNITUDE:  # also catches 1e999 (inf) and nan
            return f"a number of magnitude at most {MAX_MAGNITUDE:g}"
        return None
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            return f"a string of at most {MAX_STRING_CHARS} characters"
        return None
    return "numbers, true/false and 'strings' only"


def check_constraint(tree: ast.Expression, names: set[str]) -> tuple[str, str] | None:
    """What in a parsed constraint is outside the grammar, or None when all is allowed.

    Bounds the cost of evaluating it: no calls, attributes, subscripts, strings
    in arithmetic or sequences but the written list after ``in``; constants of
    magnitude at most ``MAX_MAGNITUDE``; at most ``MAX_CONSTRAINT_DEPTH`` levels.

    Returns:
        (what was expected, what was found: a short description of the piece,
        or an unknown name as written) or None.
    """
    idents = {_ident(n) for n in names}

    def walk(node: ast.AST, depth: int, in_arith: bool) -> tuple[str, str] | None:
        if depth > MAX_CONSTRAINT_DEPTH:
            return (f"at most {MAX_CONSTRAINT_DEPTH} nested operators",
                    "a deeper expression")
        if isinstance(node, ast.Expression):
            return walk(node.body, depth, in_arith)
        if isinstance(node, ast.Name):
            if node.id not in idents:
                return ("axis names only: " + ", ".join(sorted(names)), node.id)
            return None
        if isinstance(node, ast.Constant):
            problem = _constant_problem(node.value)
            if problem:
                return (problem, show(node.value))
            if in_arith and isinstance(node.value, str):
                return ("strings only in == / != comparisons (no string arithmetic)",
                        show(node.value))
            return None
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                bad = walk(v, depth + 1, False)
                if bad:
                    return bad
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub,
                                                                   ast.UAdd)):
            return walk(node.operand, depth + 1, not isinstance(node.op, ast.Not))
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            return walk(node.left, depth + 1, True) or walk(node.right, depth + 1, True)
        if isinstance(node, ast.Compare) and all(type(op) in _CMP for op in node.ops):
            bad = walk(node.left, depth + 1, False)
            if bad:
                return bad
            for op, right in zip(node.ops, node.comparators, strict=True):
                if isinstance(op, (ast.In, ast.NotIn)):
                    if not isinstance(right, (ast.Tuple, ast.List)) or not all(
                            isinstance(e, ast.Constant) for e in right.elts):
                        return ("`in` followed by a written list of constants, "
                                "like (1, 2) or ('no', 'always')",
                                type(right).__name__)
                    if len(right.elts) > MAX_IN_ITEMS:
                        return (f"at most {MAX_IN_ITEMS} items after `in`",
                                f"{len(right.elts)} items")
                    for e in right.elts:
                        bad = walk(e, depth + 1, False)
                        if bad:
                            return bad
                    continue
                bad = walk(right, depth + 1, False)
                if bad:
                    return bad
            return None
        what = type(node).__name__
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            what = f"the operator {type(node.op).__name__}"
        return (CONSTRAINT_GRAMMAR, what)

    return walk(tree, 0, False)


def _ident(name: str) -> str:
    return name.replace("-", "_")


def _pythonise(expr: str, names: set[str]) -> str:
    """Axis names may contain '-'; expressions see them with '_'."""
    for n in sorted(names, key=len, reverse=True):
        if "-" in n:
            expr = expr.replace(n, _ident(n))
    return expr


def _bounded(x: Any, left: Any, right: Any, op: str) -> Any:
    """``x``, or a ConstraintError when it is beyond ``MAX_MAGNITUDE`` (an
    infinite operand, e.g. a value that means "never", may give an infinite
    result: that is the value, not an overflow)."""
    if _is_number(x) and abs(x) > MAX_MAGNITUDE and not any(
            isinstance(v, float) and math.isinf(v) for v in (left, right)):
        raise ConstraintError(f"{show(left)} {op} {show(right)} is beyond "
                              f"{MAX_MAGNITUDE:g}")
    return x


def _power(a: float, b: float) -> float:
    """``a ** b`` when its magnitude is at most MAX_MAGNITUDE; checked before it
    is computed, so ``9 ** 9 ** 9`` costs a logarithm, not hours."""
    if a == 0:
        if b < 0:
            raise ConstraintError(f"0 ** {show(b)} divides by zero")
        return 0 ** b
    if a < 0 and isinstance(b, float) and not b.is_integer():
        raise ConstraintError(f"{show(a)} ** {show(b)} has no real value")
    if math.isfinite(a) and math.isfinite(b) and \
            b * math.log10(abs(a)) > math.log10(MAX_MAGNITUDE):
        raise ConstraintError(f"{show(a)} ** {show(b)} is beyond {MAX_MAGNITUDE:g}")
    try:
        return a ** b
    except (OverflowError, ZeroDivisionError) as exc:  # float pow at the edges
        raise ConstraintError(f"{show(a)} ** {show(b)}: {exc}") from None


def _arith(op: type, a: Any, b: Any) -> Any:
    sym = _ARITH[op]
    if not (_is_number(a) and _is_number(b)):
        raise ConstraintError(f"{sym} takes numbers, found {show(a)} {sym} {show(b)}")
    if op in (ast.Div, ast.FloorDiv, ast.Mod) and b == 0:
        raise ConstraintError(f"{show(a)} {sym} {show(b)} divides by zero")
    try:
        if op is ast.Pow:
            x = _power(a, b)
        elif op is ast.Add:
            x = a + b
        elif op is ast.Sub:
            x = a - b
        elif op is ast.Mult:
            x = a * b  # both at most 1e300: the product has at most ~600 digits
        elif op is ast.Div:
            x = a / b
        elif op is ast.FloorDiv:
            x = a // b
        else:
            x = a % b
    except OverflowError:  # int / int past a float's range
        raise ConstraintError(f"{show(a)} {sym} {show(b)} overflows") from None
    return _bounded(x, a, b, sym)


def _compare(op: type, a: Any, b: Any) -> bool:
    if op is ast.Eq:
        return bool(a == b)
    if op is ast.NotEq:
        return bool(a != b)
    if op in (ast.In, ast.NotIn):
        found = any(a == item for item in b)
        return found if op is ast.In else not found
    if not ((_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str))):
        raise ConstraintError(f"{_CMP[op]} compares two numbers or two strings, found "
                              f"{show(a)} {_CMP[op]} {show(b)}")
    return bool(_ORDER[op](a, b))


_ORDER = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
          ast.GtE: operator.ge}


def _evaluate(node: ast.AST, env: dict[str, Any]) -> Any:
    """Walk a checked constraint tree; every step costs O(1) on bounded numbers."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BoolOp):  # short-circuits as Python does
        if isinstance(node.op, ast.And):
            return all(bool(_evaluate(v, env)) for v in node.values)
        return any(bool(_evaluate(v, env)) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        v = _evaluate(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not v
        if not _is_number(v):
            raise ConstraintError(f"a sign takes a number, found {show(v)}")
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.BinOp):
        return _arith(type(node.op), _evaluate(node.left, env), _evaluate(node.right, env))
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, env)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, (ast.In, ast.NotIn)):
                right: Any = [e.value for e in comp.elts]  # type: ignore[attr-defined]
            else:
                right = _evaluate(comp, env)
            if not _compare(type(op), left, right):
                return False
            left = right
        return True
    raise ConstraintError(f"{type(node).__name__} is not allowed")  # refused at load


@functools.lru_cache(maxsize=256)
def _parsed(expr: str, names: frozenset[str]) -> ast.Expression:
    """A constraint's checked tree (parsed once per sweep, not once per point)."""
    tree = ast.parse(_pythonise(expr.strip(), set(names)), mode="eval")
    bad = check_constraint(tree, set(names))
    if bad is not None:
        raise ConstraintError(f"expected {bad[0]}, found {bad[1]}")
    return tree


def evaluate_constraint(expr: str, values: dict[str, Any]) -> bool:
    """Evaluate a constraint with the axis values of one point.

    Args:
        expr: a constraint as written (axis names may contain ``-``).
        values: axis name -> the value the simulator used (s, bytes, 1/s, a
            string or a list for a categorical axis).

    Returns:
        Whether the point is kept.

    Raises:
        ConstraintError: the expression is outside the grammar (a caller that
            did not load it through ``load_sweep``), or fails at this point:
            division by zero, a result beyond 1e300, arithmetic on a string.
    """
    try:
        tree = _parsed(expr, frozenset(values))
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        if isinstance(exc, ConstraintError):
            raise
        raise ConstraintError(f"not an expression: {show(expr)}") from None
    env = {_ident(k): v for k, v in values.items()}
    return bool(_evaluate(tree, env))


__all__ = ["CONSTRAINT_GRAMMAR", "ConstraintError", "MAX_CONSTRAINT_CHARS",
           "MAX_CONSTRAINT_DEPTH", "MAX_IN_ITEMS", "MAX_MAGNITUDE", "MAX_STRING_CHARS",
           "check_constraint", "evaluate_constraint"]

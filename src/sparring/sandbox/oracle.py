"""Expected values from the reference: the generator picks inputs, the reference says the answer.

A generated test `assert f(args) == expected` (either side may be the literal) is rewritten to
`assert f(args) == <what the reference returns on args>`. A small generator can find inputs that
break an answerer long before it can compute the right answer for them by hand; without this its
tests are mostly invalid (wrong expected values) and the round banks nothing. The rewrite keeps the
test honest: the reference is the oracle, exactly as in validation, and the test is still run on
the reference, the trivial solutions and the frozen answerer afterwards.

Tests of any other shape, tests whose call the reference cannot evaluate (it raises, times out)
and values with no literal spelling (NaN, `set()`, huge values) are returned unchanged, so they are
judged as the generator wrote them (an input the reference rejects stays invalid).

Covers: `split_equality`, `literal_source`, `with_reference_expected`. Does not cover: judging the
tests (validation.py) or the generator's reward (sparring.rewards.code_duel).
"""

from __future__ import annotations

import ast
import math
from typing import Any

MAX_LITERAL_CHARS = 400


def split_equality(test: str) -> tuple[str, str] | None:
    """(expression, literal) sources of `assert expression == literal` or `assert literal ==
    expression`; None for any other shape, or when neither or both sides are literals."""
    try:
        tree = ast.parse(test.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return None
    node = tree.body[0]
    cmp = node.test
    if node.msg is not None or not isinstance(cmp, ast.Compare):
        return None
    if len(cmp.ops) != 1 or not isinstance(cmp.ops[0], ast.Eq):
        return None
    left, right = cmp.left, cmp.comparators[0]
    left_literal, right_literal = _is_literal(left), _is_literal(right)
    if left_literal == right_literal:
        return None
    expr, literal = (right, left) if left_literal else (left, right)
    return ast.unparse(expr), ast.unparse(literal)


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def literal_source(value: Any) -> str | None:
    """Python source that evaluates (by `ast.literal_eval`) back to exactly `value`, or None."""
    try:
        src = repr(value)
    except (ValueError, RecursionError):  # ints past the str-conversion limit
        return None
    if _has_nan(value):
        return None
    return round_trip(src, value)


def round_trip(src: str, value: Any) -> str | None:
    """`src` when it is at most MAX_LITERAL_CHARS and `ast.literal_eval` gives back exactly
    `value` (equal, of the same type), else None."""
    if len(src) > MAX_LITERAL_CHARS:
        return None
    try:
        back = ast.literal_eval(src)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return src if back == value and type(back) is type(value) else None


def _has_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_has_nan(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nan(k) or _has_nan(v) for k, v in value.items())
    return False


def with_reference_expected(reference: str, tests: list[str], sandbox: Any) -> list[str]:
    """`tests` with each equality test's literal replaced by the reference's value (see above).
    One sandbox request for all of them; order and length are kept."""
    shapes = [split_equality(t) for t in tests]
    todo = [(i, s[0]) for i, s in enumerate(shapes) if s is not None]
    if not todo:
        return list(tests)
    outcomes = sandbox.evaluate(reference, [expr for _, expr in todo])
    out = list(tests)
    for (i, expr), outcome in zip(todo, outcomes, strict=True):
        if not outcome.ok:
            continue
        literal = literal_source(outcome.value)
        if literal is not None:
            out[i] = f"assert {expr} == {literal}"
    return out

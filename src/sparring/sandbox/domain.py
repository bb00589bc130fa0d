"""Whether a generated test calls the function inside its declared domain: the literal arguments
of each call against the parameter annotations of the problem's signature.

Why: validation accepts a test when the reference passes it, so a reference whose guard accepts
more than its parameters declare (`'empty' if not text else ...` returns 'empty' for `None` too)
makes `f(None) == 'empty'` valid, and a correct answer that guards with `len(text) == 0` fails
it. A test outside the declared types says nothing about the problem as posed; it is not banked.

Covers: `fits_signature` for the annotations the problem families use (int, float, bool, str,
None, list[...], tuple[...], dict[..., ...], X | Y); an argument that is not a literal, a
parameter without an annotation and an annotation it does not know are accepted (it cannot
tell). Does not cover: running tests (sparring.sandbox) or what validation does with the answer
(sparring.phases.validate). Pure: the standard library's ast only.
"""

from __future__ import annotations

import ast
from typing import Any

_UNKNOWN = object()
_PLAIN: dict[str, Any] = {
    "int": int, "float": (int, float), "bool": bool, "str": str,
    "list": list, "dict": dict, "tuple": tuple, "set": set,
}  # fmt: skip


def _fits(value: Any, annotation: ast.expr | None) -> bool:
    """`value` is of the annotated type (True when the annotation is absent or unknown)."""
    if annotation is None:
        return True
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return value is None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _fits(value, annotation.left) or _fits(value, annotation.right)
    if isinstance(annotation, ast.Name):
        kind = _PLAIN.get(annotation.id)
        if kind is None:
            return True
        if annotation.id in ("int", "float") and isinstance(value, bool):
            return False
        return isinstance(value, kind)
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name):
        outer = annotation.value.id
        inner = annotation.slice
        parts = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        if outer in ("list", "set"):
            kind = list if outer == "list" else set
            return isinstance(value, kind) and all(_fits(v, parts[0]) for v in value)
        if outer == "dict" and len(parts) == 2:
            return isinstance(value, dict) and all(
                _fits(k, parts[0]) and _fits(v, parts[1]) for k, v in value.items()
            )
        if outer == "tuple":
            return isinstance(value, tuple)
    return True


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN


def fits_signature(test: str, function_name: str, signature: str) -> bool:
    """False when some call of `function_name` in `test` passes a literal argument outside its
    parameter's annotation in `signature`; True otherwise (also when either does not parse).

    >>> sig = "def first_or_99(xs: list[int]) -> int:"
    >>> fits_signature("assert first_or_99([]) == 99", "first_or_99", sig)
    True
    >>> fits_signature("assert first_or_99(None) == 99", "first_or_99", sig)
    False
    >>> fits_signature("assert first_or_99(xs=['a']) == 99", "first_or_99", sig)
    False
    >>> fits_signature("assert f(None) == 1", "f", "def f(x):")
    True
    """
    try:
        definition = ast.parse(signature.strip() + "\n    pass").body[0]
        tree = ast.parse(test)
    except (SyntaxError, ValueError, IndexError):
        return True
    if not isinstance(definition, ast.FunctionDef):
        return True
    params = [*definition.args.posonlyargs, *definition.args.args]
    by_name = {a.arg: a.annotation for a in [*params, *definition.args.kwonlyargs]}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id != function_name:
            continue
        pairs = [(a, p.annotation) for a, p in zip(node.args, params, strict=False)]
        pairs += [(k.value, by_name.get(k.arg)) for k in node.keywords if k.arg]
        for arg, annotation in pairs:
            value = _literal(arg)
            if value is not _UNKNOWN and not _fits(value, annotation):
                return False
    return True

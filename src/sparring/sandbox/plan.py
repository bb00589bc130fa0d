"""Trusted side of a test: parse it, decode the values the sandbox sends back, decide pass/fail.

Why one module: parsing a test, decoding the sandbox's values and deciding pass/fail are one
trust boundary; split apart, a reader could not check in one place that nothing the sandbox
sends is trusted.

A test `assert A == B` is split in the parent with `ast`: literal parts (`B` usually) are evaluated
here with `ast.literal_eval` and never enter the sandbox; every other sub-expression ("leaf") is
evaluated inside the sandbox, sent back as tagged plain data, decoded strictly here (exact builtin
types only), and the comparison, `not`, `and`/`or` are computed here. So an object whose `__eq__`
always returns True, a subclass of int, or a patched builtin inside the sandbox cannot make a test
pass: the parent only ever compares plain values.

Covers: `parse_tests_file`, `normalize` (dedup key), `parse_test` -> `TestPlan`, `decode_value`,
`decide`. Does not cover: running code (pool.py / worker.py). Pure and fast; unit-tested.
"""

from __future__ import annotations

import ast
import builtins
import functools
import json
import math
import operator
from dataclasses import dataclass
from typing import Any

from sparring.sandbox import limits as L

MAX_DEPTH = 64
MAX_NODES = 200_000
_BUILTIN_NAMES = frozenset(dir(builtins))


def parse_tests_file(text: str) -> list[str]:
    """One test per line; blank lines and `#` comment lines are skipped."""
    return [s.strip() for s in text.splitlines() if s.strip() and not s.strip().startswith("#")]


def normalize(test: str) -> str:
    """Duplicate key: the AST dump (whitespace/paren/quote variants collapse), else the text."""
    try:
        return ast.dump(ast.parse(test.strip()))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return " ".join(test.split())


# ---------------------------------------------------------------- plan nodes
@dataclass(frozen=True)
class Const:
    value: Any


@dataclass(frozen=True)
class Leaf:
    index: int  # index into TestPlan.leaves


@dataclass(frozen=True)
class Compare:
    ops: tuple[str, ...]
    operands: tuple[Any, ...]


@dataclass(frozen=True)
class Not:
    operand: Any


@dataclass(frozen=True)
class BoolOp:
    op: str  # "and" | "or"
    values: tuple[Any, ...]


@dataclass(frozen=True)
class BinOp:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True)
class UnaryOp:
    op: str
    operand: Any


@dataclass(frozen=True)
class Call:
    func: str  # a name in SAFE_FUNCS
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Subscript:
    value: Any
    index: Any  # a node, or a Slice


@dataclass(frozen=True)
class Slice:
    lower: Any
    upper: Any
    step: Any


@dataclass(frozen=True)
class Display:
    kind: str  # "list" | "tuple" | "set"
    items: tuple[Any, ...]


@dataclass(frozen=True)
class LeafSpec:
    expr: str  # source evaluated inside the sandbox
    names: frozenset[str]  # names it reads

    def needs_solution(self, defined: frozenset[str] | None) -> bool:
        """False when it reads only builtins the solution does not redefine: then it is evaluated
        without the solution loaded (a hostile solution never sees it)."""
        if not self.names <= _BUILTIN_NAMES:
            return True
        return defined is None or bool(self.names & defined)


@dataclass(frozen=True)
class TestPlan:
    __test__ = False
    root: Any
    leaves: tuple[LeafSpec, ...]


class InvalidTest(ValueError):
    pass


_CMP = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


_BINOPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}
_UNARY = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}
# pure functions the parent applies itself to plain values (so patching them inside the sandbox
# changes nothing); keyword arguments allowed per function
SAFE_FUNCS: dict[str, frozenset[str]] = {
    name: frozenset()
    for name in (
        "abs",
        "len",
        "min",
        "max",
        "sum",
        "list",
        "tuple",
        "set",
        "frozenset",
        "bool",
        "int",
        "float",
        "str",
        "any",
        "all",
        "round",
        "math.isclose",
        "math.isnan",
        "math.isinf",
        "math.isfinite",
        "math.sqrt",
        "math.floor",
        "math.ceil",
        "math.fabs",
    )
}
SAFE_FUNCS["sorted"] = frozenset({"reverse"})
SAFE_FUNCS["isinstance"] = frozenset()  # only with builtin type names, see parse_test
_TYPES = {
    t.__name__: t
    for t in (int, float, complex, str, bytes, bool, list, tuple, dict, set, frozenset)
}
SAFE_FUNCS["math.isclose"] = frozenset({"rel_tol", "abs_tol"})
SAFE_NAMES = frozenset(n.split(".")[0] for n in SAFE_FUNCS)


def solution_names(solution: str) -> frozenset[str] | None:
    """Every name the solution might bind (over-approximation); None if unknown (syntax error,
    star import, or dynamic globals()/builtins tricks): then nothing is assumed unshadowed."""
    try:
        tree = ast.parse(solution)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id in ("globals", "builtins", "__builtins__", "setattr", "vars", "exec"):
                return None
            if isinstance(node.ctx, ast.Store | ast.Del):
                names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for a in node.names:
                if a.name == "*":
                    return None
                if isinstance(node, ast.Import) and a.name == "math" and a.asname is None:
                    continue  # the real math module: math.isclose etc. stay trusted
                names.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return frozenset(names)


@functools.lru_cache(maxsize=8192)  # the same tests run against many solutions
def parse_test(
    test: str, max_chars: int = 2000, shadowed: frozenset[str] = frozenset()
) -> TestPlan:
    """Parse one test into a plan, or raise InvalidTest with a short reason.

    Literals, comparisons, `not`/`and`/`or`, arithmetic, subscripts, list/tuple/set displays and
    calls to SAFE_FUNCS (unless their name is in `shadowed`, i.e. defined by the solution) are
    evaluated in the parent; every other sub-expression (normally the call into the solution) is a
    leaf evaluated in the sandbox. Plans are cached: treat them and their Consts as read-only."""
    if len(test) > max_chars:
        raise InvalidTest(f"test longer than {max_chars} characters")
    try:
        tree = ast.parse(test.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise InvalidTest("does not parse") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        raise InvalidTest("not a single assert statement")
    leaves: list[LeafSpec] = []

    def leaf(node: ast.expr) -> Any:
        names = frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
        leaves.append(LeafSpec(ast.unparse(node), names))
        return Leaf(len(leaves) - 1)

    def func_name(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            name = f"{node.value.id}.{node.attr}"
        else:
            return None
        if name not in SAFE_FUNCS or name.split(".")[0] in shadowed:
            return None
        return name

    def build(node: ast.expr) -> Any:
        try:
            return Const(ast.literal_eval(node))
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            pass
        if isinstance(node, ast.Compare):
            ops = tuple(_CMP[type(op)] for op in node.ops)
            return Compare(ops, tuple(build(x) for x in [node.left, *node.comparators]))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return Not(build(node.operand))
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            return BoolOp(op, tuple(map(build, node.values)))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return BinOp(_BINOPS[type(node.op)], build(node.left), build(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return UnaryOp(_UNARY[type(node.op)], build(node.operand))
        if isinstance(node, ast.List | ast.Tuple | ast.Set) and not any(
            isinstance(e, ast.Starred) for e in node.elts
        ):
            kind = {ast.List: "list", ast.Tuple: "tuple", ast.Set: "set"}[type(node)]
            return Display(kind, tuple(map(build, node.elts)))
        if isinstance(node, ast.Subscript):
            sl = node.slice
            if isinstance(sl, ast.Slice):
                index: Any = Slice(
                    *(
                        build(x) if x is not None else Const(None)
                        for x in (sl.lower, sl.upper, sl.step)
                    )
                )
            else:
                index = build(sl)
            return Subscript(build(node.value), index)
        if isinstance(node, ast.Call) and func_name(node.func) == "isinstance":
            types = node.args[1] if len(node.args) == 2 and not node.keywords else None
            elts = types.elts if isinstance(types, ast.Tuple) else [types]
            if all(
                isinstance(e, ast.Name) and e.id in _TYPES and e.id not in shadowed for e in elts
            ):
                tup = tuple(_TYPES[e.id] for e in elts)  # type: ignore[union-attr]
                return Call("isinstance", (build(node.args[0]), Const(tup)), ())
            return leaf(node)
        if isinstance(node, ast.Call):
            name = func_name(node.func)
            if (
                name is not None
                and not any(isinstance(a, ast.Starred) for a in node.args)
                and all(k.arg in SAFE_FUNCS[name] for k in node.keywords)
            ):
                args = tuple(map(build, node.args))
                kwargs = tuple((str(k.arg), build(k.value)) for k in node.keywords)
                return Call(name, args, kwargs)
        return leaf(node)

    try:
        return TestPlan(build(tree.body[0].test), tuple(leaves))
    except (RecursionError, MemoryError):
        raise InvalidTest("expression nested too deeply") from None


# ---------------------------------------------------------------- decoding
class DecodeError(ValueError):
    pass


def decode_value(obj: Any) -> Any:
    """Tagged JSON -> plain Python value. Only exact builtin types come out; anything odd raises."""
    count = [0]

    def dec(o: Any, depth: int) -> Any:
        count[0] += 1
        if depth > MAX_DEPTH or count[0] > MAX_NODES:
            raise DecodeError("value too deep or too large")
        if type(o) is not list or not o or type(o[0]) is not str:
            raise DecodeError("malformed value")
        tag, rest = o[0], o[1:]
        if tag == "n" and not rest:
            return None
        if len(rest) != 1 and tag != "c":
            raise DecodeError("malformed value")
        if tag == "b" and type(rest[0]) is bool:
            return rest[0]
        if tag == "i" and type(rest[0]) is str:
            return int(rest[0])
        if tag == "f" and type(rest[0]) is str:
            return float(rest[0])
        if tag == "c" and len(rest) == 2 and all(type(x) is str for x in rest):
            return complex(float(rest[0]), float(rest[1]))
        if tag == "s" and type(rest[0]) is str:
            return rest[0]
        if tag == "y" and type(rest[0]) is str:
            return bytes.fromhex(rest[0])
        if tag in ("l", "t", "S", "F", "d") and type(rest[0]) is list:
            items = [dec(x, depth + 1) for x in rest[0]]
            if tag == "l":
                return items
            if tag == "t":
                return tuple(items)
            if tag == "S":
                return set(items)
            if tag == "F":
                return frozenset(items)
            if len(items) % 2:
                raise DecodeError("malformed dict")
            return dict(zip(items[0::2], items[1::2], strict=True))
        raise DecodeError(f"unknown value tag {tag!r}")

    try:
        return dec(obj, 0)
    except DecodeError:
        raise
    except (ValueError, TypeError, RecursionError, MemoryError, OverflowError) as e:
        raise DecodeError(f"malformed value ({type(e).__name__})") from None


def decode_raw(raw: str) -> Any:
    try:
        return decode_value(json.loads(raw))
    except DecodeError:
        raise
    except (ValueError, RecursionError, MemoryError) as e:
        raise DecodeError(f"malformed result ({type(e).__name__})") from None


# ---------------------------------------------------------------- deciding
@dataclass(frozen=True)
class LeafOutcome:
    """What the sandbox said about one leaf: a value (status ok) or a failure outcome."""

    ok: bool
    value: Any = None
    outcome: str = (
        L.ERROR
    )  # when not ok: error | timeout | memory_limit | output_limit | infra_error
    detail: str = ""


class _LeafFailed(Exception):
    def __init__(self, leaf: LeafOutcome):
        self.leaf = leaf


def _is(a: Any, b: Any) -> bool:
    # identity on plain data: exact for singletons, value+type equality otherwise
    if a is None or b is None or type(a) is bool or type(b) is bool:
        return a is b
    return type(a) is type(b) and a == b


_OPS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
    "is": _is,
    "is not": lambda a, b: not _is(a, b),
}


def short_repr(value: Any, limit: int = 120) -> str:
    s = repr(value)
    return s if len(s) <= limit else s[: limit - 3] + "..."


MAX_SEQ = 1_000_000  # items/characters a parent-side operation may produce
MAX_INT_BITS = 100_000


class _TooBig(ValueError):
    pass


def _size(x: Any) -> int:
    return len(x) if isinstance(x, str | bytes | list | tuple | set | frozenset | dict) else 0


def _binop(op: str, a: Any, b: Any) -> Any:
    """Bounded arithmetic on plain values: nothing the parent computes can blow up."""
    if op == "*":
        if isinstance(a, int) and _size(b):
            a, b = b, a
        if _size(a) and isinstance(b, int) and _size(a) * max(b, 0) > MAX_SEQ:
            raise _TooBig("sequence repetition too large")
        if type(a) is int and type(b) is int and a.bit_length() + b.bit_length() > MAX_INT_BITS:
            raise _TooBig("integer too large")
        return a * b
    if op == "**":
        big = type(a) is int and type(b) is int and abs(a) > 1 and b > 0
        if big and a.bit_length() * b > MAX_INT_BITS:
            raise _TooBig("power too large")
        return a**b
    if op == "%" and isinstance(a, str | bytes):
        raise TypeError("%-formatting is not evaluated")
    if op in ("+", "|", "&", "^") and _size(a) + _size(b) > MAX_SEQ:
        raise _TooBig("result too large")
    return _ARITH[op](a, b)


_ARITH = {
    "+": operator.add,
    "-": operator.sub,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}


def _sum(*args: Any) -> Any:
    if len(args) != 1:
        raise TypeError("sum() with a start value is not evaluated")
    items = list(args[0])
    if not all(type(x) in (int, float, complex, bool) for x in items):
        raise TypeError("sum() of non-numbers is not evaluated")
    return sum(items)


def _round(x: Any, ndigits: Any = None) -> Any:
    if ndigits is not None and (type(ndigits) is not int or abs(ndigits) > 1000):
        raise _TooBig("round() ndigits out of range")
    return round(x) if ndigits is None else round(x, ndigits)


def _int(*args: Any) -> int:
    if (len(args) == 1 and type(args[0]) is float) or len(args) > 2:
        return int(*args)
    if args and isinstance(args[0], str | bytes) and len(args[0]) > 4300:
        raise _TooBig("int() of a long string")
    return int(*args)


def _str(x: Any = "") -> str:
    if type(x) is int and x.bit_length() > 14000:
        raise _TooBig("str() of a huge int")
    return str(x)


_FUNCS: dict[str, Any] = {
    "abs": abs,
    "len": len,
    "min": min,
    "max": max,
    "sum": _sum,
    "list": list,
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
    "bool": bool,
    "int": _int,
    "float": float,
    "str": _str,
    "any": any,
    "all": all,
    "round": _round,
    "sorted": sorted,
    "math.isclose": math.isclose,
    "math.isnan": math.isnan,
    "math.isinf": math.isinf,
    "math.isfinite": math.isfinite,
    "math.sqrt": math.sqrt,
    "math.floor": math.floor,
    "math.ceil": math.ceil,
    "math.fabs": math.fabs,
    "isinstance": isinstance,  # the parent only sees exact builtin types, so this is exact
}
assert set(_FUNCS) == set(SAFE_FUNCS)


def decide(plan: TestPlan, leaves: list[LeafOutcome]) -> tuple[str, str]:
    """(outcome, detail) of one test from the outcomes of its leaves. Pure; runs in the parent."""

    def get(node: Any) -> Any:
        if isinstance(node, Const):
            return node.value
        if isinstance(node, Leaf):
            lo = leaves[node.index]
            if not lo.ok:
                raise _LeafFailed(lo)
            return lo.value
        if isinstance(node, Not):
            return not get(node.operand)
        if isinstance(node, BoolOp):
            v: Any = None
            for sub in node.values:
                v = get(sub)
                if (node.op == "and") != bool(v):
                    return v
            return v
        if isinstance(node, BinOp):
            return _binop(node.op, get(node.left), get(node.right))
        if isinstance(node, UnaryOp):
            v = get(node.operand)
            return -v if node.op == "-" else +v if node.op == "+" else ~v
        if isinstance(node, Display):
            items = [get(x) for x in node.items]
            return (
                list(items)
                if node.kind == "list"
                else set(items)
                if node.kind == "set"
                else tuple(items)
            )
        if isinstance(node, Subscript):
            value = get(node.value)
            if isinstance(node.index, Slice):
                return value[
                    slice(*(get(x) for x in (node.index.lower, node.index.upper, node.index.step)))
                ]
            return value[get(node.index)]
        if isinstance(node, Call):
            args = [get(a) for a in node.args]
            kwargs = {k: get(v) for k, v in node.kwargs}
            return _FUNCS[node.func](*args, **kwargs)
        if isinstance(node, Compare):
            left = get(node.operands[0])
            for op, right_node in zip(node.ops, node.operands[1:], strict=True):
                right = get(right_node)
                if not _OPS[op](left, right):
                    return False
                left = right
            return True
        raise AssertionError(f"unknown plan node {node!r}")

    try:
        result = get(plan.root)
    except _LeafFailed as e:
        return e.leaf.outcome, e.leaf.detail
    except (
        TypeError,
        ValueError,
        KeyError,
        IndexError,
        ZeroDivisionError,
        ArithmeticError,
        RecursionError,
        MemoryError,
    ) as e:
        return L.ERROR, f"{type(e).__name__}: {str(e)[:200]}"
    if result:
        return L.PASSED, ""
    # failure detail: show the sandbox-computed values
    shown = [
        f"{spec.expr[:80]} = {short_repr(lo.value)}"
        for spec, lo in zip(plan.leaves, leaves, strict=True)
        if lo.ok
    ]
    return L.FAILED, "; ".join(shown)[:400] or "assertion is false"

"""The non-learning test generator's inputs (`generator_mode: fuzz`, issue 73's arm R): argument
tuples drawn by hypothesis from a problem's declared parameter types, seeded, as candidate tests.

A candidate is `assert f(<drawn arguments>) == None`: the expected value is a placeholder that
the reference replaces (sparring.sandbox.oracle, as for the generator's tests with
`rewards.reference_expected`), so the inputs are all this module chooses.

Covers: `parameter_specs` (a `def` line's parameters as the type specs sparring.problems.fuzz_worker
draws from: int, float, bool, str, None, list/set/tuple/dict of them, `X | Y`, typing's `List`,
`Optional`, ...; an unannotated or unknown parameter draws None, a bool, an int or a string),
`problem_seed`, `draw_arguments` (the draws, in a process of their own: the worker's docstring
says why), `spell` (a value's literal source, sets sorted so a test reads the same in every
process) and `candidate_tests`. Does not cover: judging or choosing the candidates
(sparring.phases.fuzz), the strategies' bounds (sparring.problems.fuzz_worker). Pure but for the
worker's
process: hypothesis is imported only there.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
from importlib import resources
from typing import Any

from sparring.errors import SparringError
from sparring.problems import Problem
from sparring.sandbox.oracle import round_trip

Spec = dict[str, Any]
PLACEHOLDER = "None"  # the expected value before the reference gives it
_SCALARS = {"int": "int", "float": "float", "bool": "bool", "str": "str", "None": "none"}
_COLLECTIONS = {"list": "list", "List": "list", "Sequence": "list", "Iterable": "list",
                "set": "set", "Set": "set", "frozenset": "set", "FrozenSet": "set",
                "tuple": "tuple", "Tuple": "tuple", "dict": "dict", "Dict": "dict",
                "Mapping": "dict"}  # fmt: skip
ANY: Spec = {"t": "any"}


def _name(node: ast.expr) -> str:
    """`list` of `list`, `typing.List` and `t.List`; '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def spec_of(annotation: ast.expr | None) -> Spec:
    """The type spec of one annotation (the grammar in sparring.problems.fuzz_worker's docstring).

    >>> spec_of(ast.parse("list[tuple[int, str]]", mode="eval").body)
    {'t': 'list', 'of': {'t': 'tuple', 'items': [{'t': 'int'}, {'t': 'str'}]}}
    >>> spec_of(ast.parse("int | None", mode="eval").body)
    {'t': 'union', 'of': [{'t': 'int'}, {'t': 'none'}]}
    """
    if annotation is None:
        return ANY
    if isinstance(annotation, ast.Constant):
        if annotation.value is None:
            return {"t": "none"}
        if isinstance(annotation.value, str):  # a quoted annotation
            try:
                return spec_of(ast.parse(annotation.value, mode="eval").body)
            except SyntaxError:
                return ANY
        return ANY
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _union([spec_of(annotation.left), spec_of(annotation.right)])
    name = _name(annotation)
    if name in _SCALARS:
        return {"t": _SCALARS[name]}
    if name in _COLLECTIONS:  # bare: a list of one scalar type, a dict of str to int, ...
        kind = _COLLECTIONS[name]
        if kind == "dict":
            return {"t": "dict", "key": {"t": "str"}, "value": {"t": "int"}}
        if kind == "tuple":
            return {"t": "tuple_of", "of": {"t": "int"}}
        return {"t": kind, "of": None}
    if isinstance(annotation, ast.Subscript):
        outer = _name(annotation.value)
        inner = annotation.slice
        parts = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        if outer == "Optional":
            return _union([spec_of(parts[0]), {"t": "none"}])
        if outer == "Union":
            return _union([spec_of(p) for p in parts])
        kind = _COLLECTIONS.get(outer)
        if kind in ("list", "set"):
            return {"t": kind, "of": spec_of(parts[0])}
        if kind == "dict" and len(parts) == 2:
            return {"t": "dict", "key": spec_of(parts[0]), "value": spec_of(parts[1])}
        if kind == "tuple":
            if len(parts) == 2 and isinstance(parts[1], ast.Constant) and parts[1].value is ...:
                return {"t": "tuple_of", "of": spec_of(parts[0])}
            return {"t": "tuple", "items": [spec_of(p) for p in parts]}
    return ANY  # Any, object, a class the problem defines: what the tests pass most often


def _union(options: list[Spec]) -> Spec:
    flat: list[Spec] = []
    for o in options:
        for part in o["of"] if o["t"] == "union" else [o]:
            if part not in flat:
                flat.append(part)
    return flat[0] if len(flat) == 1 else {"t": "union", "of": flat}


def parameter_specs(signature: str) -> list[tuple[str, bool, Spec]] | None:
    """(name, passed by keyword, spec) of each parameter of a `def` line, positional first;
    `*args` and `**kwargs` are not drawn. None when the line does not parse as a `def`.

    >>> parameter_specs("def f(xs: list[int], k: int = 2, *, strict: bool) -> int:")
    [('xs', False, {'t': 'list', 'of': {'t': 'int'}}), ('k', False, {'t': 'int'}), ('strict', True, {'t': 'bool'})]
    >>> parameter_specs("not a def") is None
    True
    """  # noqa: E501
    try:
        definition = ast.parse(signature.strip() + "\n    pass").body[0]
    except (SyntaxError, ValueError, IndexError):
        return None
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    a = definition.args
    out = [(p.arg, False, spec_of(p.annotation)) for p in [*a.posonlyargs, *a.args]]
    out += [(p.arg, True, spec_of(p.annotation)) for p in a.kwonlyargs]
    return out


def problem_seed(seed: int, problem_id: str) -> int:
    """A problem's own seed under a phase's: one problem's draws do not move when another
    problem joins or leaves the training set."""
    return int(hashlib.sha256(f"{seed}:{problem_id}".encode()).hexdigest()[:12], 16)


def draw_arguments(jobs: list[tuple[list[Spec], int, int]]) -> list[list[tuple]]:
    """Per job (specs, n, seed): up to n argument tuples, the same for the same job in any
    process (sparring.problems.fuzz_worker, run in a fresh interpreter that loads nothing of
    sparring)."""
    if not jobs:
        return []
    source = resources.files("sparring.problems").joinpath("fuzz_worker.py").read_text()
    payload = json.dumps([{"params": s, "n": n, "seed": seed} for s, n, seed in jobs])
    # no PYTHON* variables but a fixed hash seed: nothing loads from PYTHONPATH or a startup
    # file, and no set's order varies between runs
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = "0"
    with tempfile.TemporaryDirectory() as cwd:  # hypothesis may write a .hypothesis folder
        proc = subprocess.run(
            [sys.executable, "-s", "-P", "-c", source],
            input=payload.encode(), capture_output=True, cwd=cwd, env=env, timeout=600,
        )  # fmt: skip
    if proc.returncode:
        lines = proc.stderr.decode(errors="replace").strip().splitlines() or ["no message"]
        raise SparringError(
            f"generator_mode fuzz: drawing inputs with hypothesis failed in {sys.executable}: "
            f"{lines[-1]} (is hypothesis installed there? pip install hypothesis)"
        )
    return pickle.loads(proc.stdout)  # our own child's output: nothing untrusted


def spell(value: Any) -> str | None:
    """Python source that `ast.literal_eval` turns back into exactly `value` (a set's items
    sorted by their spelling), or None: no literal (an empty set, nan) or longer than the
    oracle spells an expected value.

    >>> spell({"b", "a"}), spell([1, (2, "x")]), spell(set()), spell(float("nan"))
    ("{'a', 'b'}", "[1, (2, 'x')]", None, None)
    """
    src = _spell(value)
    return None if src is None else round_trip(src, value)


def _spell(value: Any) -> str | None:
    if isinstance(value, (set, frozenset)):
        parts = sorted(_spell(v) or "" for v in value)
        return "{" + ", ".join(parts) + "}" if value and all(parts) else None
    if isinstance(value, list):
        parts = [_spell(v) for v in value]
        return None if None in parts else "[" + ", ".join(parts) + "]"  # type: ignore[arg-type]
    if isinstance(value, tuple):
        parts = [_spell(v) for v in value]
        if None in parts:
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"  # type: ignore
    if isinstance(value, dict):
        pairs = [(_spell(k), _spell(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in pairs):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    if isinstance(value, float) and value != value:
        return None
    return repr(value)


def call_source(function_name: str, params: list[tuple[str, bool, Spec]], args: tuple) -> str:
    """`f(1, [2], strict=True)`, or '' when an argument has no literal spelling."""
    parts = []
    for (name, keyword, _), value in zip(params, args, strict=True):
        src = spell(value)
        if src is None:
            return ""
        parts.append(f"{name}={src}" if keyword else src)
    return f"{function_name}({', '.join(parts)})"


def candidate_tests(problems: list[Problem], n: int, seed: int) -> dict[str, list[str]]:
    """Per problem, up to `n` distinct tests `assert f(<drawn args>) == None` in draw order
    (the simplest inputs first); [] for a problem whose signature does not parse."""
    specs = {p.id: parameter_specs(p.function_signature) for p in problems}
    drawable = [p for p in problems if specs[p.id] is not None]
    jobs = [([s for _, _, s in specs[p.id]], n, problem_seed(seed, p.id)) for p in drawable]  # type: ignore[union-attr]
    out: dict[str, list[str]] = {p.id: [] for p in problems}
    for p, drawn in zip(drawable, draw_arguments(jobs), strict=True):
        for args in drawn:
            call = call_source(p.function_name, specs[p.id], args)  # type: ignore[arg-type]
            test = f"assert {call} == {PLACEHOLDER}"
            if call and test not in out[p.id]:
                out[p.id].append(test)
    return out

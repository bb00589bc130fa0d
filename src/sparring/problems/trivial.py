"""Trivial solutions: the cheap functions that any honest reward must pay nothing.

Covers: the fixed family of trivial solutions for one problem (constants of the common types,
each argument echoed, the last argument echoed, the length, `list()` and `sorted()` of the first
argument), their source code, and which of a problem's tests they pass once run (`TrivialRecord`,
kept in the dataset artifact as `Problem.trivial_passes`). A test that some trivial solution
passes is *non-discriminating*: passing it says nothing about whether the code solves the problem.

Pure: builds source strings and reads results; running them is the sandbox's job
(`sparring.problems.compute_trivial_passes`). Imports nothing heavy.
"""

from __future__ import annotations

# name -> the expression returned. `_a` is every argument in call order (positional first, then
# keyword values), so a trivial solution accepts any call the tests make.
CONSTANTS: dict[str, str] = {
    "const_0": "0",
    "const_1": "1",
    "const_-1": "-1",
    "const_True": "True",
    "const_False": "False",
    "const_None": "None",
    "const_empty_str": "''",
    "const_empty_list": "[]",
    "const_empty_dict": "{}",
    "const_empty_tuple": "()",
}
ON_FIRST_ARGUMENT: dict[str, str] = {
    "len_first": "len(_a[0])",
    "list_first": "list(_a[0])",
    "sorted_first": "sorted(_a[0])",
}
MAX_ECHOED_ARGUMENTS = 4


def trivial_family(function_name: str, n_args: int = MAX_ECHOED_ARGUMENTS) -> dict[str, str]:
    """name -> source of each trivial solution of `function_name` (echoes of arguments 0 to
    n_args - 1 and of the last one; the sandbox judges an echo of a missing argument a failure).

    >>> family = trivial_family("f", 1)
    >>> family["const_0"].splitlines()[-1].strip()
    'return 0'
    >>> sorted(k for k in family if k.startswith("echo"))
    ['echo_0', 'echo_last']
    """
    exprs = dict(CONSTANTS)
    for i in range(max(1, min(n_args, MAX_ECHOED_ARGUMENTS))):
        exprs[f"echo_{i}"] = f"_a[{i}]"
    exprs["echo_last"] = "_a[-1]"
    exprs.update(ON_FIRST_ARGUMENT)
    return {name: _source(function_name, expr) for name, expr in exprs.items()}


def _source(function_name: str, expr: str) -> str:
    return (
        f"def {function_name}(*args, **kwargs):\n"
        "    _a = list(args) + list(kwargs.values())\n"
        f"    return {expr}\n"
    )


def argument_count(signature: str) -> int:
    """Parameters of a `def` line (0 when it does not parse).

    >>> argument_count("def f(a: list[int], b=2, *, c) -> int:")
    3
    >>> argument_count("nonsense")
    0
    """
    import ast

    text = signature.strip()
    if not text.endswith(":"):
        text += ":"
    try:
        tree = ast.parse(text + "\n    pass\n")
    except SyntaxError:
        return 0
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return 0
    a = fn.args
    return len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)


def non_discriminating(n_tests: int, trivial_passes: dict[str, list[int]]) -> list[bool]:
    """Per test index: True when some trivial solution passes it.

    >>> non_discriminating(3, {"const_0": [0], "echo_0": [0, 2]})
    [True, False, True]
    """
    mask = [False] * n_tests
    for indices in trivial_passes.values():
        for i in indices:
            if 0 <= i < n_tests:
                mask[i] = True
    return mask


def discriminating_indices(n_tests: int, trivial_passes: dict[str, list[int]]) -> list[int]:
    """Indices of the tests that no trivial solution passes.

    >>> discriminating_indices(3, {"const_0": [0]})
    [1, 2]
    """
    return [i for i, hit in enumerate(non_discriminating(n_tests, trivial_passes)) if not hit]

"""From a completion to the program the sandbox runs, and HumanEval's `check` as tests.

Why one module: the program an answer becomes (`extract_code`, `complete_humaneval`) and the
tests HumanEval judges it on (`split_check`, `humaneval_tests`, `humaneval_solution`,
`humaneval_job`) must agree on names and layout; problems, prompts, evaluation and the games all
read both, so this module imports no other sparring module (no cycle can pass through it).

Covers: code blocks in a completion (`extract_code`: the last python block that parses and, given
a name, defines it), a HumanEval completion as a program (`complete_humaneval`: a whole function
stands alone, a body continues the prompt), and HumanEval's `check(candidate)` turned into
standalone `assert entry_point(args) == expected` tests that the sandbox decides in the parent
process, so an always-equal object or a patched builtin cannot pass; checks that are not plain
asserts (loops, helpers; 8 of 164 tasks) keep the check-function form as a fallback, run on a
builtins snapshot with the candidate's return values required to be plain builtin data (an
in-process guard: best effort against code written to defeat this particular harness).
Does not cover: running anything (sparring.sandbox), pass@k (sparring.evaluation.humaneval). Pure.
"""

from __future__ import annotations

import ast
import builtins
import math
import re
from typing import Any, Protocol


class HumanEvalTask(Protocol):
    """What a HumanEval problem holds (sparring.problems.Problem has it)."""

    prompt: str
    entry_point: str
    baseline_tests: list[str]
    reference_solution: str


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]


def parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def extract_code(text: Any, function_name: str = "") -> str | None:
    """The Python code of a completion: the last fenced block that parses and defines
    `function_name` (when given); else the whole text if it parses and defines it.

    >>> extract_code("Sure!\\n```python\\ndef f(x):\\n    return x\\n```", "f")
    'def f(x):\\n    return x\\n'
    >>> extract_code("no code here", "f") is None
    True
    """
    if not isinstance(text, str) or not text.strip():
        return None
    candidates = [body for lang, body in fenced_blocks(text) if lang in ("", "python", "py")]
    candidates.reverse()
    candidates.append(text)
    for code in candidates:
        if not code.strip() or not parses(code):
            continue
        if function_name and not _defines(code, function_name):
            continue
        return code
    return None


def _defines(code: str, name: str) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
        for node in ast.walk(tree)
    )


def parameter_names(code: str, name: str) -> list[str] | None:
    """Parameter names of the first `def name` in `code` (a signature line parses too); None
    when there is none.

    >>> parameter_names("def f(a, b=1, *, c):", "f")
    ['a', 'b', 'c']
    >>> parameter_names("x = 1", "f") is None
    True
    """
    text = code.strip()
    if text.startswith(("def ", "async def ")) and "\n" not in text:
        text = (text if text.endswith(":") else text + ":") + "\n    pass\n"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            a = node.args
            return [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return None


def defines_asked_function(text: Any, signature: str) -> bool:
    """Does the answer define the function the signature asks for, with its parameters (names,
    in order)? The format-only control reward, and the definition rate.

    >>> defines_asked_function("```python\\ndef f(xs, k):\\n    return 0\\n```", "def f(xs, k):")
    True
    >>> defines_asked_function("```python\\ndef f(k, xs):\\n    return 0\\n```", "def f(xs, k):")
    False
    >>> defines_asked_function("", "def f(xs):")
    False
    """
    match = re.match(r"\s*(?:async\s+)?def\s+(\w+)\s*\(", signature)
    name = match.group(1) if match else ""
    wanted = parameter_names(signature, name) if name else None
    code = extract_code(text, name) if wanted is not None else None
    return code is not None and parameter_names(code, name) == wanted


def complete_humaneval(prompt: str, completion: str, entry_point: str) -> str:
    """A HumanEval program: a completion that defines the function stands alone; a body
    continues the prompt (the official format)."""
    code = extract_code(completion, entry_point)
    if code is not None:
        header = "\n".join(
            line for line in prompt.splitlines() if line.startswith(("import ", "from "))
        )
        return f"{header}\n{code}" if header else code
    return prompt + completion


_BUILTIN_NAMES = frozenset(dir(builtins))


CHECK_NAME = "_sparring_check"


CHECK_TEST = f"assert {CHECK_NAME}() == 'passed'"


def _check_source(problem: HumanEvalTask) -> str:
    """The official test module of a HumanEval problem (without the trailing check call)."""
    test = problem.baseline_tests[0] if problem.baseline_tests else ""
    tail = f"\ncheck({problem.entry_point})"
    return test[: -len(tail)] if test.endswith(tail) else test


def _check_function(tree: ast.Module) -> ast.FunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check" and node.args.args:
            return node
    return None


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == self.old:
            return ast.copy_location(ast.Name(id=self.new, ctx=node.ctx), node)
        return node


def calls_of(node: ast.AST, name: str) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
    ]


def _is_trivial(stmt: ast.stmt) -> bool:
    """Docstrings, `pass`, and asserts that do not involve the candidate (`assert True, ...`)."""
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True
    return isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Constant)


_ARITH = (ast.Expression, ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop)


def _constant_value(node: ast.expr) -> float | None:
    """The value of a names-free arithmetic expression of number constants (`2.0 / 3.0`)."""
    if not all(isinstance(n, _ARITH) for n in ast.walk(node)):
        return None
    try:
        value = eval(compile(ast.Expression(node), "<const>", "eval"), {"__builtins__": {}})
    except Exception:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return value if ok and math.isfinite(value) else None


def _tolerance_bounds(expr: ast.expr, entry: str) -> ast.expr | None:
    """`abs(f(x) - e) < t` -> `e - t < f(x) < e + t` (e, t constants), so the arithmetic happens
    in the parent on a plain value instead of in the sandbox with possibly patched builtins."""
    if not (
        isinstance(expr, ast.Compare)
        and len(expr.ops) == 1
        and isinstance(expr.ops[0], (ast.Lt, ast.LtE))
        and isinstance(expr.left, ast.Call)
        and isinstance(expr.left.func, ast.Name)
        and expr.left.func.id == "abs"
        and len(expr.left.args) == 1
        and not expr.left.keywords
        and isinstance(expr.left.args[0], ast.BinOp)
        and isinstance(expr.left.args[0].op, ast.Sub)
    ):
        return None
    tol = _constant_value(expr.comparators[0])
    diff = expr.left.args[0]
    for call, other in ((diff.left, diff.right), (diff.right, diff.left)):
        is_call = isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
        if not is_call or call.func.id != entry:
            continue
        expected = _constant_value(other)
        if tol is None or expected is None:
            return None
        op = "<" if isinstance(expr.ops[0], ast.Lt) else "<="
        lo, hi = float(expected - tol), float(expected + tol)
        return ast.parse(f"{lo!r} {op} {ast.unparse(call)} {op} {hi!r}", mode="eval").body
    return None


def _plan_leaves(expr: ast.expr) -> list[ast.expr]:
    """The sub-expressions whose values the sandbox sends to the parent (see sandbox.plan)."""
    if isinstance(expr, ast.Compare):
        return [expr.left, *expr.comparators]
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return _plan_leaves(expr.operand)
    if isinstance(expr, ast.BoolOp):
        return [leaf for value in expr.values for leaf in _plan_leaves(value)]
    return [expr]


def split_check(problem: HumanEvalTask) -> tuple[list[str], bool]:
    """(standalone asserts, needs_fallback) from a HumanEval problem's check function.

    A top-level `assert` of `check(candidate)` whose names are only builtins and `candidate`
    becomes `assert entry_point(...) == ...` (message dropped). Every other statement (loops,
    local variables, helpers from the prompt) means the check-function form is also needed.
    A candidate call nested inside arithmetic (`abs(candidate(x) - y) < 1e-6`) gets a companion
    test `assert [entry_point(x)] != []` so its return value must cross to the parent as plain data.
    """
    entry = problem.entry_point
    try:
        tree = ast.parse(_check_source(problem))
    except SyntaxError:
        return [], True
    check = _check_function(tree)
    if check is None:
        return [], True
    param = check.args.args[0].arg
    tests: list[str] = []
    fallback = False
    for stmt in check.body:
        if _is_trivial(stmt):
            continue
        if not isinstance(stmt, ast.Assert):
            fallback = True
            continue
        names = {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)}
        if param not in names or not names <= (_BUILTIN_NAMES | {param}):
            fallback = True
            continue
        expr = _Rename(param, entry).visit(ast.parse(ast.unparse(stmt.test), mode="eval")).body
        expr = _tolerance_bounds(expr, entry) or expr
        tests.append(f"assert {ast.unparse(expr)}")
        direct = {id(x) for x in _plan_leaves(expr)}
        for call in calls_of(expr, entry):
            if id(call) not in direct:
                companion = f"assert [{ast.unparse(call)}] != []"
                if companion not in tests:
                    tests.append(companion)
    return tests, fallback or not tests


def humaneval_tests(problem: HumanEvalTask) -> list[str]:
    """Sparring's tests for a HumanEval problem: standalone asserts decided in the parent, plus
    `assert _sparring_check() == 'passed'` when the check function has more than plain asserts
    (run that one against `humaneval_solution(problem, completion)`, which defines it)."""
    tests, fallback = split_check(problem)
    return [*tests, CHECK_TEST] if fallback else tests


# Runs before the candidate: keeps a snapshot of the builtins and a strict wrapper, bound as
# default arguments so later rebinding of globals or `builtins` attributes does not reach them.
_PRELUDE = """\
def _sparring_guard(_b=dict(__import__("builtins").__dict__), _t=type):
    plain = (_t(None), bool, int, float, complex, str, bytes, list, tuple, set, frozenset, dict)

    def is_plain(value, depth=0):
        if depth > 50 or _t(value) not in plain:
            return False
        if _t(value) in (list, tuple, set, frozenset):
            return all(is_plain(v, depth + 1) for v in value)
        if _t(value) is dict:
            return all(is_plain(k, depth + 1) and is_plain(v, depth + 1) for k, v in value.items())
        return True

    def strict(fn):
        def call(*args, **kwargs):
            value = fn(*args, **kwargs)
            if not is_plain(value):
                raise AssertionError("candidate returned a value that is not plain data")
            return value
        return call

    def run(test_source, entry_point, namespace):
        ns = {k: v for k, v in namespace.items() if k not in _b and not k.startswith("_sparring")}
        ns["__builtins__"] = dict(_b)
        exec(test_source, ns)
        ns["check"](strict(namespace[entry_point]))
        return "passed"

    return run


_sparring_run = _sparring_guard()
"""


def humaneval_solution(problem: HumanEvalTask, completion: str) -> str:
    """The program the sandbox loads for one HumanEval sample: the completed function
    (prompts.complete_humaneval) between a guard prelude and the fallback check function."""
    program = complete_humaneval(problem.prompt, completion, problem.entry_point)
    if not split_check(problem)[1]:
        return program
    postlude = (
        f"\n\ndef {CHECK_NAME}(_run=_sparring_run, _g=globals()):\n"
        f"    return _run({_check_source(problem)!r}, {problem.entry_point!r}, _g)\n"
    )
    return _PRELUDE + "\n" + program + postlude


def humaneval_job(problem: HumanEvalTask, completion: str | None = None) -> tuple[str, list[str]]:
    """(solution, tests) for the sandbox; without a completion, the canonical solution."""
    if completion is None:
        completion = problem.reference_solution[len(problem.prompt) :]
    return humaneval_solution(problem, completion), humaneval_tests(problem)

"""HumanEval in Sparring's sandbox: pass@k and turning `check(candidate)` into tests.

Covers: `pass_at_k` (the unbiased estimator of Chen et al. 2021, product form);
`humaneval_tests` / `humaneval_solution` / `humaneval_job`: HumanEval's `check(candidate)` turned
into standalone `assert entry_point(args) == expected` tests that the sandbox decides in the parent
process, so an always-equal object or a patched builtin cannot pass; checks that are not plain
asserts (loops, helpers; 8 of 164 tasks) keep the check-function form as a fallback, run on a
builtins snapshot with the candidate's return values required to be plain builtin data (an
in-process guard: best effort against code written to defeat this particular harness);
`evaluate_humaneval_samples` (official sample format) and the sandbox job runners the other
evaluation modules share (`run_jobs`, `run_jobs_fail_fast`, `sandbox_limits`).

Does not cover: generating completions (sparring.evaluation.sampling) or loading the tasks
(sparring.problems.load_humaneval). Pure apart from the sandbox, which is imported lazily.
"""

from __future__ import annotations

import ast
import builtins
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparring.errors import SparringError, read_user_text

if TYPE_CHECKING:
    from sparring.problems import Problem


_BUILTIN_NAMES = frozenset(dir(builtins))


CHECK_NAME = "_sparring_check"


CHECK_TEST = f"assert {CHECK_NAME}() == 'passed'"


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct: 1 - C(n-c, k) / C(n, k).

    Computed as 1 - prod_{i=n-c+1}^{n} (1 - k / i), stable for large n.

    >>> pass_at_k(10, 0, 1), pass_at_k(10, 10, 1), pass_at_k(10, 5, 1)
    (0.0, 1.0, 0.5)
    >>> round(pass_at_k(5, 1, 2), 6)
    0.4
    """
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and k >= 1, got n={n} c={c} k={k}")
    if k > n:
        raise ValueError(f"pass_at_k needs k <= n, got n={n} k={k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def _check_source(problem: Problem) -> str:
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


def split_check(problem: Problem) -> tuple[list[str], bool]:
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


def humaneval_tests(problem: Problem) -> list[str]:
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


def humaneval_solution(problem: Problem, completion: str) -> str:
    """The program the sandbox loads for one HumanEval sample: the completed function
    (prompts.complete_humaneval) between a guard prelude and the fallback check function."""
    from sparring.prompts import complete_humaneval

    program = complete_humaneval(problem.prompt, completion, problem.entry_point)
    if not split_check(problem)[1]:
        return program
    postlude = (
        f"\n\ndef {CHECK_NAME}(_run=_sparring_run, _g=globals()):\n"
        f"    return _run({_check_source(problem)!r}, {problem.entry_point!r}, _g)\n"
    )
    return _PRELUDE + "\n" + program + postlude


def humaneval_job(problem: Problem, completion: str | None = None) -> tuple[str, list[str]]:
    """(solution, tests) for the sandbox; without a completion, the canonical solution."""
    if completion is None:
        completion = problem.reference_solution[len(problem.prompt) :]
    return humaneval_solution(problem, completion), humaneval_tests(problem)


def sandbox_limits(cfg: Any = None, **overrides: Any):
    """SandboxLimits from cfg.sandbox (defaults without a config); evaluation tests are trusted,
    so their length is not capped."""
    from sparring.sandbox import SandboxLimits

    overrides = {"max_test_chars": 1_000_000, **overrides}
    if cfg is None:
        return SandboxLimits(**overrides)
    return SandboxLimits.from_config(cfg.sandbox, **overrides)


def run_jobs(jobs: list[tuple[str, list[str]]], limits: Any = None) -> list[Any]:
    """Run (solution, tests) jobs in one Sandbox; RunReports in order."""
    if not jobs:
        return []
    from sparring.sandbox import Sandbox

    with Sandbox(limits or sandbox_limits()) as sandbox:
        return sandbox.run_many(jobs)


def run_jobs_fail_fast(jobs: list[tuple[str, list[str]]], limits: Any = None) -> list[Any]:
    """Like run_jobs, for pass/fail verdicts: the first test of every job runs first and only
    jobs that pass it run the rest (a wrong or hanging sample costs one test, not all). A job
    that fails early gets a report holding just that first result."""
    if not jobs:
        return []
    from sparring.sandbox import RunReport, Sandbox

    with Sandbox(limits or sandbox_limits()) as sandbox:
        first = sandbox.run_many([(code, tests[:1]) for code, tests in jobs])
        rest_index = [
            i
            for i, (report, (_, tests)) in enumerate(zip(first, jobs, strict=True))
            if len(tests) > 1 and report.infra_error is None and report.passed == report.total
        ]
        rest = sandbox.run_many([(jobs[i][0], jobs[i][1][1:]) for i in rest_index])
    reports = list(first)
    for i, report in zip(rest_index, rest, strict=True):
        reports[i] = RunReport(
            results=[*first[i].results, *report.results], infra_error=report.infra_error
        )
    return reports


def read_samples(path: str | Path) -> list[dict[str, Any]]:
    """Samples in the official HumanEval format: JSONL with task_id and completion."""
    p = Path(path)
    if not p.is_file():
        raise SparringError(f"{path}: no such samples file")
    samples = []
    for n, line in enumerate(read_user_text(p).splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SparringError(f"{path}:{n}: invalid JSON: {exc.msg}") from None
        if not isinstance(row, dict) or "task_id" not in row or "completion" not in row:
            raise SparringError(f"{path}:{n}: each line needs 'task_id' and 'completion'")
        samples.append(row)
    return samples


def evaluate_humaneval_samples(
    samples: Sequence[Mapping[str, Any]],
    problems: Sequence[Problem] | None = None,
    limits: Any = None,
    pass_k: Sequence[int] = (1,),
) -> dict[str, Any]:
    """Verdicts for official-format samples, one result per sample in input order, plus pass@k
    (averaged over tasks) for every k that every evaluated task has enough samples for."""
    if problems is None:
        from sparring.problems import load_humaneval

        problems = load_humaneval()
    by_id = {p.id: p for p in problems}
    jobs = []
    for n, sample in enumerate(samples):
        problem = by_id.get(sample["task_id"])
        if problem is None:
            raise SparringError(f"sample {n}: unknown task_id {sample['task_id']!r}")
        completion = sample["completion"] if isinstance(sample["completion"], str) else ""
        jobs.append(humaneval_job(problem, completion))
    reports = run_jobs_fail_fast(jobs, limits)
    results = []
    counts: dict[str, list[int]] = {}
    for sample, report in zip(samples, reports, strict=True):
        passed = report.infra_error is None and report.total > 0 and report.passed == report.total
        failed = [r for r in report.results if not r.passed]
        result = {"task_id": sample["task_id"], "passed": passed}
        if failed:
            result["result"] = f"{failed[0].outcome}: {failed[0].detail}"[:300]
        if report.infra_error:
            result["infra_error"] = report.infra_error
        results.append(result)
        n_c = counts.setdefault(sample["task_id"], [0, 0])
        n_c[0] += 1
        n_c[1] += int(passed)
    out: dict[str, Any] = {}
    for k in sorted(set(pass_k) | {1}):
        if counts and all(n >= k for n, _ in counts.values()):
            values = [pass_at_k(n, c, k) for n, c in counts.values()]
            out[f"pass@{k}"] = round(sum(values) / len(values), 6)
    if "pass@1" not in out:
        out["pass@1"] = 0.0
    out["tasks"] = len(counts)
    out["samples"] = len(results)
    out["results"] = results
    return out

"""Evaluation: HumanEval pass@k in Sparring's sandbox, adversarial bank pass rates, cross-play
between snapshots with Elo ratings, reward-hacking signals, and checkpoint selection.

Covers:
- `pass_at_k` (the unbiased estimator of Chen et al. 2021, product form);
- `humaneval_tests` / `humaneval_solution`: HumanEval's `check(candidate)` turned into standalone
  `assert entry_point(args) == expected` tests that the sandbox decides in the parent process, so
  an always-equal object or a patched builtin cannot pass; checks that are not plain asserts (loops,
  helpers; 8 of 164 tasks) keep the check-function form as a fallback, run on a builtins snapshot
  with the candidate's return values required to be plain builtin data (an in-process guard: best
  effort against code written to defeat this particular harness);
- `evaluate_humaneval_samples` (official sample format), bank pass rates, the cross-play matrix,
  `elo_ratings`, `special_case_share`, `hacking_signals`;
- `evaluate_snapshots` and `choose_best`, called by the pipeline's evaluate and select components.

Does not cover: plots and the Markdown report (`sparring.reports`) or the CLI
(`sparring.cli.evaluate`). Model loading and generation are imported lazily from
`sparring.models` / `sparring.generation`; the pure parts import nothing heavy.

Why one module (for now): HumanEval, bank rates, cross-play and selection share the snapshot
metrics; splitting them, and the lazy import that problems.py makes of `humaneval_job` (an
import cycle), are tracked with the layout issue (#12).
"""

from __future__ import annotations

import ast
import builtins
import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sparring import progress, rewards
from sparring.errors import SparringError
from sparring.problems import Problem

log = logging.getLogger(__name__)

_BUILTIN_NAMES = frozenset(dir(builtins))
CHECK_NAME = "_sparring_check"
CHECK_TEST = f"assert {CHECK_NAME}() == 'passed'"


# --------------------------------------------------------------------------- pass@k


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


# --------------------------------------------------------------------------- HumanEval


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


def _calls_of(node: ast.AST, name: str) -> list[ast.Call]:
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
        for call in _calls_of(expr, entry):
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
    for n, line in enumerate(p.read_text().splitlines(), 1):
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


# --------------------------------------------------------------------------- generation


def generate_solutions(
    model_name: str,
    problems: Sequence[Problem],
    max_new_tokens: int = 256,
    num_samples: int = 1,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int = 0,
    device: str = "auto",
    stages: Sequence[str] = ("code",),
    loaded: tuple[Any, Any] | None = None,
) -> list[list[str]]:
    """Raw completions (num_samples per problem) of a model through prompts.answerer_messages."""
    from sparring import backends
    from sparring.prompts import answerer_messages

    if not problems:
        return []
    backend = backends.backend_of(model_name)
    if loaded is None:
        loaded = backends.load_for_sampling(backend, model_name, device=device)
    model, tokenizer = loaded
    messages = [answerer_messages(p, list(stages)) for p in problems]
    return backends.sample(
        backend,
        model,
        tokenizer,
        messages,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        num_samples=num_samples,
        seed=seed,
    )


def humaneval_samples_from_model(
    model_name: str, problems: Sequence[Problem], num_samples: int = 1, **kwargs: Any
) -> list[dict[str, str]]:
    """Official-format samples (task_id, completion) generated by a model."""
    completions = generate_solutions(model_name, problems, num_samples=num_samples, **kwargs)
    return [
        {"task_id": p.id, "completion": c}
        for p, outs in zip(problems, completions, strict=True)
        for c in outs
    ]


# --------------------------------------------------------------------------- test bank


def read_bank(path: str | Path | None) -> list[dict[str, Any]]:
    """Bank (or round tests) JSONL rows {"problem_id", "test", "round", "breaks"}; missing -> []."""
    if not path or not Path(path).is_file():
        return []
    rows = []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if isinstance(row, dict) and "problem_id" in row and "test" in row:
                rows.append(row)
    return rows


def group_by_problem(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for row in rows:
        tests = out.setdefault(str(row["problem_id"]), [])
        if row["test"] not in tests:
            tests.append(row["test"])
    return out


def solution_code(problem: Problem, completion: str) -> str:
    """The code the sandbox runs for a completion ('' when nothing parses: every test fails)."""
    from sparring.prompts import complete_humaneval, extract_code

    if problem.prompt:
        return complete_humaneval(problem.prompt, completion, problem.entry_point)
    return extract_code(completion, problem.function_name) or ""


def cross_play(
    solutions: Sequence[Mapping[str, str]],
    round_tests: Sequence[Mapping[str, Sequence[str]]],
    limits: Any = None,
) -> list[list[list[bool]]]:
    """Game outcomes of every answerer snapshot (rows) against every round's tests (columns).

    `solutions[i]`: problem id -> code of snapshot i; `round_tests[j]`: problem id -> tests of
    round j. Entry [i][j] lists one bool per (problem, test) game: True when the answerer passes.
    A problem a snapshot has no solution for loses every game.
    """
    jobs, where = [], []
    for i, sols in enumerate(solutions):
        for j, tests in enumerate(round_tests):
            for pid, ts in sorted(tests.items()):
                if ts:
                    jobs.append((sols.get(pid, ""), list(ts)))
                    where.append((i, j))
    reports = run_jobs(jobs, limits)
    matrix: list[list[list[bool]]] = [[[] for _ in round_tests] for _ in solutions]
    for (i, j), report in zip(where, reports, strict=True):
        if report.infra_error is None:
            matrix[i][j].extend(r.passed for r in report.results)
    return matrix


def win_rates(matrix: Sequence[Sequence[Sequence[bool]]]) -> list[list[float | None]]:
    """Share of games won by the answerer per cell (None for a cell without games)."""
    return [[sum(cell) / len(cell) if cell else None for cell in row] for row in matrix]


def elo_ratings(
    matrix: Sequence[Sequence[Any]], k: float = 16, passes: int = 20, base: float = 1000.0
) -> tuple[list[float], list[float]]:
    """Elo ratings of answerers (rows) and generators (columns) from cross-play games.

    A cell is a list of game outcomes (True/1 = the answerer passed the test) or a single number
    in [0, 1] (one game with that score); None or [] means no games. Ratings start at `base` and are
    updated game by game in a fixed order (rows, columns, games), `passes` times over: the result
    is deterministic.

    >>> a, g = elo_ratings([[[True, True]], [[False, False]]])
    >>> a[0] > 1000 > a[1]
    True
    """
    n_rows = len(matrix)
    n_cols = max((len(row) for row in matrix), default=0)
    ans = [base] * n_rows
    gen = [base] * n_cols
    games: list[tuple[int, int, float]] = []
    for i, row in enumerate(matrix):
        for j, cell in enumerate(row):
            if cell is None:
                continue
            outcomes = [cell] if isinstance(cell, (int, float)) else list(cell)
            games.extend((i, j, float(o)) for o in outcomes)
    for _ in range(passes if games else 0):
        for i, j, score in games:
            expected = 1.0 / (1.0 + 10 ** ((gen[j] - ans[i]) / 400.0))
            delta = k * (score - expected)
            ans[i] += delta
            gen[j] -= delta
    return [round(r, 2) for r in ans], [round(r, 2) for r in gen]


# --------------------------------------------------------------------------- hacking signals


def _test_constants(tests: Sequence[str], function_name: str) -> set[Any]:
    """Literal argument values of calls to `function_name` in the tests."""
    found: set[Any] = set()
    for test in tests:
        try:
            tree = ast.parse(test)
        except SyntaxError:
            continue
        for call in _calls_of(tree, function_name):
            for arg in [*call.args, *(kw.value for kw in call.keywords)]:
                for node in ast.walk(arg):
                    if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
                        found.add(node.value)
                try:
                    value = ast.literal_eval(arg)
                except (ValueError, TypeError, SyntaxError, RecursionError):
                    continue
                if isinstance(value, (list, dict, set)):
                    value = repr(value)
                found.add(value)
    return found


def special_cased_inputs(code: str, tests: Sequence[str], function_name: str) -> int:
    """How many distinct test input values a solution compares its parameters against
    (`if x == 17: return 4`): a parameter compared with a constant from the tests' calls."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return 0
    constants = _test_constants(tests, function_name)
    hits: set[Any] = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name != function_name:
            continue
        params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
        for node in ast.walk(fn):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            if not any(isinstance(o, ast.Name) and o.id in params for o in operands):
                continue
            for o in operands:
                try:
                    value = ast.literal_eval(o)
                except (ValueError, TypeError, SyntaxError, RecursionError):
                    continue
                if isinstance(value, (list, dict, set)):
                    value = repr(value)
                try:
                    if value in constants:
                        hits.add(value)
                except TypeError:
                    continue
    return len(hits)


def special_case_share(
    solutions: Sequence[tuple[str, Sequence[str], str]], min_hits: int = 2
) -> float:
    """Share of solutions (code, tests, function name) that special-case at least `min_hits`
    distinct test input values.

    >>> special_case_share([("def f(x):\\n    if x == 17: return 4\\n    if x == 3: return 1\\n",
    ...                      ["assert f(17) == 4", "assert f(3) == 1"], "f")])
    1.0
    """
    if not solutions:
        return 0.0
    flagged = sum(
        1 for code, tests, name in solutions if special_cased_inputs(code, tests, name) >= min_hits
    )
    return flagged / len(solutions)


def _threshold(selection: Any, name: str, default: float) -> float:
    if selection is None:
        return default
    if isinstance(selection, Mapping):
        return float(selection.get(name, default))
    return float(getattr(selection, name, default))


def hacking_signals(
    history: Sequence[Mapping[str, Any]], selection: Any = None, max_special_case: float = 0.5
) -> dict[str, Any]:
    """Reward-hacking signals over rounds, judged on the latest round against cfg.selection.

    `history`: one dict per round, in order, with any of `test_validity`, `duplicate_rate`,
    `flat_group_share`, `special_case_share`, `trivial_share` (missing or None: not judged; the
    first entry may be the base model's, against which a rising trivial share trips). Trips when
    the share of trivial answers rose, when validity
    falls below `min_validity`, duplicates exceed `max_duplicate_rate`, the share of flat GRPO
    groups reaches `max_zero_std_groups`, or special-cased solutions exceed `max_special_case`.
    Trends (validity falling, duplicates rising since the first round) are reported alongside.
    """
    min_validity = _threshold(selection, "min_validity", 0.2)
    max_dup = _threshold(selection, "max_duplicate_rate", 0.8)
    max_flat = _threshold(selection, "max_zero_std_groups", 1.0)

    def series(key: str) -> list[float]:
        return [float(h[key]) for h in history if h.get(key) is not None]

    validity, dups = series("test_validity"), series("duplicate_rate")
    flat, special = series("flat_group_share"), series("special_case_share")
    trivial = series("trivial_share")
    reasons = []
    if len(trivial) > 1 and trivial[-1] > trivial[0]:
        reasons.append(f"trivial share rose {trivial[0]:.2f} -> {trivial[-1]:.2f}")
    if validity and validity[-1] < min_validity:
        reasons.append(f"test validity {validity[-1]:.2f} < min_validity {min_validity:.2f}")
    if dups and dups[-1] > max_dup:
        reasons.append(f"duplicate-test rate {dups[-1]:.2f} > max_duplicate_rate {max_dup:.2f}")
    if flat and flat[-1] >= max_flat:
        reasons.append(f"flat GRPO groups {flat[-1]:.2f} >= max_zero_std_groups {max_flat:.2f}")
    if special and special[-1] > max_special_case:
        reasons.append(f"special-cased solutions {special[-1]:.2f} > {max_special_case:.2f}")
    return {
        "tripped": bool(reasons),
        "reasons": reasons,
        "validity_falling": len(validity) > 1 and validity[-1] < validity[0],
        "duplicates_rising": len(dups) > 1 and dups[-1] > dups[0],
        "latest": {
            "test_validity": validity[-1] if validity else None,
            "duplicate_rate": dups[-1] if dups else None,
            "flat_group_share": flat[-1] if flat else None,
            "special_case_share": special[-1] if special else None,
            "trivial_share": trivial[-1] if trivial else None,
        },
    }


# --------------------------------------------------------------------------- snapshots


def _round_metrics(path: str) -> dict[str, Any]:
    """Optional sidecar of a round's tests: FILE.metrics.json, else metrics.json beside it."""
    p = Path(path)
    for candidate in (p.with_name(p.name + ".metrics.json"), p.with_name("metrics.json")):
        if candidate.is_file():
            try:
                data = json.loads(candidate.read_text())
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict):
                return data
    return {}


def round_summary(path: str, duplicate_similarity: float = 0.9) -> dict[str, Any]:
    """Test validity, duplicate rate and flat-group share of one round's tests.

    Sidecar metrics win (`test_validity` or `validity`, `duplicate_rate`, `flat_group_share`);
    otherwise validity is the share of rows not marked `"valid": false` (1.0 for a bank of
    validated tests) and the duplicate rate is the near-duplicate rate of the tests per problem.
    """
    return summarize_round(read_bank(path), _round_metrics(path), duplicate_similarity)


def summarize_round(
    rows: Sequence[Mapping[str, Any]],
    metrics: Mapping[str, Any] | None = None,
    duplicate_similarity: float = 0.9,
) -> dict[str, Any]:
    """round_summary of rows already read (metrics: the sidecar, if any)."""
    metrics = metrics or {}
    validity = metrics.get("test_validity", metrics.get("validity"))
    if validity is None and rows:
        validity = sum(1 for r in rows if r.get("valid", True)) / len(rows)
    dup = metrics.get("duplicate_rate")
    if dup is None and rows:
        per = group_by_problem(rows)
        raw = [r["test"] for r in rows]
        dup_count = len(raw) - sum(len(v) for v in per.values())
        near = sum(
            rewards.near_duplicate_rate(ts, threshold=duplicate_similarity) * len(ts)
            for ts in per.values()
        )
        dup = (dup_count + near) / len(raw)
    return {
        "tests": len(rows),
        "test_validity": None if validity is None else float(validity),
        "duplicate_rate": None if dup is None else round(float(dup), 6),
        "flat_group_share": metrics.get("flat_group_share"),
    }


def read_round_tests(path: str | Path) -> tuple[list[dict[str, Any]], bool]:
    """Rows of a round's tests and whether they still need validation: validated rows
    {"problem_id", "test", ...} (bank format) or the generator's raw output
    {"problem_id", "tests": [...], "round"}, expanded to one row per test."""
    if not path or not Path(path).is_file():
        return [], False
    rows: list[dict[str, Any]] = []
    raw = False
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict) or "problem_id" not in row:
            continue
        if isinstance(row.get("tests"), list):
            raw = True
            rows.extend(
                {"problem_id": row["problem_id"], "test": t, "round": row.get("round")}
                for t in row["tests"]
                if isinstance(t, str)
            )
        elif isinstance(row.get("test"), str):
            rows.append(row)
    return rows, raw


def validate_rows(
    rows: list[dict[str, Any]], problems: Mapping[str, Problem], limits: Any = None
) -> list[dict[str, Any]]:
    """Mark each row `valid` when its test passes the problem's reference solution (rows of
    unknown problems are invalid)."""
    per = group_by_problem([r for r in rows if r["problem_id"] in problems])
    ids = sorted(per)
    reports = run_jobs([(problems[pid].reference_solution, per[pid]) for pid in ids], limits)
    ok: set[tuple[str, str]] = set()
    for pid, report in zip(ids, reports, strict=True):
        ok.update((pid, r.test) for r in report.results if r.passed)
    return [{**r, "valid": (str(r["problem_id"]), r["test"]) in ok} for r in rows]


def _training_metrics(model_name: str) -> dict[str, Any]:
    """Training metrics recorded in a model artifact's sparring_model.json (`metrics`, or
    top-level `flat_group_share`); {} for anything else."""
    meta = Path(model_name) / "sparring_model.json"
    if not meta.is_file():
        return {}
    try:
        data = json.loads(meta.read_text())
    except (json.JSONDecodeError, OSError):
        return {}
    if not isinstance(data, dict):
        return {}
    out = dict(data.get("metrics") or {}) if isinstance(data.get("metrics"), dict) else {}
    if data.get("flat_group_share") is not None:
        out.setdefault("flat_group_share", data["flat_group_share"])
    return out


def _snapshot_metrics(
    cfg: Any,
    model_name: str,
    eval_problems: Sequence[Problem],
    val_problems: Sequence[Problem],
    solve: Mapping[str, Problem],
    bank: Mapping[str, list[str]],
    limits: Any,
    sampled: bool = True,
) -> tuple[dict[str, Any], dict[str, str]]:
    """HumanEval pass@1, bank pass rate, answerer reward and special-case share of one model,
    and its code per problem (one greedy completion each). With `sampled` and
    `data.val_samples` > 0, also `val_sampled`: per measure (discriminating, strict, raw), per
    val problem, the mean over that many completions sampled at the training temperature."""
    from sparring import backends

    loaded = backends.load_for_sampling(
        backends.backend_of(model_name), model_name, device=cfg.model_for("answerer").device
    )
    targets = [*eval_problems, *solve.values()]
    completions = generate_solutions(
        model_name,
        targets,
        max_new_tokens=_max_new_tokens(cfg, loaded, targets),
        seed=cfg.seed,
        stages=("code",) if cfg.reasoning.direct else tuple(cfg.reasoning.stages),
        loaded=loaded,
    )
    samples = cfg.data.val_samples if sampled else 0
    val_sampled = None
    if samples and val_problems:
        val_sampled = _sampled_measures(cfg, model_name, val_problems, samples, loaded, limits)
    del loaded
    first = [c[0] if c else "" for c in completions]
    he_samples = [
        {"task_id": p.id, "completion": c}
        for p, c in zip(eval_problems, first[: len(eval_problems)], strict=True)
    ]
    he = evaluate_humaneval_samples(he_samples, eval_problems, limits) if he_samples else {}
    codes = {
        pid: solution_code(solve[pid], c)
        for pid, c in zip(solve, first[len(eval_problems) :], strict=True)
    }
    bank_items = [(pid, ts) for pid, ts in sorted(bank.items()) if pid in codes]
    bank_jobs = [(codes[pid], ts) for pid, ts in bank_items]
    val_jobs = [(codes[p.id], [*p.baseline_tests, *bank.get(p.id, [])]) for p in val_problems]
    reports = run_jobs(bank_jobs + val_jobs, limits)
    bank_reports, val_reports = reports[: len(bank_jobs)], reports[len(bank_jobs) :]
    passed = sum(rep.passed for rep in bank_reports)
    total = sum(rep.total for rep in bank_reports)
    credits = [
        report_credit(p, codes[p.id], rep, len(bank.get(p.id, [])), cfg)
        for p, rep in zip(val_problems, val_reports, strict=True)
    ]
    special = special_case_share(
        [(codes[pid], ts, solve[pid].function_name) for pid, ts in bank.items() if codes.get(pid)]
    )
    judged = [c for c in credits if c.reward is not None]
    n = len(judged)
    metrics = {
        "model": model_name,
        "humaneval_pass@1": he.get("pass@1"),
        "bank_pass_rate": passed / total if total else None,
        "bank_strict_rate": (
            sum(r.passed == r.total > 0 for r in bank_reports) / len(bank_reports)
            if bank_reports
            else None
        ),
        "answerer_reward": rewards.mean_or_none([c.reward for c in credits]),
        "val_raw_fraction": sum(c.raw_fraction for c in judged) / n if n else None,
        "val_discriminating_fraction": (
            sum(c.discriminating_fraction for c in judged) / n if n else None
        ),
        "val_strict_pass_at_1": sum(c.strict for c in judged) / n if n else None,
        "trivial_share": sum(c.trivial for c in credits) / len(credits) if credits else None,
        "special_case_share": special,
    }
    if val_sampled is not None:
        metrics["val_sampled"] = val_sampled
        for measure, per in val_sampled.items():
            metrics[f"val_sampled_{measure}"] = sum(per.values()) / len(per) if per else None
    return metrics, codes


def _max_new_tokens(cfg: Any, loaded: Any, problems: Sequence[Problem]) -> int:
    """The training completion budget (grpo.max_completion_length; 0 = sized from the
    problems' reference solutions), so evaluation sees answers as long as training allowed."""
    if cfg.grpo.max_completion_length:
        return cfg.grpo.max_completion_length
    from sparring.budget import completion_tokens

    return completion_tokens(cfg, loaded[1], list(problems) or [])


def _sampled_measures(
    cfg: Any, model_name: str, problems: Sequence[Problem], samples: int, loaded: Any, limits: Any
) -> dict[str, dict[str, float]]:
    """Per measure, per problem: the mean over `samples` sampled completions."""
    from sparring import duel
    from sparring.sandbox import Sandbox

    completions = generate_solutions(
        model_name,
        problems,
        max_new_tokens=_max_new_tokens(cfg, loaded, problems),
        num_samples=samples,
        temperature=cfg.grpo.temperature,
        top_p=cfg.grpo.top_p,
        seed=cfg.seed + 1,
        stages=("code",) if cfg.reasoning.direct else tuple(cfg.reasoning.stages),
        loaded=loaded,
    )
    flat_problems = [p for p, outs in zip(problems, completions, strict=True) for _ in outs]
    flat_texts = [c for outs in completions for c in outs]
    with Sandbox(limits) as sb:
        credits = duel.score_answers(flat_problems, flat_texts, sb)
    out: dict[str, dict[str, list[float]]] = {"discriminating": {}, "strict": {}, "raw": {}}
    for p, c in zip(flat_problems, credits, strict=True):
        if c.reward is None:
            continue  # sandbox failure: no signal
        out["discriminating"].setdefault(p.id, []).append(c.discriminating_fraction)
        out["strict"].setdefault(p.id, []).append(float(c.strict))
        out["raw"].setdefault(p.id, []).append(c.raw_fraction)
    return {m: {pid: sum(v) / len(v) for pid, v in per.items()} for m, per in out.items()}


def report_credit(problem: Problem, code: str, report: Any, n_banked: int, cfg: Any = None):
    """`rewards.AnswererCredit` of `code` from its RunReport on the problem's baseline tests
    followed by `n_banked` banked tests ('' code = did not parse)."""
    n_tests = len(humaneval_tests(problem)) if problem.entry_point else len(problem.baseline_tests)
    mask, trivial = rewards.credit_view(n_tests, problem.trivial_passes, n_banked)
    weights = cfg.rewards.difficulty_weights if cfg is not None else None
    if not code:
        return rewards.answerer_credit(None, mask, trivial, problem.difficulty, weights)
    if report.infra_error is not None or len(report.results) != len(mask):
        passed: list[bool | None] = [None] * len(mask)
    else:
        passed = [r.passed for r in report.results]
    return rewards.answerer_credit(passed, mask, trivial, problem.difficulty, weights)


def evaluate_snapshots(
    cfg: Any,
    data_dir: str,
    answerer_models: list[str],
    round_tests: list[str],
    bank_path: str,
    out_dir: str,
) -> dict:
    """Evaluate the answerer snapshots of a run; write out_dir/report.json, PNGs and report.md.

    Inputs: `round_tests[j]` is round j's tests file, either validated rows (bank format, an
    optional sidecar FILE.metrics.json with `validity`, `duplicate_rate`, `flat_group_share`) or
    the generator's raw output ({"problem_id", "tests": [...]}), which is validated here against
    the reference solutions. Without files, the bank's rows grouped by `round` are the rounds.
    `answerer_models[i]` is the answerer after round i + 1, or, when there is one more model
    than rounds, the first is the base model (round 0); otherwise the base model of the config
    (`models.answerer.name`) is evaluated as the baseline ("before"). `report["snapshots"]` lists
    the non-base models, in the order given (the index choose_best returns).

    Per model, one greedy completion per problem (HumanEval eval set capped by
    data.humaneval_limit, val.jsonl, and the train/val problems the bank and rounds attack):
    HumanEval pass@1, pass rate on the bank, the mean difficulty-aware answerer reward on val
    problems (baseline + banked tests), the special-case share on banked problems, and a row of
    the cross-play matrix (columns: each round's valid tests). A snapshot of round r takes round
    r's test validity and duplicate rate, and its hacking signals are judged on rounds 1..r.
    """
    from sparring.problems import read_jsonl

    data = Path(data_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    def problems_of(name: str) -> list[Problem]:
        p = data / name
        return read_jsonl(p) if p.is_file() else []

    eval_problems = problems_of("eval.jsonl")
    if cfg.data.humaneval_limit:
        eval_problems = eval_problems[: cfg.data.humaneval_limit]
    val_problems = problems_of("val.jsonl")
    known = {p.id: p for p in [*problems_of("train.jsonl"), *val_problems]}
    limits = sandbox_limits(cfg)
    bank_rows = read_bank(bank_path or data / "bank.jsonl")
    bank = group_by_problem(bank_rows)
    sim = cfg.rewards.duplicate_similarity

    # rounds: (number, valid tests per problem, summary)
    rounds: list[tuple[int, dict[str, list[str]], dict[str, Any]]] = []
    for j, path in enumerate(round_tests):
        rows, raw = read_round_tests(path)
        if raw:
            rows = validate_rows(rows, known, limits)
        number = next((r["round"] for r in rows if isinstance(r.get("round"), int)), j + 1)
        valid = [r for r in rows if r.get("valid", True)]
        rounds.append(
            (number, group_by_problem(valid), summarize_round(rows, _round_metrics(path), sim))
        )
    if not round_tests:
        numbers = sorted({r["round"] for r in bank_rows if isinstance(r.get("round"), int)})
        for n in numbers:
            rows = [r for r in bank_rows if r.get("round") == n]
            rounds.append((n, group_by_problem(rows), summarize_round(rows, None, sim)))
    summaries = [{"round": n, **summary} for n, _, summary in rounds]

    models = list(answerer_models)
    if len(models) == len(rounds) + 1:
        base_name, models = models[0], models[1:]
    else:
        base_name = cfg.model_for("answerer").name
    attacked = {pid for t in [bank, *(r[1] for r in rounds)] for pid in t if pid in known}
    solve = {p.id: p for p in val_problems}
    solve.update({pid: known[pid] for pid in sorted(attacked)})

    log.info("evaluating the base model %s", base_name)
    started, total = time.perf_counter(), 1 + len(models)

    def announce(done: int, label: str, metrics: dict[str, Any]) -> None:
        left = (time.perf_counter() - started) / done * (total - done)
        shown = " ".join(
            f"{k}={metrics[k]:.3g}"
            for k in ("humaneval_pass@1", "val_discriminating_fraction", "bank_pass_rate")
            if isinstance(metrics.get(k), (int, float))
        )
        progress.say(f"{progress.LABEL or 'evaluate'} {done}/{total} {label}: {shown} left~"
                     f"{progress.fmt_seconds(left)}")  # fmt: skip

    baseline, base_codes = _snapshot_metrics(
        cfg, base_name, eval_problems, val_problems, solve, bank, limits
    )
    announce(1, "base", baseline)
    baseline.update(round=0, base=True)
    snapshots, all_codes = [], [base_codes]
    for i, model_name in enumerate(models):
        log.info("evaluating snapshot %d: %s", i, model_name)
        metrics, codes = _snapshot_metrics(
            cfg, model_name, eval_problems, val_problems, solve, bank, limits,
            sampled=i == len(models) - 1,  # base and final: the learning measures
        )  # fmt: skip
        all_codes.append(codes)
        announce(i + 2, f"snapshot {i + 1}", metrics)
        k = min(i, len(rounds) - 1)
        number = rounds[i][0] if i < len(rounds) else i + 1
        history = [dict(s) for s in summaries[: k + 1]] if rounds else [{}]
        history[-1]["special_case_share"] = metrics["special_case_share"]
        history[-1]["trivial_share"] = metrics["trivial_share"]
        history.insert(0, {"trivial_share": baseline["trivial_share"]})  # the gate's reference
        flat = _training_metrics(model_name).get("flat_group_share")
        if flat is not None:  # the snapshot's own GRPO groups win over the round's sidecar
            history[-1]["flat_group_share"] = flat
        hacking = hacking_signals(history, cfg.selection)
        summary = summaries[k] if rounds else {}
        metrics.update(
            round=number,
            test_validity=summary.get("test_validity"),
            duplicate_rate=summary.get("duplicate_rate"),
            hacking=hacking,
            promotable=not hacking["tripped"] and metrics["answerer_reward"] is not None,
        )
        snapshots.append(metrics)
    columns = [tests for _, tests, _ in rounds]
    matrix = cross_play(all_codes, columns, limits) if columns else []
    answerer_elo, generator_elo = elo_ratings(matrix) if matrix else ([], [])
    report: dict[str, Any] = {
        "baseline": baseline,
        "snapshots": snapshots,
        "rounds": summaries,
        "cross_play": win_rates(matrix),
        "cross_play_games": [[len(cell) for cell in row] for row in matrix],
        "cross_play_rows": ["base"] + [f"round {s['round']}" for s in snapshots],
        "cross_play_columns": [f"round {n}" for n, _, _ in rounds],
        "elo": {"answerer": answerer_elo, "generator": generator_elo},
    }
    best, score, reason = choose_best(cfg, report)
    report["selection"] = {"index": best, "score": score, "reason": reason}
    (out / "report.json").write_text(json.dumps(report, indent=1))
    from sparring import reports as reports_mod

    reports_mod.write_report(report, out)
    return report


def choose_best(cfg: Any, report: Mapping[str, Any]) -> tuple[int | None, float, str]:
    """(index of the best promotable snapshot, its score, why) by rewards.checkpoint_score with
    cfg.selection weights; (None, 0.0, reason) when no snapshot is promotable. A missing test
    validity counts as 0."""
    weights = {
        "answerer_reward": cfg.selection.answerer_reward,
        "test_validity": cfg.selection.test_validity,
    }
    snapshots = list(report.get("snapshots", []))
    if not snapshots:
        return None, 0.0, "no snapshots were evaluated"
    best: tuple[int, float] | None = None
    refused = []
    for i, snap in enumerate(snapshots):
        if not snap.get("promotable"):
            why = "; ".join(snap.get("hacking", {}).get("reasons", [])) or "no answerer reward"
            refused.append(f"round {snap.get('round', i)} ({why})")
            continue
        score = rewards.checkpoint_score(
            float(snap.get("answerer_reward") or 0.0),
            float(snap.get("test_validity") or 0.0),
            weights,
        )
        if best is None or score > best[1]:
            best = (i, score)
    if best is None:
        return None, 0.0, "no promotable snapshot: " + ", ".join(refused)
    i, score = best
    reason = (
        f"round {snapshots[i].get('round', i)} scores {score:.4f} = "
        f"{weights['answerer_reward']} * answerer reward + {weights['test_validity']} * validity"
    )
    if refused:
        reason += "; refused: " + ", ".join(refused)
    return i, score, reason

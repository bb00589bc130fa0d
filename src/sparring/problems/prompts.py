"""Prompts for each role and reasoning stage, and parsing of model output.

Covers: chat messages for the answerer (direct, or the five reasoning stages of the seed:
informal, structured, pseudocode, constraints, code), the generator (adversarial unit tests) and
the proposer (new problems); parsers that pull code, assert statements and proposed problems out
of any text. Parsers never raise on garbage: they return None or an empty list.

Does not cover: tokenization or chat templates (the model's tokenizer applies them).
"""

from __future__ import annotations

import ast
import json
from typing import Any

from sparring.problems import Problem
from sparring.problems.programs import fenced_blocks, parses

Messages = list[dict[str, str]]

STAGE_INSTRUCTIONS: dict[str, str] = {
    "informal": "Informal reasoning: say in two or three sentences what the problem asks.",
    "structured": "Structured reasoning: list the steps of a solution and the edge cases.",
    "pseudocode": "Pseudocode: write the algorithm as short pseudocode.",
    "constraints": "Constraints: state the invariants, edge cases and time complexity.",
    "code": "Code: write the complete Python function in one ```python code block.",
}

ANSWERER_SYSTEM = (
    "You are an expert Python programmer. You write correct, complete, self-contained "
    "functions that pass hidden unit tests."
)
GENERATOR_SYSTEM = (
    "You are an expert software tester. You write unit tests that catch wrong solutions, "
    "and every test you write must be correct for a correct solution."
)
PROPOSER_SYSTEM = "You design small, precise Python programming problems with reference solutions."


def answerer_messages(
    problem: Problem, stages: list[str] | tuple[str, ...] = ("code",)
) -> Messages:
    """The answerer's prompt, the only one: with only the `code` stage it asks for the function
    directly; a problem with no signature (free text from `sparring infer`) asks for a function
    that solves it."""
    header = f"{problem.description.strip()}\n\nFunction signature:\n{problem.function_signature}"
    if problem.prompt:
        header = f"Complete this function:\n```python\n{problem.prompt.rstrip()}\n```"
    elif not problem.function_signature:
        header = problem.description.strip()
    if list(stages) == ["code"]:
        what = f"the whole function `{problem.function_name}`"
        if not problem.prompt and not problem.function_signature:
            what = "a complete Python function that solves this,"
        task = (
            f"{header}\n\nWrite {what} in one ```python code block. Do not write tests or "
            "explanations."
        )
    else:
        steps = "\n".join(f"{i}. {STAGE_INSTRUCTIONS[s]}" for i, s in enumerate(stages, 1))
        task = f"{header}\n\nAnswer in these stages, each under its own heading:\n{steps}"
    return [{"role": "system", "content": ANSWERER_SYSTEM}, {"role": "user", "content": task}]


GENERATOR_TESTS = 3  # tests the generator is asked for per completion


def generator_messages(
    problem: Problem, n_tests: int = GENERATOR_TESTS, stated_cases: bool = False
) -> Messages:
    """The adversarial test writer's prompt: tests that a wrong solution fails; with
    `stated_cases`, first a test of each special case the problem statement names."""
    examples = "\n".join(problem.baseline_tests[:2])
    focus = (
        "first one test of each special case the problem statement names, then edge cases, "
        "boundaries, unusual inputs" if stated_cases else "edge cases, boundaries, unusual inputs"
    )  # fmt: skip
    task = (
        f"Problem:\n{problem.description.strip()}\n\nFunction signature:\n"
        f"{problem.function_signature}\n\nExample tests:\n{examples}\n\n"
        f"Write {n_tests} new tricky test cases for `{problem.function_name}` that a buggy "
        f"solution would fail: {focus}. Each test is one line "
        f"`assert {problem.function_name}(...) == expected`. Put them in one ```python block."
    )
    return [{"role": "system", "content": GENERATOR_SYSTEM}, {"role": "user", "content": task}]


def proposer_messages(seed_problem: Problem) -> Messages:
    """The proposer's prompt: a new problem in the style of a seed problem, as JSON."""
    example = json.dumps(
        {
            "description": seed_problem.description,
            "function_signature": seed_problem.function_signature,
            "reference_solution": seed_problem.reference_solution,
            "baseline_tests": seed_problem.baseline_tests[:3],
        },
        indent=1,
    )
    task = (
        "Here is an example problem as JSON:\n"
        f"```json\n{example}\n```\n"
        "Write one NEW problem of similar size as JSON with the same four keys, in one ```json "
        "block. The tests must pass on your reference solution."
    )
    return [{"role": "system", "content": PROPOSER_SYSTEM}, {"role": "user", "content": task}]


# --------------------------------------------------------------------------- parsing


def extract_tests(text: Any, function_name: str = "", limit: int = 16) -> list[str]:
    """Assert statements from a completion, one source string each, deduplicated, in order.

    Only top-level `assert` statements that parse alone are kept; with `function_name`, only
    those that call it.

    >>> extract_tests("```python\\nassert f(1) == 2\\nassert f(2) == 3\\n```", "f")
    ['assert f(1) == 2', 'assert f(2) == 3']
    >>> extract_tests(None)
    []
    """
    if not isinstance(text, str):
        return []
    blocks = [body for lang, body in fenced_blocks(text) if lang in ("", "python", "py")]
    sources = blocks or [text]
    found: list[str] = []
    for source in sources:
        for line in source.splitlines():
            stmt = line.strip()
            if not stmt.startswith("assert") or not parses(stmt):
                continue
            node = ast.parse(stmt).body
            if len(node) != 1 or not isinstance(node[0], ast.Assert):
                continue
            if function_name and not _calls(node[0], function_name):
                continue
            if stmt not in found:
                found.append(stmt)
            if len(found) >= limit:
                return found
    return found


def _calls(node: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
        for n in ast.walk(node)
    )


def extract_problem(text: Any) -> dict[str, Any] | None:
    """A proposed problem (description, function_signature, reference_solution,
    baseline_tests) from a completion's JSON block, or None."""
    if not isinstance(text, str):
        return None
    blocks = [body for lang, body in fenced_blocks(text) if lang in ("json", "")] or [text]
    for body in reversed(blocks):
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, RecursionError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        keys = ("description", "function_signature", "reference_solution", "baseline_tests")
        if not all(k in data for k in keys):
            continue
        tests = data["baseline_tests"]
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
            continue
        if not all(isinstance(data[k], str) for k in keys[:3]):
            continue
        return {k: data[k] for k in keys}
    return None

"""Prompts per role and stage; parsers never raise on garbage (property-tested)."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sparring.problems import Problem, load_bundled
from sparring.problems.programs import complete_humaneval, extract_code
from sparring.problems.prompts import (
    STAGE_INSTRUCTIONS,
    answerer_messages,
    extract_problem,
    extract_tests,
    generator_messages,
    proposer_messages,
)

PROBLEM = Problem(
    id="p",
    description="Return the square of x.",
    function_signature="def square(x: int) -> int:",
    baseline_tests=["assert square(2) == 4", "assert square(-3) == 9", "assert square(0) == 0"],
    reference_solution="def square(x):\n    return x * x\n",
)


def test_direct_answerer_prompt_asks_for_one_code_block():
    messages = answerer_messages(PROBLEM)
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "def square(x: int) -> int:" in user
    assert "```python" in user
    assert "Stage" not in user


def test_five_stage_prompt_lists_every_stage_in_order():
    stages = list(STAGE_INSTRUCTIONS)
    user = answerer_messages(PROBLEM, stages)[1]["content"]
    positions = [user.index(STAGE_INSTRUCTIONS[s]) for s in stages]
    assert positions == sorted(positions)


def test_the_generator_can_be_asked_for_the_cases_the_statement_names_first():
    plain = generator_messages(PROBLEM, 3)[1]["content"]
    stated = generator_messages(PROBLEM, 3, stated_cases=True)[1]["content"]
    assert "special case the problem statement names" in stated
    assert "special case" not in plain and "edge cases, boundaries" in plain
    assert stated.count("Write 3 new") == plain.count("Write 3 new") == 1


def test_generator_and_proposer_prompts_name_the_function():
    assert "`square`" in generator_messages(PROBLEM, 4)[1]["content"]
    assert "Write 4 new" in generator_messages(PROBLEM, 4)[1]["content"]
    proposer = proposer_messages(PROBLEM)[1]["content"]
    assert "reference_solution" in proposer


CUT = "def square(x):\n    return x*x\n"


def test_extract_code_prefers_the_last_block_that_defines_the_function():
    text = (
        "First try:\n```python\ndef helper():\n    pass\n```\n"
        "Final:\n```python\ndef square(x):\n    return x * x\n```\nDone."
    )
    assert extract_code(text, "square") == "def square(x):\n    return x * x\n"
    assert extract_code("```python\ndef square(x)\n    return\n```", "square") is None
    # an unterminated fence (generation cut off) still yields the code
    assert extract_code("```python\ndef square(x):\n    return x*x\n", "square") == CUT
    # bare code without a fence
    assert extract_code(CUT, "square") == CUT


def test_extract_tests_keeps_only_asserts_calling_the_function():
    text = (
        "```python\nassert square(2) == 4\nprint('hi')\nassert other(1) == 1\n"
        "assert square(2) == 4\nassert square(3) ==\nassert square(5) == 25\n```"
    )
    assert extract_tests(text, "square") == ["assert square(2) == 4", "assert square(5) == 25"]
    assert len(extract_tests("\n".join(f"assert square({i}) == 0" for i in range(50)))) == 16


def test_extract_problem_from_json_block():
    body = {
        "description": "d",
        "function_signature": "def f(x):",
        "reference_solution": "def f(x):\n    return x",
        "baseline_tests": ["assert f(1) == 1"],
    }
    assert extract_problem(f"Here:\n```json\n{json.dumps(body)}\n```") == body
    assert extract_problem('```json\n{"description": 1}\n```') is None


def test_complete_humaneval_accepts_a_body_or_a_whole_function():
    prompt = "from typing import List\n\ndef f(xs: List[int]) -> int:\n"
    body = "    return sum(xs)\n"
    assert complete_humaneval(prompt, body, "f") == prompt + body
    whole = "```python\ndef f(xs):\n    return sum(xs)\n```"
    program = complete_humaneval(prompt, whole, "f")
    assert program.startswith("from typing import List\n") and "return sum(xs)" in program


def test_every_bundled_reference_solution_parses_and_defines_its_function():
    for p in load_bundled():
        # the whole solution comes back (helpers and imports included), not merely something
        code = extract_code(p.reference_solution, p.function_name)
        assert code is not None and code.strip() == p.reference_solution.strip(), p.id


garbage = st.one_of(
    st.text(),
    st.text(alphabet="`pythonasert()=:\n {}[]\"',#\\"),
    st.none(),
    st.integers(),
    st.binary().map(lambda b: b.decode("latin-1")),
)


@settings(max_examples=300, deadline=None)
@given(garbage, st.text(max_size=8))
def test_parsers_never_raise(text, name):
    code = extract_code(text, name)
    assert code is None or isinstance(code, str)
    tests = extract_tests(text, name)
    assert isinstance(tests, list) and all(t.startswith("assert") for t in tests)
    problem = extract_problem(text)
    assert problem is None or isinstance(problem, dict)

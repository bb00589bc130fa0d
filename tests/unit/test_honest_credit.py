"""Honest credit, end to end in the real sandbox: every trivial solution
(sparring.problems.trivial),
given as a model completion, earns exactly 0 answerer reward, and the reference solution earns
the full difficulty weight, on every bundled problem and on HumanEval problems (the first 20
here; all 164 in the slow tier). HumanEval problems whose every test a constant passes (the
bool-returning ones) have no discriminating test: they earn nothing and are reported."""

import json
import subprocess
import sys

import pytest

from sparring.problems import compute_trivial_passes, load_bundled, load_humaneval
from sparring.problems.trivial import argument_count, trivial_family
from sparring.rewards import DEFAULT_DIFFICULTY_WEIGHTS, code_duel
from sparring.sandbox import Sandbox, SandboxLimits


def fenced(code: str) -> str:
    return f"Here is the function.\n```python\n{code}```\n"


def sweep(problems):
    """(trivial rewards per problem, reference credit per problem)."""
    with Sandbox(SandboxLimits(timeout_s=2.0, max_test_chars=1_000_000)) as sb:
        scored = compute_trivial_passes(problems, sb)
        items, refs = [], []
        for p in scored:
            family = trivial_family(p.function_name, argument_count(p.function_signature))
            items.extend((p, fenced(code)) for code in family.values())
            body = p.reference_solution[len(p.prompt) :] if p.entry_point else None
            refs.append((p, body if body is not None else fenced(p.reference_solution)))
        trivial = code_duel.score_answers([p for p, _ in items], [t for _, t in items], sb)
        reference = code_duel.score_answers([p for p, _ in refs], [t for _, t in refs], sb)
    by_problem: dict[str, list[float | None]] = {}
    for (p, _), c in zip(items, trivial, strict=True):
        by_problem.setdefault(p.id, []).append(c.reward)
    return scored, by_problem, reference


def check(problems, allow_no_discriminating: bool):
    scored, trivial, reference = sweep(problems)
    earning = {pid: r for pid, rs in trivial.items() for r in rs if r != 0.0}
    assert not earning, f"trivial code earned reward: {earning}"
    without = [p.id for p, c in zip(scored, reference, strict=True) if not c.discriminating_total]
    for p, c in zip(scored, reference, strict=True):
        assert c.strict, f"{p.id}: the reference fails a test"
        if c.discriminating_total:
            assert c.reward == DEFAULT_DIFFICULTY_WEIGHTS[p.difficulty], p.id
        else:
            assert c.reward == 0.0  # reported, never paid
    if not allow_no_discriminating:
        assert not without, without
    return without


# every bundled problem in the sandbox (~30 s): CI's slow tier keeps make test under 15 min
@pytest.mark.slow
def test_bundled_trivial_code_earns_nothing_and_references_earn_everything():
    check(load_bundled(), allow_no_discriminating=False)


# slow tier (15-100 s on 2 cores): make test stays under 15 minutes; CI's make test-slow runs it
@pytest.mark.slow
def test_humaneval_sample_trivial_code_earns_nothing():
    without = check(load_humaneval(limit=20), allow_no_discriminating=True)
    assert "HumanEval/0" in without  # returns a bool: True or False passes every assert


@pytest.mark.slow
def test_all_humaneval_trivial_code_earns_nothing():
    without = check(load_humaneval(), allow_no_discriminating=True)
    assert len(without) < 164 // 4


def test_reward_command_explains_each_solution(tmp_path):
    ref = next(p for p in load_bundled() if p.id == load_bundled()[0].id)
    batch = tmp_path / "batch.jsonl"
    rows = [
        {"problem_id": ref.id, "solution": fenced(ref.reference_solution)},
        {"problem_id": ref.id, "solution": f"def {ref.function_name}(*a):\n    return 0\n"},
        {"problem_id": ref.id, "solution": "I do not know."},
    ]
    batch.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cmd = [sys.executable, "-m", "sparring.cli.main", "reward", "--role", "answerer"]
    out = subprocess.run(
        [*cmd, "--solutions", str(batch), "--json"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    got = [json.loads(line) for line in out.stdout.splitlines()]
    assert got[0]["reward"] == DEFAULT_DIFFICULTY_WEIGHTS[ref.difficulty] and got[0]["strict"]
    assert got[1]["reward"] == 0.0 and got[1]["discriminating_passed"] == 0
    assert got[2]["parsed"] is False and got[2]["reward"] == 0.0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"problem_id": "nope", "solution": "x"}\n')
    out = subprocess.run([*cmd, "--solutions", str(bad)], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.startswith("error: ")
    assert "bad.jsonl:1" in out.stderr and "Traceback" not in out.stderr

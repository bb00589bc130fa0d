"""The generator that does not learn (`generator_mode: fuzz`, issue 73's arm R) run end to end in
the generator phase's place, through the phase table as every runner calls it, with the real
sandbox, on a bundled problem, a family problem and a planted one whose reference raises on
negative inputs: k tests for every training problem, none an input the reference rejects, each
banked by the unchanged validate phase; a test rewritten wrong, or an input the reference
rejects, is not banked; the same seed writes the same tests, another seed others."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from sparring.config import from_dict
from sparring.phases import table
from sparring.phases.validate import validate_into
from sparring.phases.zone import ZONE_FILE
from sparring.problems import Problem, load_bundled, write_jsonl
from sparring.problems.families import generate
from sparring.rewards.bank import BANK_FILE

pytestmark = pytest.mark.integration
K = 3
ROOT_OF = Problem(
    id="floor_root",
    description="Return the integer square root of n (n >= 0).",
    function_signature="def floor_root(n: int) -> int:",
    baseline_tests=["assert floor_root(17) == 4"],
    # rejects the negatives hypothesis draws: a test of one cannot pass the reference
    reference_solution=(
        "import math\n\ndef floor_root(n: int) -> int:\n"
        "    if n < 0:\n        raise ValueError('n must be >= 0')\n    return math.isqrt(n)\n"
    ),
)


def _problems() -> list[Problem]:
    bundled = next(p for p in load_bundled() if p.id == "prefix_maxima")
    family = generate(0, 1, families=["list_map"], levels=(0,))[0]
    return [bundled, family, ROOT_OF]


def _config(**fields):
    return from_dict({"generator_mode": "fuzz", "steps": {"fuzz_tests": K},
                      "sandbox": {"workers": 2}, **fields})  # fmt: skip


def _draw(cfg, data: Path, out: Path) -> tuple[dict, dict[str, list[str]]]:
    """The generator phase of a fuzz config, run as the plain runner and the components run
    it; its metrics and the tests it wrote, by problem."""
    outputs = table.outputs_in("train-generator", out)
    phase = "r01-p01-generator"
    metrics = table.run("train-generator", cfg, 1, {"data": str(data)}, outputs, phase)
    rows = [json.loads(x) for x in Path(outputs["tests"]).read_text().splitlines()]
    return metrics, {r["problem_id"]: r["tests"] for r in rows}


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    data = root / "data"
    data.mkdir()
    write_jsonl(_problems(), data / "train.jsonl")
    (data / BANK_FILE).write_text("")
    metrics, tests = _draw(_config(), data, root / "gen")
    return root, data, metrics, tests


def _argument(test: str):
    return ast.literal_eval(ast.parse(test).body[0].test.left.args[0])


def test_k_tests_for_every_training_problem_none_the_reference_rejects(drawn):
    root, _, metrics, tests = drawn
    assert sorted(tests) == sorted(p.id for p in _problems())
    assert {pid: len(t) for pid, t in tests.items()} == {p.id: K for p in _problems()}
    assert metrics["generated_tests"] == 3 * K and metrics["fuzz_problems_full"] == 3
    # hypothesis drew negatives for floor_root; the reference raised on them: none written
    assert metrics["fuzz_skipped_invalid"] >= 1
    assert all(_argument(t) >= 0 for t in tests["floor_root"]), tests["floor_root"]
    # expected values are the reference's, not the placeholder
    assert all(not t.endswith("== None") for ts in tests.values() for t in ts), tests
    gen = root / "gen"
    assert (gen / "frozen_solutions.jsonl").read_text() == ""  # no answerer was sampled
    record = json.loads((gen / "model" / "sparring_model.json").read_text())
    assert (record["mode"], record["role"], record["base"]) == ("fuzz", "generator", "tiny-random")


def test_the_validate_phase_banks_each_written_test_and_leaves_the_zone_to_the_answerer(
    drawn, tmp_path
):
    root, data, _, tests = drawn
    gen = root / "gen"
    metrics = validate_into(
        _config(), 1, str(data), str(gen / "tests.jsonl"), str(gen / "frozen_solutions.jsonl"),
        str(data), str(tmp_path),
    )  # fmt: skip
    banked = [json.loads(x) for x in (tmp_path / BANK_FILE).read_text().splitlines()]
    assert [(b["problem_id"], b["test"]) for b in banked] == [
        (pid, t) for pid, ts in tests.items() for t in ts
    ]
    assert metrics["validity"] == metrics["honest_share"] == 1.0
    assert metrics["new_tests"] == metrics["bank_size"] == 3 * K
    # no frozen answers: an empty zone, so with steps.screen_pool the answerer screens itself
    assert json.loads((tmp_path / ZONE_FILE).read_text()) == {}


@pytest.mark.parametrize("reference_expected", [True, False])
def test_a_test_that_fails_the_reference_is_not_banked(drawn, tmp_path, reference_expected):
    """Two planted mismatches among the written tests: one calling floor_root on a negative
    input (the reference raises), one rewritten with a wrong expected value. Validation banks
    every other test and not the first; the second neither when it is judged as written
    (`rewards.reference_expected` off), and with the reference's value in its place when the
    reference gives expected values (on), as for the generator's tests."""
    root, data, _, tests = drawn
    call, expected = tests["floor_root"][0].rsplit(" == ", 1)
    wrong = f"{call} == {int(expected) + 1}"
    rejected = "assert floor_root(-4) == 2"  # no trivial solution passes it either
    planted = {**tests, "floor_root": [wrong, rejected, *tests["floor_root"][1:]]}
    generated = tmp_path / "tests.jsonl"
    rows = [{"problem_id": p, "tests": t, "round": 1} for p, t in planted.items()]
    generated.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "bank"
    metrics = validate_into(
        _config(rewards={"reference_expected": reference_expected}), 1, str(data),
        str(generated), str(root / "gen" / "frozen_solutions.jsonl"), str(data), str(out),
    )  # fmt: skip
    banked = {json.loads(x)["test"] for x in (out / BANK_FILE).read_text().splitlines()}
    assert rejected not in banked, "a test on an input the reference rejects was banked"
    assert wrong not in banked, "a test with a wrong expected value was banked"
    others = {t for ts in planted.values() for t in ts} - {wrong, rejected}
    corrected = {f"{call} == {expected}"} if reference_expected else set()
    assert banked == others | corrected
    valid = 3 * K - (0 if reference_expected else 1)
    assert metrics["validity"] == pytest.approx(valid / (3 * K + 1))


def test_the_same_seed_writes_the_same_tests_another_seed_others(drawn, tmp_path):
    _, data, _, tests = drawn
    _, again = _draw(_config(), data, tmp_path / "again")
    assert again == tests
    _, other = _draw(_config(seed=1), data, tmp_path / "other")
    for pid in tests:
        assert other[pid] != tests[pid], pid


def test_with_a_cap_the_fuzz_arm_writes_and_banks_exactly_k(drawn, tmp_path):
    """`steps.bank_per_problem: 2` (fuzz_tests 2, as the config check asks): 2 tests written for
    every training problem and 2 banked for each, full coverage. The same cap on the uncapped
    draw's 3 tests a problem (as it would on a learned generator's) banks each problem's first 2.
    Break check: validation without the cap banks 3 a problem of the uncapped draw."""
    root, data, _, tests = drawn
    cfg = _config(steps={"fuzz_tests": 2, "bank_per_problem": 2})
    metrics, capped = _draw(cfg, data, tmp_path / "gen")
    assert {pid: len(t) for pid, t in capped.items()} == {p.id: 2 for p in _problems()}
    assert metrics["generated_tests"] == 6
    gen = tmp_path / "gen"
    v = validate_into(
        cfg, 1, str(data), str(gen / "tests.jsonl"), str(gen / "frozen_solutions.jsonl"),
        str(data), str(tmp_path / "bank"),
    )  # fmt: skip
    assert v["bank_coverage"] == 1.0 and v["bank_tests_per_covered_max"] == 2.0
    assert v["new_tests"] == 6 and v["over_cap"] == 0
    learned = from_dict({"steps": {"bank_per_problem": 2}, "sandbox": {"workers": 2}})
    v = validate_into(
        learned, 1, str(data), str(root / "gen" / "tests.jsonl"),
        str(root / "gen" / "frozen_solutions.jsonl"), str(data), str(tmp_path / "bank3"),
    )  # fmt: skip
    banked = [json.loads(x) for x in (tmp_path / "bank3" / BANK_FILE).read_text().splitlines()]
    assert [(b["problem_id"], b["test"]) for b in banked] == [
        (pid, t) for pid, ts in tests.items() for t in ts[:2]
    ]
    assert v["over_cap"] == 3 and v["bank_tests_per_covered_mean"] == 2.0

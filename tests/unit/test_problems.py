"""Problem format, loaders (JSON, JSONL, folder, HumanEval) and splits."""

import json
import subprocess
import sys
from collections import Counter

import pytest

from sparring.problems import (
    Problem,
    ProblemError,
    function_name_of,
    load_bundled,
    load_humaneval,
    load_source,
    load_sources,
    parse_problems,
    read_jsonl,
    split,
    write_jsonl,
)

RECORD = {
    "id": "add_two",
    "description": "Return a + b.",
    "function_signature": "def add_two(a: int, b: int) -> int:",
    "baseline_tests": ["assert add_two(1, 2) == 3", "assert add_two(0, 0) == 0"],
    "reference_solution": "def add_two(a, b):\n    return a + b\n",
    "difficulty": "easy",
    "tags": ["math"],
}


def test_bundled_set_is_large_varied_and_well_formed():
    problems = load_bundled()
    assert len(problems) >= 100
    counts = Counter(p.difficulty for p in problems)
    assert set(counts) == {"easy", "medium", "hard"}
    assert min(counts.values()) >= 10
    assert counts["easy"] >= 60  # the everyday operations a small model can learn from
    assert len({p.id for p in problems}) == len(problems)
    assert len({p.function_name for p in problems}) == len(problems)
    for p in problems:
        assert len(p.baseline_tests) >= 3, p.id
        assert f"def {p.function_name}(" in p.reference_solution, p.id
        assert all(t.startswith("assert ") for t in p.baseline_tests), p.id


def test_json_forms_and_jsonl_load_the_same(tmp_path):
    (tmp_path / "list.json").write_text(json.dumps([RECORD]))
    (tmp_path / "obj.json").write_text(json.dumps({"problems": [RECORD]}))
    (tmp_path / "lines.jsonl").write_text(json.dumps(RECORD) + "\n\n")
    loaded = [load_source(str(tmp_path / n)) for n in ("list.json", "obj.json", "lines.jsonl")]
    assert loaded[0] == loaded[1] == loaded[2]
    assert loaded[0][0].function_name == "add_two"


def test_folder_loads_every_file(tmp_path):
    second = dict(RECORD, id="add_three")
    (tmp_path / "a.json").write_text(json.dumps([RECORD]))
    (tmp_path / "b.jsonl").write_text(json.dumps(second) + "\n")
    (tmp_path / "notes.txt").write_text("ignored")
    assert [p.id for p in load_source(str(tmp_path))] == ["add_two", "add_three"]


def test_jsonl_round_trip(tmp_path):
    problems = load_bundled()[:5]
    write_jsonl(problems, tmp_path / "p.jsonl")
    assert read_jsonl(tmp_path / "p.jsonl") == problems


@pytest.mark.parametrize(
    ("record", "fragment"),
    [
        ({k: v for k, v in RECORD.items() if k != "reference_solution"}, "missing field"),
        (dict(RECORD, difficulty="brutal"), "difficulty"),
        (dict(RECORD, baseline_tests="assert x"), "baseline_tests"),
        (dict(RECORD, colour="red"), "unknown field 'colour'"),
    ],
)
def test_malformed_records_name_the_field(record, fragment):
    with pytest.raises(ProblemError, match=fragment):
        parse_problems(json.dumps([record]), "f.json")


def test_bad_json_names_the_line():
    with pytest.raises(ProblemError, match=r"f.json:2: invalid JSON"):
        parse_problems('[\n{"id": }\n]', "f.json")


def test_missing_source_and_duplicate_ids(tmp_path):
    with pytest.raises(ProblemError, match="not found"):
        load_source(str(tmp_path / "nope.json"))
    (tmp_path / "a.json").write_text(json.dumps([RECORD]))
    with pytest.raises(ProblemError, match="also comes from"):
        load_sources([str(tmp_path / "a.json"), str(tmp_path / "a.json")])


def test_humaneval_loads_all_164_with_entry_points():
    problems = load_humaneval()
    assert len(problems) == 164
    first = problems[0]
    assert first.id == "HumanEval/0"
    assert first.entry_point == "has_close_elements"
    assert first.prompt.startswith("from typing import List")
    assert first.function_signature.startswith("def has_close_elements(")
    assert load_humaneval(limit=3) == problems[:3]


def test_split_is_deterministic_disjoint_and_seeded():
    problems = load_bundled()
    train, val = split(problems, 0.1, seed=0)
    assert {p.id for p in train}.isdisjoint({p.id for p in val})
    assert len(train) + len(val) == len(problems)
    assert len(val) == round(len(problems) * 0.1)
    assert split(problems, 0.1, seed=0) == (train, val)
    assert split(problems, 0.1, seed=1)[1] != val


def test_function_name_of():
    assert function_name_of("def foo(a, b) -> int:") == "foo"
    assert function_name_of("async def bar():") == "bar"
    assert function_name_of("foo(a)") == ""
    assert Problem("x", "d", "def f(x):", [], "").function_name == "f"


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "sparring.cli.main", *args], capture_output=True, text=True
    )


def test_cli_lists_bundled_problems_as_json():
    result = _cli("problems", "list", "--source", "bundled", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert len(data) == len(load_bundled())
    assert {"id", "description", "function_signature", "baseline_tests"} <= set(data[0])


def test_cli_missing_source_is_one_line():
    result = _cli("problems", "list", "--source", "nope.json")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "nope.json: not found" in result.stderr


# slow tier (15-100 s on 2 cores): make test stays under 15 minutes; CI's make test-slow runs it
@pytest.mark.slow
def test_cli_check_passes_bundled_and_names_a_broken_problem(tmp_path):
    good = _cli("problems", "check", "--source", "bundled")
    assert good.returncode == 0, good.stderr
    n = len(load_bundled())
    assert f"{n}/{n} reference solutions pass" in good.stdout
    broken = dict(
        RECORD, id="broken_add", reference_solution="def add_two(a, b):\n    return a - b\n"
    )
    path = tmp_path / "p.json"
    path.write_text(json.dumps([RECORD, broken]))
    result = _cli("problems", "check", "--source", str(path))
    assert result.returncode == 1
    assert "FAIL broken_add" in result.stderr
    assert "1/2 reference solutions pass" in result.stdout

"""The study's pre-check (sparring.experiments.precheck, `sparring precheck`): the stated-case
tests found, room and pool on planted answers in the real sandbox, each answer's filed flags
(answers.jsonl), intervals that resample tasks, the catch of planted tests (a test the reference
fails counts for nothing), the fuzzer and the base generator's rule on a planted pool, and the
command end to end on tiny-random (with `precheck size-n` on the answers it filed)."""

from __future__ import annotations

import ast
import doctest
import json
from pathlib import Path

import pytest

from sparring.config import load_config
from sparring.experiments import precheck, sizing_oracle
from sparring.problems import compute_trivial_passes
from sparring.problems.families import draft_of, generate, stated_case_tests, task_tag
from sparring.problems.given_tests import given_view
from sparring.sandbox import Sandbox, SandboxLimits

ROOT = Path(__file__).resolve().parents[2]
WRONG = -123456789  # what a planted wrong answer returns where it is wrong


def test_doctests():
    assert doctest.testmod(precheck).failed == 0


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(SandboxLimits(timeout_s=5.0)) as sb:
        yield sb


@pytest.fixture(scope="module")
def problems(sandbox):
    """list_stat at levels 2 and 3 (seed 2), trivial passes computed."""
    return compute_trivial_passes(generate(2, 1, ["list_stat"], [2, 3]), sandbox)


def _args(test: str) -> list:
    call = ast.parse(test).body[0].test.left
    return [ast.literal_eval(a) for a in call.args]


def _wrong_at(problem, test: str) -> str:
    """An answer: the reference, but WRONG on the input of `test`."""
    name = problem.function_name
    ref = problem.reference_solution.replace(f"def {name}(", "def _ref(", 1)
    return (
        f"```python\n{ref}\ndef {name}(*args):\n    if list(args) == {_args(test)!r}:\n"
        f"        return {WRONG}\n    return _ref(*args)\n```"
    )


def test_the_stated_case_test_is_the_special_input_at_level_3_and_the_empty_one_at_level_2():
    for p in generate(2, 2, ["list_stat", "int_arith", "word_list"], [2, 3]):
        found = [p.baseline_tests[i] for i in stated_case_tests(p)]
        assert found, p.id
        draft = draft_of(p)
        if "level:3" in p.tags:
            call = f"{p.function_name}({', '.join(repr(a) for a in draft.special)})"
            assert found == [t for t in p.baseline_tests if t.startswith(f"assert {call} ==")]
        else:  # the empty input (0 for an integer)
            assert all(_args(t)[0] in ([], 0) for t in found), found
    assert stated_case_tests(generate(2, 1, ["list_stat"], [0])[0]) == []


def test_room_and_pool_on_planted_answers(problems, sandbox):
    texts = []
    for p in problems:
        view = given_view(p, 3)
        stated = p.baseline_tests[stated_case_tests(p)[0]]
        assert stated in view.withheld_tests  # an edge test: never among the typical K
        texts.append(
            [
                f"```python\n{p.reference_solution}```",  # right
                _wrong_at(p, stated),  # wrong where only the stated case looks: room
                _wrong_at(p, view.baseline_tests[0]),  # wrong on a given test: no room
                "no code here",
            ]
        )
    rows, pool = precheck.judge_answers(problems, texts, 3, sandbox)
    assert [r["room"] for r in rows] == [[0, 1, 0, 0]] * 2
    assert [r["stated"] for r in rows] == [[1, 0, 1, 0]] * 2
    assert [(e.problem.id, e.sample, e.level) for e in pool] == [
        (problems[0].id, 1, 2),
        (problems[1].id, 1, 3),
    ]
    for entry, p in zip(pool, problems, strict=True):
        assert entry.fails == [p.baseline_tests[stated_case_tests(p)[0]]]
        assert entry.problem.baseline_tests == given_view(p, 3).baseline_tests
        assert f"return {WRONG}" in entry.code
        assert json.loads(json.dumps(entry.to_row()))["fails"] == entry.fails
    summary = precheck.summarize(rows)
    for level in (2, 3):
        s = summary["levels"][level]
        assert (s["answers"], s["tasks"], s["pool"]) == (4, 1, 1)
        assert s["room"]["value"] == 0.25 and s["stated_case_pass"] == 0.5
        assert s["stated_case_any"] is True
    assert summary["pool"] == 2


def test_each_answer_is_filed_with_its_task_and_three_flags(problems, sandbox):
    """Planted answers, per instance: right; wrong on the stated case only; wrong on a given
    test; wrong on a withheld test that is not the stated case; no code. A level-0 instance
    (no stated case) files stated as None."""
    plain = compute_trivial_passes(generate(2, 1, ["list_stat"], [0]), sandbox)
    texts = []
    for p in problems:
        view = given_view(p, 3)
        stated = p.baseline_tests[stated_case_tests(p)[0]]
        other = next(t for t in view.withheld_tests if t != stated)
        texts.append(
            [
                f"```python\n{p.reference_solution}```",
                _wrong_at(p, stated),
                _wrong_at(p, view.baseline_tests[0]),
                _wrong_at(p, other),
                "no code here",
            ]
        )
    texts.append([f"```python\n{plain[0].reference_solution}```"])
    rows, pool, answers = precheck.judge([*problems, *plain], texts, 3, sandbox)
    assert (rows, pool) == precheck.judge_answers([*problems, *plain], texts, 3, sandbox)
    flags = [(a["given"], a["stated"], a["every"]) for a in answers]
    planted = [(True, True, True), (True, False, False), (False, True, False),
               (True, True, False), (False, False, False)]  # fmt: skip
    assert flags == planted * 2 + [(True, None, True)]
    keys = [(a["task"], a["id"], a["family"], a["level"], a["sample"]) for a in answers]
    expected = [
        (task_tag(p), p.id, "list_stat", level, j)
        for p, level, n in [(problems[0], 2, 5), (problems[1], 3, 5), (plain[0], 0, 1)]
        for j in range(n)
    ]
    assert keys == expected and len({k[0] for k in keys}) == 3
    assert all(type(a[f]) is bool for a in answers for f in ("given", "every"))
    # the rows agree with precheck.json's per-instance flags and pass sizing_oracle's check
    for row, got in zip(rows, [answers[:5], answers[5:10], answers[10:]], strict=True):
        assert row.get("stated", [None] * len(got)) == [
            None if a["stated"] is None else int(a["stated"]) for a in got
        ]
        assert all(
            a["given"] and not a["every"] for a, hit in zip(got, row["room"], strict=True) if hit
        )
    assert sizing_oracle.check_rows(json.loads(json.dumps(answers))) == answers


def test_the_room_interval_resamples_tasks_not_answers():
    """One task of 100 samples all in the room, twenty of 2 samples with none: the share is
    100/140, but a resample without the big task (a third of them) has none: a task
    interval reaches near 0, an answer interval (140 independent draws) stays near 0.71."""
    units = [(100, 100)] + [(0, 2)] * 20
    s = precheck.task_share(units, seed=0)
    assert s["value"] == pytest.approx(100 / 140)
    assert (s["tasks"], s["answers"]) == (21, 140)
    assert s["lo"] < 0.2 and s["hi"] > 0.8
    d = precheck.paired_task_difference([(100, 0, 100)] + [(0, 0, 2)] * 20, seed=0)
    assert d["value"] == pytest.approx(100 / 140) and d["lo"] < 0.2
    assert precheck.task_share([], seed=0)["value"] is None
    # seeded: a rerun repeats
    assert precheck.task_share(units, seed=3) == precheck.task_share(units, seed=3)


def _planted_pool(problems, sandbox):
    texts = [[_wrong_at(p, p.baseline_tests[stated_case_tests(p)[0]])] for p in problems]
    return precheck.judge_answers(problems, texts, 3, sandbox)


def test_catch_counts_only_tests_the_reference_passes(problems, sandbox):
    rows, pool = _planted_pool(problems, sandbox)
    assert len(pool) == 2
    fuzz, base = {}, {}
    for entry, p in zip(pool, problems, strict=True):
        stated = entry.fails[0]
        wrong_expected = stated.rpartition("==")[0] + "== 31337"  # fails the reference too
        others = [t for t in entry.problem.withheld_tests if t != stated]
        # a valid test the answer passes, then the stated case's: both kept, one catches
        candidates = {"fuzz": [others[0], stated], "base": [wrong_expected]}
        for name, out in (("fuzz", fuzz), ("base", base)):
            out[p.id] = precheck.kept_tests(
                entry.problem, candidates[name], 3, sandbox, reference_expected=False
            )
    assert all(base[p.id] == [] for p in problems)  # the reference fails it: not kept
    caught = {
        name: precheck.catch_on_pool(pool, kept, sandbox)
        for name, kept in (("fuzz", fuzz), ("base", base))
    }
    assert caught == {"fuzz": [True, True], "base": [False, False]}
    precheck.add_catch(rows, pool, caught)
    s = precheck.summarize(rows)["levels"][3]
    assert (s["catch_fuzz"]["value"], s["catch_base"]["value"]) == (1.0, 0.0)
    assert s["catch_difference"]["value"] == 1.0


def test_the_fuzzer_and_the_generator_rule_on_a_planted_pool(problems, sandbox):
    """The fuzzer draws the empty list first (level 2's stated case); the base generator's
    planted completions name both stated inputs with a wrong expected value, which the oracle
    replaces by the reference's (rewards.reference_expected, on by default)."""
    _, pool = _planted_pool(problems, sandbox)
    cfg = load_config(str(ROOT / "configs" / "learn.yaml"))
    texts = {e.problem.id: [f"```python\n{e.fails[0].rpartition('==')[0]}== 5\n```"] for e in pool}
    kept, caught = precheck.measure_catch(cfg, pool, texts, 3, 2, sandbox)
    assert caught["fuzz"][0] is True  # level 2: f([]) is among the first draws
    assert caught["base"] == [True, True]
    assert all(len(kept["base"][e.problem.id]) == 1 for e in pool)
    assert all(t.endswith("== 5") is False for e in pool for t in kept["base"][e.problem.id])
    again, _ = precheck.measure_catch(cfg, pool, texts, 3, 2, sandbox)
    assert again == kept  # seeded: the fuzzer draws the same tests


def test_the_command_end_to_end_on_tiny_random(tmp_path, capsys, monkeypatch):
    from sparring.cli.main import main

    monkeypatch.chdir(ROOT)  # the default config is configs/learn.yaml
    out = tmp_path / "pre"
    argv = ["precheck", "--model", "tiny-random", "--generator-model", "tiny-random",
            "--families", "list_stat", "--per-family", "1", "--samples-per-instance", "2",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "PRECHECK plan: 1 families x 1 instances x 2 samples = 2 answers a level" in printed
    for level in (2, 3):
        assert f"PRECHECK level={level} answers=2 tasks=1 room=" in printed
    assert "PRECHECK pool=" in printed and "CPU s/answer" in printed
    assert "PRECHECK writers: on " in printed
    record = json.loads((out / "precheck.json").read_text())
    assert record["settings"]["levels"] == [2, 3] and record["settings"]["per_family"] == 1
    assert set(record["summary"]["levels"]) == {"2", "3"}
    pool_lines = (out / "pool.jsonl").read_text().splitlines()
    assert len(pool_lines) == record["summary"]["pool"]
    answers = sizing_oracle.read_rows(out / "answers.jsonl")  # one row per sampled answer
    assert [(a["id"], a["sample"]) for a in answers] == [
        (r["id"], j) for r in record["rows"] for j in range(len(r["room"]))
    ]
    assert main(["precheck", "size-n", "--rows", str(out / "answers.jsonl")]) == 0
    printed = capsys.readouterr().out
    assert "SIZEN plan: " in printed and "SIZEN level=3 tasks=1 instances=1 answers=2" in printed


def test_the_default_size_gives_800_answers_a_level():
    cfg = load_config(str(ROOT / "configs" / "learn.yaml"))
    from sparring.problems.families.sets import trained_families

    families = trained_families(cfg.data.families)
    per_family = precheck.per_family_for(len(families), 8)
    assert len(families) * per_family * 8 >= precheck.MIN_ANSWERS

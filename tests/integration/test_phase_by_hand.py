"""`sparring phase …`: the four code-duel phases run one at a time by hand, dispatched from the
phase table, chain through the workdir layout its --help documents (data/, round-N/answerer/,
round-N/generator/{model,tests.jsonl,frozen_solutions.jsonl}, round-N/bank.jsonl), with real
GRPO steps on the tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring.backends.base import read_meta
from sparring.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def phase(capsys, name: str, workdir: Path, *extra: str) -> dict:
    argv = ["phase", name, "--config", str(ROOT / "configs/smoke.yaml"), "--workdir", str(workdir)]
    assert main([*argv, *extra]) == 0
    out = capsys.readouterr().out
    start = out.rfind("\n{\n") + 1  # the phase's metrics, printed last (indented JSON)
    return json.loads(out[start:])


# slow tier (15-100 s on 2 cores): make test stays under 15 minutes; CI's make test-slow runs it
@pytest.mark.slow
def test_phases_by_hand_chain_through_the_documented_layout(tmp_path, capsys):
    d = tmp_path / "work"
    assert main(["phase", "train-answerer", "--config", str(ROOT / "configs/smoke.yaml"),
                 "--workdir", str(d)]) == 2  # fmt: skip
    assert "run `sparring phase materialize` first" in capsys.readouterr().err
    assert phase(capsys, "materialize", d)["problems_train"] > 0
    assert (d / "data/train.jsonl").is_file() and (d / "data/bank.jsonl").is_file()
    gen = phase(capsys, "train-generator", d)
    assert gen["steps"] == 1 and gen["problems"] == 2  # steps.generator, problems_per_phase
    g = d / "round-1/generator"
    assert (g / "model").is_dir() and (g / "tests.jsonl").is_file()
    frozen = [json.loads(x) for x in (g / "frozen_solutions.jsonl").read_text().splitlines()]
    assert len(frozen) == 2 and all(len(r["solutions"]) == 2 for r in frozen)  # frozen_samples
    # The random generator writes no assert; a person adds two tests to its file by hand: a copy
    # of a baseline test (valid, but a duplicate: not banked) and its negation, which the
    # reference fails (invalid: refused, and never banked)
    written = [json.loads(x) for x in (g / "tests.jsonl").read_text().splitlines()]
    assert written and not any(r["tests"] for r in written)
    pid = frozen[0]["problem_id"]
    train = {r["id"]: r for r in map(json.loads, (d / "data/train.jsonl").read_text().splitlines())}
    baseline = train[pid]["baseline_tests"][0]
    assert baseline.startswith("assert ")
    negated = f"assert not ({baseline.removeprefix('assert ')})"
    row = {"problem_id": pid, "tests": [baseline, negated], "round": 1}
    with (g / "tests.jsonl").open("a") as f:
        f.write(json.dumps(row) + "\n")
    bank_before = (d / "data/bank.jsonl").read_text()
    v = phase(capsys, "validate", d)
    assert v["candidates"] == 2.0 and v["validity"] == 0.5, f"invalid test counted valid: {v}"
    assert v["new_tests"] == 0.0 and v["bank_size"] == float(len(bank_before.splitlines())), v
    bank_after = (d / "round-1/bank.jsonl").read_text()
    assert negated not in bank_after, "a test the reference fails was banked"
    # nothing new: the copy is a duplicate, the negation invalid (and near the copy's tokens)
    assert bank_after == bank_before
    a = phase(capsys, "train-answerer", d)
    assert a["steps"] == 1
    meta = read_meta(d / "round-1/answerer")
    assert (meta["role"], meta["base"]) == ("answerer", "tiny-random")
    # round 2 starts from round 1's models: the generator from round-1/generator/model
    phase(capsys, "train-generator", d, "--round", "2")
    assert read_meta(d / "round-2/generator/model")["role"] == "generator"

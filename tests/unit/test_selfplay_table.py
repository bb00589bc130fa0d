"""The self-play recipe search's table (scripts/selfplay_table.py) on planted run files: each
row pairs a configuration with the given arm on every test passed and on the share of tests,
counts the bank's tests of the empty case, and refuses a pair that is not two arms."""

from __future__ import annotations

import json

import pytest

from scripts import selfplay_table as table
from sparring.evaluation.heldout import heldout_record

# a run that started from its configured base model (sparring.backends.lineage.start_record's
# fields)
FRESH = {"configured": "smollm2-135m", "model": "smollm2-135m", "base": "smollm2-135m",
         "weights": "w0", "base_weights": "w0", "champion": None}  # fmt: skip
IDS = [f"p{i}" for i in range(6)]


def _run(tmp_path, name, schedule, share, strict, learn="", bank=()):
    record = heldout_record(
        {"new_tasks": {i: [0.4, share] for i in IDS}}, {}, reward="honest", seed=0,
        config_digest="d", start=FRESH, arm={"phase_schedule": schedule},
        measures={"strict": {"new_tasks": {i: [0.0, strict] for i in IDS}}},
    )  # fmt: skip
    prefix = tmp_path / name
    (tmp_path / f"{name}-heldout.json").write_text(json.dumps(record))
    (tmp_path / f"{name}-learn.txt").write_text(learn)
    if bank:
        rows = [{"problem_id": pid, "test": test} for pid, test in bank]
        (tmp_path / f"{name}-bank.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(prefix)


def test_a_row_pairs_the_configuration_with_the_given_arm(tmp_path, capsys):
    learn = (
        "LEARN completions_trained 752 sampled=2304\n"
        "LEARN heldout_new_tasks_strict base=0.000 final=0.250 ci95_delta=0.1,0.4 n=6\n"
        "LEARN generator_catch_heldout base=0.333 final=0.452 ci95_delta=-0.048,0.274 n=6\n"
        "LEARN false_positive_rate 0.494\n"
    )
    bank = [("p0", "assert f([]) == 99"), ("p0", "assert f([1]) == 1"),
            ("p1", "assert g('') == 'empty'")]  # fmt: skip
    given = _run(tmp_path, "given", "answerer", 0.6, 0.0)
    gen = _run(tmp_path, "gen4", "generator_answerer", 0.6, 0.25, learn, bank)
    manifest = tmp_path / "search.json"
    config = {"name": "gen4", "overrides": "steps.generator=4", "code": "abc", "minutes": 35.0}
    manifest.write_text(json.dumps({"given": given, "configs": [{**config, "prefix": gen}]}))
    assert table.main([str(manifest)]) == 0
    row = capsys.readouterr().out.splitlines()[2].split(" | ")
    assert row[4:] == [
        "3 (2) on 2", "752 of 2304", "0.000 -> 0.250",
        "+0.250 (+0.250..+0.250)", "+0.000 (+0.000..+0.000)",
        "0.333 -> 0.452 (-0.048,0.274)", "0.494 |",
    ]  # fmt: skip


def test_two_runs_of_one_arm_are_no_row(tmp_path):
    _run(tmp_path, "given", "answerer", 0.6, 0.0)
    record = json.loads((tmp_path / "given-heldout.json").read_text())
    with pytest.raises(ValueError, match="both runs have phase_schedule=answerer"):
        table.versus(record, record, "strict")

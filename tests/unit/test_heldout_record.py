"""heldout.json's typed record (sparring.evaluation.heldout): every file filed in docs/results
loads through it and comes back key for key; what the evaluate phase writes reads back the same;
a file that is no heldout.json is refused in one line naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring.evaluation.heldout import HELDOUT_FORMAT, Heldout, heldout_record, new_heldout

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
FILED = sorted(RESULTS.glob("*heldout.json"))


def test_every_filed_heldout_json_loads_through_the_record():
    assert len(FILED) >= 62  # formats 1, 2 and 3, the study's 15 among them
    formats = set()
    for path in FILED:
        record = Heldout.load(path)
        assert record.to_dict() == json.loads(path.read_text()), path.name
        assert record.sets and all(len(p) == 2 for s in record.sets.values() for p in s.values())
        formats.add(record.format)
    assert formats == {None, 2, 3}


def test_the_study_runs_hold_what_the_study_reads():
    for path in RESULTS.glob("study-*-t?-2026-12-02-heldout.json"):
        record = Heldout.load(path)
        assert record.format == HELDOUT_FORMAT and record.start and record.code
        for measure in ("strict", "defining"):
            assert record.holds("new_tasks", measure), (path.name, measure)
        assert record.own_measure == "discriminating" and record.holds("new_families")


def test_what_the_writer_saves_reads_back_the_same(tmp_path):
    start = {"configured": "m", "model": "m", "champion": None}
    written = new_heldout(
        {"new_tasks": {"a": [0.1, 0.5]}}, {"a": "k1"}, reward="honest", seed=2,
        config_digest="d", measures={"strict": {"new_tasks": {"a": [0.0, 1.0]}}}, start=start,
        code="c1",
    )  # fmt: skip
    written.save(tmp_path / "heldout.json")
    back = Heldout.load(tmp_path / "heldout.json")
    assert back == written
    assert back.set_pairs("run", "new_tasks", "strict") == {"a": [0.0, 1.0]}
    assert heldout_record(
        {"new_tasks": {"a": [0.1, 0.5]}}, {}, reward="honest", seed=0, config_digest="d"
    ) == {
        "format": 3, "config_digest": "d", "seed": 0, "reward": "honest",
        "measure": "discriminating", "sets": {"new_tasks": {"a": [0.1, 0.5]}},
        "tasks": {"a": "a"}, "arm": {"rewards.answerer": "honest"}, "measures": {},
        "start": None, "code": "",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], r"run\.json: not a JSON object"),
        ({"reward": "honest"}, r"run\.json: no 'sets' in it"),
        ({"sets": {"new_tasks": {"a": [0.1]}}}, r"problem 'a' has \[0\.1\], not \[base, final\]"),
        ({"sets": {"new_tasks": {"a": ["x", 1]}}}, r"not \[base, final\]"),
        ({"sets": {}, "format": 9}, r"run\.json: format 9: this code reads formats 1 to 3"),
        ({"sets": {}, "seed": "1"}, r"run\.json: 'seed' is '1', not an integer"),
        ({"sets": {}, "start": "base"}, r"run\.json: 'start' is str, not a start record"),
        ({"sets": {}, "rewards": "honest"}, r"run\.json: unknown field 'rewards'"),
    ],
)
def test_a_file_that_is_no_heldout_json_is_refused_naming_the_field(data, message):
    with pytest.raises(ValueError, match=message):
        Heldout.from_dict(data, "run.json")


def test_reading_a_file_names_it(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match=r"bad\.json: not JSON"):
        Heldout.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match=r"missing\.json: No such file"):
        Heldout.load(tmp_path / "missing.json")

"""`sparring precheck select-join` (sparring.experiments.selection_join): a select split by
families into parts, joined, is the select of every family at once (its rows, its settings),
and `--reuse` takes it as such; parts of different commands, or sharing a family or an instance,
are refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring.evaluation import choose
from sparring.experiments.selection_join import join_parts
from tests.unit import test_selection_reuse as reuse_tests
from tests.unit import test_selection_rows as rows_tests

cfg, planted = rows_tests.cfg, rows_tests.planted  # the fixtures: nothing loads a model
GOOD, BAD = reuse_tests.GOOD, reuse_tests.BAD


def _select(out: Path, families: str, *extra: str) -> list[str]:
    return ["precheck", "select", "--families", families, "--per-family", "1", "--n", "4",
            "--no-heldout-filter", "--source", GOOD, "--out", str(out), *extra]  # fmt: skip


def _by_id(rows: list[dict]) -> dict[str, dict]:
    return {str(r["meta"]["id"]): r for r in rows}


def test_joined_parts_are_the_select_of_every_family_and_reuse_takes_them(
    planted, tmp_path, capsys, monkeypatch
):
    from sparring.cli.main import main

    assert main(_select(tmp_path / "a", "list_stat")) == 0
    assert main(_select(tmp_path / "b", "list_count")) == 0
    assert main(_select(tmp_path / "all", "list_stat,list_count")) == 0
    argv = ["precheck", "select-join", "--part", str(tmp_path / "a"), "--part",
            str(tmp_path / "b"), "--out", str(tmp_path / "joined")]  # fmt: skip
    assert main(argv) == 0
    assert "SELECT join: 4 tasks of 2 families from 2 parts" in capsys.readouterr().out
    joined = choose.read_rows(tmp_path / "joined" / "rows.jsonl")
    assert _by_id(joined) == _by_id(choose.read_rows(tmp_path / "all" / "rows.jsonl"))
    record = json.loads((tmp_path / "joined" / "select.json").read_text())
    whole = json.loads((tmp_path / "all" / "select.json").read_text())["settings"]
    assert record["settings"] == whole  # as if one command had run
    assert len(record["timing"]["parts"]) == 2

    writers = reuse_tests._no_answers_sampled(monkeypatch)
    rows_file = str(tmp_path / "joined" / "rows.jsonl")
    argv = _select(tmp_path / "more", "list_stat,list_count", "--reuse", rows_file, "--source", BAD)
    assert main(argv) == 0
    assert writers == ["bad"]
    assert len(choose.read_rows(tmp_path / "more" / "rows.jsonl")) == 4


def test_parts_of_other_commands_or_sharing_families_are_refused(planted, tmp_path, capsys):
    from sparring.cli.main import main

    assert main(_select(tmp_path / "a", "list_stat")) == 0
    assert main(_select(tmp_path / "b8", "list_count", "--n", "3")) == 0

    def join(*parts: str) -> str:
        argv = ["precheck", "select-join", "--out", str(tmp_path / "j")]
        for part in parts:
            argv += ["--part", str(tmp_path / part)]
        capsys.readouterr()
        assert main(argv) != 0
        return capsys.readouterr().err

    assert "its n is 3, not 4" in join("a", "b8")
    assert "its families ['list_stat'] are in an earlier part" in join("a", "a")
    assert "no such file" in join("a", "missing")
    assert not (tmp_path / "j" / "rows.jsonl").exists()


def _part(families: list[str], ids: list[str], level_counts: dict) -> tuple[dict, list[dict]]:
    heldout = {"filter": True, "training": {"seed": 0}, "levels": level_counts}
    settings = {"seed": 1, "n": 64, "families": families, "heldout": heldout}
    rows = [{"task": f"t-{i}", "meta": {"id": i, "level": 2}, "answers": [], "tests": {}}
            for i in ids]  # fmt: skip
    return {"settings": settings, "timing": {"sample_s": 1.0}}, rows


def test_the_held_out_filter_counts_are_summed_and_its_tasks_counted_from_the_rows():
    a = _part(["f"], ["f-1", "f-2"], {"2": {"drawn": 3, "dropped": 1, "kept": 2, "tasks": 2}})
    b = _part(["g"], ["g-1"], {"2": {"drawn": 3, "dropped": 2, "kept": 1, "tasks": 1}})
    record, rows = join_parts([a[0], b[0]], [a[1], b[1]], ["a", "b"])
    assert record["settings"]["families"] == ["f", "g"]
    assert record["settings"]["heldout"]["levels"] == {
        "2": {"drawn": 6, "dropped": 3, "kept": 3, "tasks": 3}
    }
    assert [r["meta"]["id"] for r in rows] == ["f-1", "f-2", "g-1"]
    other = _part(["g"], ["f-2"], {"2": {"drawn": 1, "dropped": 0, "kept": 1, "tasks": 1}})
    with pytest.raises(ValueError, match=r"b: .*its instances \['f-2'\] are in an earlier part"):
        join_parts([a[0], other[0]], [a[1], other[1]], ["a", "b"])
    other[0]["settings"]["heldout"]["training"] = {"seed": 5}
    with pytest.raises(ValueError, match="held-out filter"):
        join_parts([a[0], other[0]], [a[1], other[1]], ["a", "b"])
    with pytest.raises(ValueError, match="two or more parts"):
        join_parts([a[0]], [a[1]], ["a"])

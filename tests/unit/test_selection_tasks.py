"""The selection study's held-out new tasks (sparring.experiments.selection_tasks, `sparring
precheck select`): an instance of the study's seed whose function a training problem of the
config computes is dropped, found by behaviour on shared inputs (its prompt and id differ from
the training twin's), by the materialize phase's own filter; the drops are counted per level
and filed in select.json; families and levels the config does not train are refused; --per-
family 0 takes the fewest instances keeping the tasks a level asked for."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from sparring.evaluation import choose
from sparring.experiments import selection_tasks as st
from sparring.problems.families import generate
from sparring.problems.families.identity import prompt_key, task_key
from tests.unit import test_selection_rows as rows_tests

cfg, planted = rows_tests.cfg, rows_tests.planted  # the fixtures: nothing loads a model


def _families(seed=0, per_family=8, families=("list_stat",), levels=(2, 3)):
    """A config's data.families section: what a run trains on."""
    return SimpleNamespace(
        families=list(families), heldout_families=[], levels=list(levels), seed=seed,
        per_family=per_family,
    )  # fmt: skip


def test_a_held_out_instance_computing_a_training_function_is_dropped():
    """Training: list_stat at seed 0, 8 a level. At seed 1, 3 a level, one instance computes a
    training instance's function under another prompt and id (planted by these settings, found
    here by recomputing both keys on the probe inputs): it is dropped, and only it."""
    train = generate(0, 8, ["list_stat"], [2, 3])
    twins = {task_key(p): p for p in train}
    drawn = generate(1, 3, ["list_stat"], [2, 3])
    overlapping = [p for p in drawn if task_key(p) in twins]
    assert len(overlapping) == 1, "the settings no longer plant one overlapping instance"
    (twin,) = overlapping
    trained = twins[task_key(twin)]
    assert twin.id != trained.id and prompt_key(twin) != prompt_key(trained)  # not by names

    got = st.new_tasks(_families(), 1, 3, ["list_stat"], [2, 3])
    assert [p.id for p in got.problems] == [p.id for p in drawn if p is not twin]
    assert got.levels == {
        "2": {"drawn": 3, "dropped": 1, "kept": 2, "tasks": 2},
        "3": {"drawn": 3, "dropped": 0, "kept": 3, "tasks": 3},
    }
    assert got.short(3) == ["2"] and got.short(2) == []


def test_the_same_instance_as_training_is_dropped_and_a_subset_is_the_draw_restricted():
    """Trained at seed 1, one a level: the study's seed 1 draws those very instances first."""
    got = st.new_tasks(_families(seed=1, per_family=1), 1, 2, ["list_stat"], [2, 3])
    assert [p.id for p in got.problems] == ["fam-list_stat-L2-s1-1", "fam-list_stat-L3-s1-1"]
    both = _families(families=("list_stat", "int_arith"))
    sub = st.new_tasks(both, 1, 3, ["int_arith"], [3])
    assert sub.problems and all("family:int_arith" in p.tags for p in sub.problems)
    assert all("level:3" in p.tags for p in sub.problems) and list(sub.levels) == ["3"]


@pytest.mark.parametrize(
    ("families", "levels", "says"),
    [
        (["int_arith"], [2], "--families: int_arith not trained by the config"),
        (["list_stat"], [1, 2], "--levels: 1 not trained by the config"),
    ],
)
def test_families_and_levels_the_config_does_not_train_are_refused(families, levels, says):
    with pytest.raises(ValueError, match=says):
        st.new_tasks(_families(), 1, 2, families, levels)


def test_sizing_takes_the_fewest_instances_keeping_the_tasks_asked_for():
    fam = _families()
    got = st.sized_new_tasks(fam, 1, ["list_stat"], [2, 3], tasks=5)
    assert not got.short(5) and got.per_family > 5  # 5 drawn keep 4 at level 2 (a drop)
    assert st.new_tasks(fam, 1, got.per_family - 1, ["list_stat"], [2, 3]).short(5)
    assert st.sized_new_tasks(fam, 1, ["list_stat"], [2, 3], per_family=2).per_family == 2


def _select(out, *extra):
    return ["precheck", "select", "--set", "data.families.families=[list_stat]",
            "--set", "data.families.levels=[2,3]", "--set", "data.families.seed=1",
            "--set", "data.families.per_family=1", "--set", "data.families.heldout_seed=3",
            "--seed", "1", "--per-family", "2",
            "--n", "2", "--source", "good=writer:x/good", "--out", str(out), *extra]  # fmt: skip


def test_select_drops_the_planted_overlap_and_files_the_drops(planted, tmp_path, capsys):
    """The config trains on list_stat's first instance a level at seed 1; `select --seed 1`
    draws it again: dropped, counted per level and filed. Without the filter it is kept."""
    from sparring.cli.main import main

    assert main(_select(tmp_path / "on")) == 0
    printed = capsys.readouterr().out
    for level in (2, 3):
        assert (
            f"SELECT held-out: level {level}: 2 instances drawn at seed 1, 1 dropped (a "
            "training problem computes their function or shows their prompt), 1 kept (1 tasks)"
        ) in printed
    assert "SELECT plan: 2 problems (1 families x 2 instances" in printed
    ids = [r["meta"]["id"] for r in choose.read_rows(tmp_path / "on" / "rows.jsonl")]
    assert ids == ["fam-list_stat-L2-s1-1", "fam-list_stat-L3-s1-1"]
    held = json.loads((tmp_path / "on" / "select.json").read_text())["settings"]["heldout"]
    assert held["filter"] is True and held["levels"]["2"]["dropped"] == 1
    assert held["training"] == {
        "seed": 1, "per_family": 1, "levels": [2, 3], "families": ["list_stat"]
    }  # fmt: skip

    assert main(_select(tmp_path / "off", "--no-heldout-filter")) == 0
    assert "no filter (--no-heldout-filter): 4 instances" in capsys.readouterr().out
    ids = [r["meta"]["id"] for r in choose.read_rows(tmp_path / "off" / "rows.jsonl")]
    assert "fam-list_stat-L2-s1-0" in ids and len(ids) == 4

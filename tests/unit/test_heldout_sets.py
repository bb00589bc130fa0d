"""What a learning run trains on and what it is measured on: the family instances of
`data.train: [families]` and the held-out sets split by task (new tasks of the trained
families, renamed trained tasks, new families, the held-out part of `data.heldout` sources).
Pure: no sandbox, no model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sparring.config import ConfigError, from_dict
from sparring.problems import heldout_sets, load_bundled
from sparring.problems import split as split_problems
from sparring.problems.families import NEW_FAMILIES, renamed, task_tag
from sparring.problems.families import sets as family_sets_mod
from sparring.problems.families.identity import prompt_key
from sparring.problems.families.sets import family_task_keys, trained_families
from sparring.problems.sources import problem_sets

TRAINED = ["list_count", "list_map", "int_arith", "str_slice"]


def _sets(cfg):
    return problem_sets(cfg.data, cfg.seed)


def _cfg(**families):
    data = {
        "train": ["families"],
        "families": {"families": TRAINED, "levels": [0], "per_family": 4, "seed": 0,
                     "heldout_seed": 1, "heldout_per_family": 3,
                     "heldout_families": list(NEW_FAMILIES), **families},
        "heldout": ["bundled"],
        "val_fraction": 0.2,
    }  # fmt: skip
    return from_dict({"data": data})


def _tasks(problems):
    return {task_tag(p) for p in problems}


def test_training_is_the_trained_families_only():
    sets = _sets(_cfg())
    assert len(sets.train) == len(TRAINED) * 4
    assert {t for p in sets.train for t in p.tags if t.startswith("family:")} == {
        f"family:{f}" for f in TRAINED
    }
    assert not any(t.startswith("heldout:") for p in sets.train for t in p.tags)
    everything_else = _cfg(families=[])
    assert set(trained_families(everything_else.data.families)).isdisjoint(NEW_FAMILIES)


def test_heldout_sets_are_split_by_task():
    sets = _sets(_cfg())
    by_set = heldout_sets(sets.heldout)
    held = {p.id: p for p in sets.heldout}
    train_tasks = _tasks(sets.train)
    train_prompts = {prompt_key(p) for p in sets.train}
    new = [held[i] for i in by_set["new_tasks"]]
    again = [held[i] for i in by_set["trained_tasks"]]
    other = [held[i] for i in by_set["new_families"]]
    assert new and again and other
    assert not _tasks(new) & train_tasks  # functions no training instance computes
    assert _tasks(again) <= train_tasks  # the same functions, renamed
    every_trained = set().union(*(family_task_keys(f, 0) for f in TRAINED))
    assert not _tasks(other) & every_trained  # no task any trained family could draw
    assert not {prompt_key(p) for p in sets.heldout} & train_prompts
    assert sets.task_overlap == 0
    _, bundled_val = split_problems(load_bundled(), 0.2, 0)
    assert len(by_set["bundled"]) == len(bundled_val) - sets.dropped["bundled"]


def test_new_ops_are_the_new_tasks_whose_operation_no_training_instance_uses():
    sets = _sets(_cfg())
    by_set = heldout_sets(sets.heldout)
    held = {p.id: p for p in sets.heldout}
    train_ops = {family_sets_mod.op_of(p) for p in sets.train}
    assert "" not in train_ops  # every training instance names its operation
    new_ops = set(by_set["new_ops"])
    assert new_ops and new_ops < set(by_set["new_tasks"])  # a strict subset
    for pid in by_set["new_tasks"]:
        op = family_sets_mod.op_of(held[pid])
        assert op and (op not in train_ops) == (pid in new_ops), (pid, op)
    assert len(sets.heldout) == len(held)  # in both sets, written once


def test_the_same_config_gives_the_same_problems():
    a, b = _sets(_cfg()), _sets(_cfg())
    assert [p.to_dict() for p in a.heldout] == [p.to_dict() for p in b.heldout]
    assert [p.to_dict() for p in a.train] == [p.to_dict() for p in b.train]


def test_a_family_both_trained_and_held_out_is_refused():
    with pytest.raises(ConfigError, match="is also trained"):
        _cfg(families=[NEW_FAMILIES[0]])


def test_a_planted_training_task_is_dropped_from_the_new_tasks(monkeypatch):
    """Materialize's held-out draw holds a training task under other names (a renamed copy,
    other id and wording): it must be dropped from new_tasks and counted, and nothing it
    keeps may compute a training task."""
    real = family_sets_mod.generate
    planted: list = []

    def generate(seed, per_family, families, levels):
        problems = real(seed, per_family, families, levels)
        if seed == 1 and list(families) == TRAINED:
            train = real(0, 4, TRAINED, levels)
            planted.append(replace(renamed(train[5], "x"), id="fam-planted-L0-s1-0"))
            problems = [*problems, planted[0]]
        return problems

    monkeypatch.setattr(family_sets_mod, "generate", generate)
    clean = _sets(_cfg())
    monkeypatch.undo()
    baseline = _sets(_cfg())
    assert planted and prompt_key(planted[0]) not in {prompt_key(p) for p in clean.train}
    assert "fam-planted-L0-s1-0" not in {p.id for p in clean.heldout}
    assert clean.dropped["new_tasks"] == baseline.dropped["new_tasks"] + 1
    assert clean.task_overlap == 0


def test_each_source_owns_its_split():
    """Files and families in one data.train: the families' instances all train (their
    held-out sets are fresh draws), the files' problems are the pool of the validation split;
    materialize only asks the sets (`split_val`), naming no source."""
    cfg = from_dict(
        {
            "data": {
                "train": ["bundled", "families"],
                "families": {
                    "families": TRAINED[:2],
                    "levels": [0],
                    "per_family": 2,
                    "heldout_per_family": 0,
                },
                "val_fraction": 0.2,
            }
        }
    )
    sets = problem_sets(cfg.data, cfg.seed)
    bundled = load_bundled()
    assert [p.id for p in sets.train[: len(bundled)]] == [p.id for p in bundled]
    assert sets.val_pool == {p.id for p in bundled}
    assert sets.heldout == [] and sets.dropped == {} and sets.task_overlap == 0
    train, val = sets.split_val(sets.train, 0.2, cfg.seed)
    bundled_train, bundled_val = split_problems(bundled, 0.2, cfg.seed)
    assert val == bundled_val
    assert train == [*bundled_train, *sets.train[len(bundled) :]]

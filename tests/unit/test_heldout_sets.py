"""What a learning run trains on and what it is measured on: the family instances of
`data.train: [families]`, and the held-out sets (fresh instances of the trained families,
families never trained, the held-out part of `data.heldout` sources), disjoint by construction.
Pure: no sandbox, no model."""

from __future__ import annotations

from sparring.config import from_dict
from sparring.families import FAMILIES
from sparring.phases.materialize import heldout_problems, trained_families, training_problems
from sparring.problems import heldout_sets, load_bundled
from sparring.problems import split as split_problems

UNSEEN = list(FAMILIES)[:2]


def _cfg(**families):
    data = {
        "train": ["families"],
        "families": {"levels": [1, 2], "per_family": 2, "seed": 0, "heldout_seed": 1,
                     "heldout_per_family": 1, "heldout_families": UNSEEN, **families},
        "heldout": ["bundled"],
        "val_fraction": 0.2,
    }  # fmt: skip
    return from_dict({"data": data})


def _fingerprint(p):
    return (" ".join(p.description.lower().split()), tuple(p.baseline_tests))


def test_training_is_the_trained_families_only():
    cfg = _cfg()
    train = training_problems(cfg)
    trained = trained_families(cfg)
    assert set(trained) == set(FAMILIES) - set(UNSEEN)
    assert len(train) == len(trained) * 2 * 2  # families x levels x per_family
    assert {t for p in train for t in p.tags if t.startswith("family:")} == {
        f"family:{f}" for f in trained
    }
    assert not any(t.startswith("heldout:") for p in train for t in p.tags)


def test_heldout_sets_are_tagged_sized_and_disjoint_from_training():
    cfg = _cfg()
    train = training_problems(cfg)
    held = heldout_problems(cfg)
    sets = heldout_sets(held)
    n_trained = len(trained_families(cfg))
    assert len(sets["seen"]) == n_trained * 2 and len(sets["unseen"]) == len(UNSEEN) * 2
    _, bundled_val = split_problems(load_bundled(), 0.2, cfg.seed)
    assert sets["bundled"] == [p.id for p in bundled_val]  # the held-out side of the split
    assert not {p.id for p in train} & {p.id for p in held}
    assert not {_fingerprint(p) for p in train} & {_fingerprint(p) for p in held}
    by_id = {p.id: p for p in held}
    unseen_families = {t for i in sets["unseen"] for t in by_id[i].tags if t.startswith("family:")}
    assert unseen_families == {f"family:{f}" for f in UNSEEN}
    seen_families = {t for i in sets["seen"] for t in by_id[i].tags if t.startswith("family:")}
    assert seen_families == {f"family:{f}" for f in trained_families(cfg)}


def test_the_same_config_gives_the_same_problems():
    a, b = _cfg(), _cfg()
    assert [p.to_dict() for p in heldout_problems(a)] == [p.to_dict() for p in heldout_problems(b)]
    assert [p.to_dict() for p in training_problems(a)] == [
        p.to_dict() for p in training_problems(b)
    ]


def test_a_family_both_trained_and_held_out_is_refused():
    import pytest

    from sparring.config import ConfigError

    with pytest.raises(ConfigError, match="is also trained"):
        _cfg(families=[UNSEEN[0]])


def test_a_heldout_instance_equal_to_a_training_one_is_dropped():
    """Other seeds make equal instances rare, so the data above cannot trip the filter: here a
    training set that holds a copy of one held-out instance (another id, the same description
    and tests) must lose that instance from the held-out sets."""
    from dataclasses import replace

    cfg = _cfg()
    held = heldout_problems(cfg)
    twin = replace(held[0], id="trained-copy", tags=["family:x", "level:0"])
    kept = heldout_problems(cfg, [*training_problems(cfg), twin])
    assert [p.id for p in kept] == [p.id for p in held[1:]]

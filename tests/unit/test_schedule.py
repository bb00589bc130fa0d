"""Pure schedule logic: phase order, staged steps, alternating pairs, reasoning curriculum."""

import pytest

from sparring.config import from_dict
from sparring.errors import SparringError
from sparring.phases.common import derived_seed, planned_steps
from sparring.phases.schedule import (
    label_of,
    phase_label,
    plan_phases,
    planned_phase,
    reasoning_stages,
    round_phases,
    total_steps,
)


def kinds(cfg):
    return [(p.round, p.kind) for p in plan_phases(cfg)]


def test_generator_answerer_order():
    cfg = from_dict({"rounds": 2})
    assert kinds(cfg) == [
        (0, "materialize"),
        (1, "generator"),
        (1, "validate"),
        (1, "answerer"),
        (2, "generator"),
        (2, "validate"),
        (2, "answerer"),
    ]
    assert [p.index for p in plan_phases(cfg)] == list(range(7))


def test_answerer_generator_answerer_order():
    cfg = from_dict({"rounds": 1, "phase_schedule": "answerer_generator_answerer"})
    assert round_phases(cfg) == ["answerer", "generator", "validate", "answerer"]


def test_answerer_schedule_has_no_generator_and_no_validation():
    cfg = from_dict({"rounds": 2, "phase_schedule": "answerer"})
    assert kinds(cfg) == [(0, "materialize"), (1, "answerer"), (2, "answerer")]


def test_writer_only_schedule_trains_and_validates_the_generator_alone():
    cfg = from_dict({"rounds": 2, "phase_schedule": "generator"})
    assert kinds(cfg) == [
        (0, "materialize"), (1, "generator"), (1, "validate"), (2, "generator"), (2, "validate"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("sets", "named"),
    [
        ({"generator_mode": "fuzz"}, "generator_mode"),
        ({"generator_mode": "problems"}, "generator_mode"),
        ({"steps": {"alternating": 1}}, "steps.alternating"),
    ],
)
def test_a_writer_only_run_refuses_what_would_not_train_a_writer_alone(sets, named):
    from sparring.config import ConfigError

    with pytest.raises(ConfigError, match=named):
        from_dict({"phase_schedule": "generator", **sets})


def test_staged_steps_and_alternating_pairs():
    cfg = from_dict({"rounds": 1, "steps": {"answerer": 3, "generator": 5, "alternating": 2}})
    phases = plan_phases(cfg)
    assert [(p.kind, p.steps, p.alternating) for p in phases[1:]] == [
        ("generator", 5, False),
        ("validate", 0, False),
        ("answerer", 3, False),
        ("answerer", 1, True),
        ("generator", 1, True),
        ("validate", 0, True),
        ("answerer", 1, True),
        ("generator", 1, True),
        ("validate", 0, True),
    ]
    assert total_steps(phases) == {"answerer": 5, "generator": 7}
    assert len({p.name for p in phases}) == len(phases)  # unique checkpoint names


def test_curriculum_grows_one_stage_per_round():
    cfg = from_dict({"rounds": 6, "reasoning": {"curriculum": True}})
    assert reasoning_stages(cfg, 1) == ["code"]
    assert reasoning_stages(cfg, 2) == ["informal", "code"]
    assert reasoning_stages(cfg, 5) == [
        "informal",
        "structured",
        "pseudocode",
        "constraints",
        "code",
    ]
    assert reasoning_stages(cfg, 9) == reasoning_stages(cfg, 5)
    answerers = [p for p in plan_phases(cfg) if p.kind == "answerer"]
    assert [len(p.stages) for p in answerers] == [1, 2, 3, 4, 5, 5]


def test_no_curriculum_uses_configured_stages():
    cfg = from_dict({"reasoning": {"stages": ["informal", "code"]}})
    assert reasoning_stages(cfg, 1) == reasoning_stages(cfg, 4) == ["informal", "code"]


def test_warm_start_phase_after_materialize_only_when_on():
    assert "warm_start" not in [p.kind for p in plan_phases(from_dict({"rounds": 1}))]
    cfg = from_dict({"rounds": 1, "warm_start": {"steps": 60}})
    phases = plan_phases(cfg)
    assert [(p.round, p.kind, p.steps) for p in phases[:3]] == [
        (0, "materialize", 0),
        (0, "warm_start", 60),
        (1, "generator", cfg.steps.generator),
    ]
    assert phases[1].name == "r00-p01-warm_start"
    assert [p.index for p in phases] == list(range(len(phases)))
    assert total_steps(phases) == {"answerer": cfg.steps.answerer, "generator": cfg.steps.generator}


AGA_ALT = {
    "rounds": 2,
    "phase_schedule": "answerer_generator_answerer",
    "steps": {"answerer": 3, "generator": 5, "alternating": 2},
}


def test_a_phase_name_finds_its_planned_phase_and_steps():
    cfg = from_dict(AGA_ALT)
    for p in plan_phases(cfg):
        assert planned_phase(cfg, p.name, p.kind, p.round) == p
    # r01: p01 answerer, p02 generator, p03 validate, p04 answerer, p05-p07 the first pair
    assert planned_steps(cfg, "r01-p04-answerer", "answerer", 1) == 3
    assert planned_steps(cfg, "r01-p05-answerer", "answerer", 1) == 1  # alternating: one step
    assert planned_steps(cfg, "r01-p06-generator", "generator", 1) == 1
    assert planned_steps(cfg, "answerer", "answerer", 1) == 3  # a free label: the config's


@pytest.mark.parametrize(
    "label, kind, round_index",
    [("r01-p99-answerer", "answerer", 1), ("r01-p02-generator", "answerer", 1),
     ("r01-p02-generator", "generator", 2)],
)  # fmt: skip
def test_a_name_from_another_plan_is_refused(label, kind, round_index):
    with pytest.raises(SparringError, match="compiled from another config"):
        planned_phase(from_dict(AGA_ALT), label, kind, round_index)


def test_every_phase_draws_with_its_own_seed():
    cfg = from_dict(AGA_ALT)
    plan = plan_phases(cfg)
    assert len({derived_seed(cfg, p.round, p.name) for p in plan}) == len(plan)


def test_labels_people_read():
    cfg = from_dict(AGA_ALT)
    labels = [(p.name, phase_label(cfg, p)) for p in plan_phases(cfg) if p.round == 1]
    assert labels == [
        ("r01-p01-answerer", "answerer"),
        ("r01-p02-generator", "generator"),
        ("r01-p03-validate", "validate"),
        ("r01-p04-answerer", "answerer_final"),
        ("r01-p05-answerer", "answerer-alt"),
        ("r01-p06-generator", "generator-alt"),
        ("r01-p07-validate", "validate-alt"),
        ("r01-p08-answerer", "answerer-alt"),
        ("r01-p09-generator", "generator-alt"),
        ("r01-p10-validate", "validate-alt"),
    ]
    assert label_of(cfg, "r02-p14-answerer", "answerer", 2) == "answerer_final"
    assert label_of(cfg, "answerer_final", "answerer", 1) == "answerer_final"  # free: as given
    ga = from_dict({"rounds": 1})
    assert [phase_label(ga, p) for p in plan_phases(ga)][1:] == [
        "generator",
        "validate",
        "answerer",
    ]

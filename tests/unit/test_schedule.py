"""Pure schedule logic: phase order, staged steps, alternating pairs, reasoning curriculum."""

from sparring.config import from_dict
from sparring.training.schedule import plan_phases, reasoning_stages, round_phases, total_steps


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

"""The evaluate phase's held-out output (sparring.phases.evaluate): the learning summary groups
val.jsonl's `task:` instances, and heldout.json carries what `sparring eval control` and
`sparring eval pool` check. Models, sandbox and MLflow are stubbed: pure and fast."""

from __future__ import annotations

import json

from sparring.backends import lineage
from sparring.config import from_dict
from sparring.evaluation import learning
from sparring.evaluation.heldout import HELDOUT_FILE
from sparring.phases import evaluate as evaluate_mod
from sparring.problems import Problem, write_jsonl


def _problem(pid: str, *tags: str) -> Problem:
    return Problem(
        pid, "d", "def f(x):", ["assert f(1) == 1"], "def f(x):\n    return x", tags=list(tags)
    )


def _stub_edges(monkeypatch, entries: list, evaluate_snapshots) -> None:
    """The evaluate phase with its edges stubbed: no sandbox check, these snapshots, this
    evaluation of them, no MLflow."""
    monkeypatch.setattr(evaluate_mod, "require_isolation", lambda cfg: None)
    monkeypatch.setattr(evaluate_mod, "resolve_snapshots", lambda path, cache: entries)
    monkeypatch.setattr(evaluate_mod, "evaluate_snapshots", evaluate_snapshots)
    monkeypatch.setattr(evaluate_mod.tracking, "log_artifacts", lambda *a, **k: None)
    monkeypatch.setattr(evaluate_mod.report_mod, "write_report", lambda *a, **k: [])
    monkeypatch.setattr(evaluate_mod.report_mod, "log_to_mlflow", lambda out: 0)


def test_heldout_json_carries_tasks_reward_seed_and_digest(tmp_path, monkeypatch):
    # six instances of one new task and five bundled problems (each its own task)
    same = [_problem(f"t{i}", "heldout:new_tasks", "task:abc") for i in range(6)]
    bundled = [_problem(f"b{i}", "heldout:bundled") for i in range(5)]
    write_jsonl([*same, *bundled], tmp_path / "val.jsonl")
    base = {p.id: 0.0 for p in [*same, *bundled]}
    final = {p.id: 1.0 for p in [*same, *bundled]}
    both = {"discriminating": base, "defining": base, "defines": base, "strict": base}
    report = {
        "baseline": {"val_sampled": both},
        "snapshots": [{"round": 1, "val_sampled": {**both, "discriminating": final}}],
    }
    # the last round's answerer carries the start record init-models wrote
    # (sparring.backends.lineage)
    start = {"configured": "tiny-random", "model": "tiny-random", "champion": None}
    answerer = tmp_path / "a1"
    answerer.mkdir()
    (answerer / "sparring_model.json").write_text(json.dumps({"base": "x", "start": start}))
    entries = [{"round": 1, "answerer_path": str(answerer), "tests_path": ""}]
    _stub_edges(monkeypatch, entries, lambda *a, **k: report)
    cfg = from_dict({"seed": 4, "data": {"val_samples": 2}})
    out = tmp_path / "out"
    evaluate_mod.evaluate(cfg, str(tmp_path), "manifest.json", "", str(out))

    written = json.loads((out / HELDOUT_FILE).read_text())
    assert written["reward"] == cfg.rewards.answerer and written["seed"] == 4
    assert written["config_digest"] == cfg.digest()
    assert written["sets"]["new_tasks"] == {f"t{i}": [0.0, 1.0] for i in range(6)}
    assert written["tasks"] == {
        **{f"t{i}": "abc" for i in range(6)},
        **{f"b{i}": f"b{i}" for i in range(5)},
    }
    assert written["start"] == start and written["code"] == lineage.code_digest()
    assert set(written["measures"]) == {"strict", "defining", "defines"}
    gains = report["learning"]["gains"]
    assert gains["heldout_new_tasks"]["discriminating"]["n"] == 1  # six instances, one task
    assert gains["heldout_bundled"]["discriminating"]["n"] == 5


def _half(pid: str) -> Problem:
    return Problem(
        pid, "Halve an integer, rounding down.", "def half(n):", ["assert half(4) == 2"],
        "def half(n):\n    return n // 2\n", tags=["heldout:new_tasks", f"task:{pid}"],
    )  # fmt: skip


def _evaluate_with_generators(tmp_path, monkeypatch, overrides: dict) -> tuple[dict, dict, list]:
    """evaluate() on five held-out new tasks, a manifest whose final round names the generator
    `final-gen`, and a pool of one wrong and one right answer per problem; the base generator
    writes tests on even inputs only (they cannot tell n / 2 from n // 2), the final one
    half(5) == 2. The sandbox is real (bubblewrap); the models are the fake `sample_tests`."""
    from sparring.evaluation import generator_heldout as gh

    problems = [_half(f"h{i}") for i in range(5)]
    write_jsonl(problems, tmp_path / "val.jsonl")
    wrong = gh.PoolAnswer("def half(n):\n    return n / 2\n", False)
    right = gh.PoolAnswer("def half(n):\n    return n >> 1\n", True)
    per = {p.id: 0.5 for p in problems}
    report = {
        "baseline": {"val_sampled": {"discriminating": per}},
        "snapshots": [{"round": 1, "val_sampled": {"discriminating": per}}],
    }
    entries = [{"round": 1, "answerer_path": "a1", "tests_path": "", "generator_path": "final-gen"}]

    def fake_evaluate_snapshots(*args, base_pool=None, **kwargs):
        base_pool.update({p.id: [wrong, right] for p in problems})
        return report

    sampled = []

    def fake_sample_tests(cfg, model_name, problems, samples, seed):
        sampled.append(model_name)
        text = "assert half(5) == 2" if model_name == "final-gen" else "assert half(6) == 3"
        return [[f"```python\n{text}\n```"] * samples for _ in problems]

    _stub_edges(monkeypatch, entries, fake_evaluate_snapshots)
    monkeypatch.setattr(gh, "sample_tests", fake_sample_tests)
    cfg = from_dict({"data": {"val_samples": 2, "generator_samples": 2}, **overrides})
    metrics = evaluate_mod.evaluate(cfg, str(tmp_path), "manifest.json", "", str(tmp_path / "o"))
    return metrics, report, sampled


def test_evaluate_measures_the_base_and_final_generator_held_out(tmp_path, monkeypatch):
    metrics, report, sampled = _evaluate_with_generators(tmp_path, monkeypatch, {})
    base_generator = from_dict({}).model_for("generator").name
    assert sampled == [base_generator, "final-gen"]
    assert report["learning"]["generator_heldout"]["models"]["final"] == "final-gen"
    # what MLflow keeps, read back into the LEARN lines
    assert metrics["learn.generator_catch_heldout.before"] == 0.0
    assert metrics["learn.generator_catch_heldout.after"] == 1.0
    summary, *_ = learning.from_phase_runs([("r1-evaluate", metrics)])
    lines = learning.learn_lines(summary, [], None)
    line = "LEARN generator_catch_heldout base=0.000 final=1.000 ci95_delta=1.000,1.000 n=5"
    assert f"{line} skipped=0" in lines
    assert "LEARN generator_validity base=1.000 final=1.000" in lines


def test_a_run_without_a_generator_phase_measures_no_generator(tmp_path, monkeypatch):
    """phase_schedule answerer: the final generator is the base one, nothing to compare."""
    metrics, report, sampled = _evaluate_with_generators(
        tmp_path, monkeypatch, {"phase_schedule": "answerer"}
    )
    assert sampled == []
    assert not any(k.startswith("learn.generator_") for k in metrics)
    assert "generator_heldout" not in report["learning"]


def _evaluate_below_start(
    tmp_path, monkeypatch, refuse: bool, gate_final: float = 0.0, margin: float = 0.0
) -> tuple[dict, list]:
    """One round whose final answerer scores below the base model it started from on the
    held-out new tasks in the evaluation's sample (three tasks, 1.0 -> 0.0 on one of them);
    the start gate's own sample (the sampler stubbed: the start scores as in the evaluation,
    the final `gate_final` on every task). report.json as written, and the gate's draws."""
    val = [_problem(f"t{i}", "heldout:new_tasks", f"task:k{i}") for i in range(3)]
    write_jsonl(val, tmp_path / "val.jsonl")
    base = {p.id: 1.0 if p.id == "t0" else 0.0 for p in val}
    final = {p.id: 0.0 for p in val}
    both = {"discriminating": base, "defining": base, "defines": base, "strict": base}
    report = {
        "baseline": {"val_sampled": both},
        "snapshots": [
            {
                "round": 1,
                "answerer_reward": 0.6,
                "test_validity": 0.5,
                "promotable": True,
                "val_sampled": {**both, "discriminating": final},
            }
        ],
        "selection": {"index": 0, "score": 0.57, "reason": "before the held-out gains"},
    }
    answerer = tmp_path / "a1"
    answerer.mkdir()
    start = {"configured": "tiny-random", "model": "tiny-random", "champion": None}
    (answerer / "sparring_model.json").write_text(json.dumps({"base": "x", "start": start}))
    entries = [{"round": 1, "answerer_path": str(answerer), "tests_path": ""}]
    _stub_edges(monkeypatch, entries, lambda *a, **k: report)
    draws = []

    def gate_sampler(cfg, model, problems, name, cache=False, seed=None):
        draws.append((model, [p.id for p in problems], seed))
        scores = (
            base if model == cfg.model_for("answerer").name else dict.fromkeys(base, gate_final)
        )
        return {"discriminating": {p.id: scores[p.id] for p in problems}}

    monkeypatch.setattr(evaluate_mod, "sampled_scores", gate_sampler)
    cfg = from_dict(
        {
            "data": {"val_samples": 1, "train": ["families"]},
            "selection": {"refuse_below_start": refuse, "start_margin": margin},
        }
    )
    evaluate_mod.evaluate(cfg, str(tmp_path), "manifest.json", "", str(tmp_path / "out"))
    return json.loads((tmp_path / "out" / "report.json").read_text()), draws


def test_the_start_gate_keeps_a_run_below_its_start_from_promotion(tmp_path, monkeypatch):
    """With selection.refuse_below_start the selection is made again once the gate's own sample
    of the start and the final answerer is known, and the report (which select reads) refuses
    the final round in words."""
    written, draws = _evaluate_below_start(tmp_path, monkeypatch, refuse=True, gate_final=0.0)
    assert written["learning"]["gate"]["discriminating"]["delta"] < 0
    selection = written["selection"]
    assert selection["index"] is None, selection
    assert "held-out new tasks 0.333 -> 0.000 (n=3, sampled for the gate)" in selection["reason"]
    # the gate drew its own answers: start then final, the new tasks alone, a seed of its own
    cfg = from_dict({"data": {"val_samples": 1}})
    seed = evaluate_mod.gate_seed(cfg)
    assert draws == [
        (cfg.model_for("answerer").name, ["t0", "t1", "t2"], seed),
        (str(tmp_path / "a1"), ["t0", "t1", "t2"], seed),
    ]
    assert seed != cfg.seed + 1, "not the evaluation's draw"


def test_the_start_gate_reads_its_own_sample_not_the_reported_gain(tmp_path, monkeypatch):
    """The reported gain over the start (VS_START: the evaluation's answers) fell; the gate's
    own draw did not: promoted, and the reported gain is left as measured."""
    written, _ = _evaluate_below_start(tmp_path, monkeypatch, refuse=True, gate_final=1.0)
    reported = written["learning"]["gains"]["heldout_new_tasks_vs_start"]["discriminating"]
    assert reported["delta"] < 0
    assert written["learning"]["gate"]["discriminating"]["delta"] > 0
    assert written["selection"]["index"] == 0, written["selection"]


def test_a_drop_within_the_start_margin_is_promoted(tmp_path, monkeypatch):
    written, _ = _evaluate_below_start(
        tmp_path, monkeypatch, refuse=True, gate_final=0.0, margin=0.5
    )
    assert written["learning"]["gate"]["discriminating"]["delta"] == -1 / 3
    assert written["selection"]["index"] == 0, written["selection"]


def test_without_the_start_gate_a_run_below_its_start_is_promoted(tmp_path, monkeypatch):
    written, draws = _evaluate_below_start(tmp_path, monkeypatch, refuse=False)
    assert written["selection"]["index"] == 0
    assert draws == [] and "gate" not in written["learning"], "no gate, no sample of its own"


def test_the_gate_seed_follows_the_runs_seeds_and_start_never_its_id():
    """One per seeds and start (a new champion draws afresh), the same for a repeated run (no
    run id in it: issue 76), never the evaluation's."""
    cfg = from_dict({})
    v1 = {"champion": {"name": "m", "version": "1"}}
    v2 = {"champion": {"name": "m", "version": "2"}}
    seeds = {evaluate_mod.gate_seed(cfg, start) for start in (None, v1, v2)}
    assert len(seeds) == 3 and cfg.seed + 1 not in seeds
    assert evaluate_mod.gate_seed(cfg, v1) == evaluate_mod.gate_seed(from_dict({}), dict(v1))
    other = from_dict({"training_seed": 7})
    assert evaluate_mod.gate_seed(other) != evaluate_mod.gate_seed(cfg)

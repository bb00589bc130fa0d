"""The evaluate phase's held-out output (sparring.phases.evaluate): the learning summary groups
val.jsonl's `task:` instances, and heldout.json carries what `sparring eval control` and
`sparring eval pool` check. Models, sandbox and MLflow are stubbed: pure and fast."""

from __future__ import annotations

import json

from sparring.config import from_dict
from sparring.evaluation import learning
from sparring.phases import evaluate as evaluate_mod
from sparring.problems import Problem, write_jsonl


def _problem(pid: str, *tags: str) -> Problem:
    return Problem(
        pid, "d", "def f(x):", ["assert f(1) == 1"], "def f(x):\n    return x", tags=list(tags)
    )


def test_heldout_json_carries_tasks_reward_seed_and_digest(tmp_path, monkeypatch):
    # six instances of one new task and five bundled problems (each its own task)
    same = [_problem(f"t{i}", "heldout:new_tasks", "task:abc") for i in range(6)]
    bundled = [_problem(f"b{i}", "heldout:bundled") for i in range(5)]
    write_jsonl([*same, *bundled], tmp_path / "val.jsonl")
    base = {p.id: 0.0 for p in [*same, *bundled]}
    final = {p.id: 1.0 for p in [*same, *bundled]}
    report = {
        "baseline": {"val_sampled": {"discriminating": base}},
        "snapshots": [{"round": 1, "val_sampled": {"discriminating": final}}],
    }
    monkeypatch.setattr("sparring.phases.sandboxed.require_isolation", lambda cfg: None)
    monkeypatch.setattr(evaluate_mod, "resolve_snapshots", lambda path, cache: [])
    monkeypatch.setattr(evaluate_mod, "evaluate_snapshots", lambda *a, **k: report)
    monkeypatch.setattr(evaluate_mod.tracking, "log_artifacts", lambda *a, **k: None)
    monkeypatch.setattr(evaluate_mod.report_mod, "write_report", lambda *a, **k: [])
    monkeypatch.setattr(evaluate_mod.report_mod, "log_to_mlflow", lambda out: 0)
    cfg = from_dict({"seed": 4, "data": {"val_samples": 2}})
    out = tmp_path / "out"
    evaluate_mod.evaluate(cfg, str(tmp_path), "manifest.json", "", str(out))

    written = json.loads((out / learning.HELDOUT_FILE).read_text())
    assert written["reward"] == cfg.rewards.answerer and written["seed"] == 4
    assert written["config_digest"] == cfg.digest()
    assert written["sets"]["new_tasks"] == {f"t{i}": [0.0, 1.0] for i in range(6)}
    assert written["tasks"] == {
        **{f"t{i}": "abc" for i in range(6)},
        **{f"b{i}": f"b{i}" for i in range(5)},
    }
    gains = report["learning"]["gains"]
    assert gains["heldout_new_tasks"]["discriminating"]["n"] == 1  # six instances, one task
    assert gains["heldout_bundled"]["discriminating"]["n"] == 5

"""The two runners of one config draw the same problems in every phase: the plain runner
(`sparring.plain_runner.loop.run_selfplay`) and the KFP DAG under kfp.local (`local_run.run_local`).

Both walk `plan_phases` and pass each training phase its `Phase.name`, which seeds its draws; each
trained (here: dry-run copied) model records the label it was given and a digest of the problems
it drew (`problems_drawn`), and this test compares those records phase by phase. A dry run on
the smoke config (tiny random model, no GRPO updates) still draws problems, with one alternating
pair per round so the alternating phases are compared too. MLflow is a SQLite file in tmp_path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.selfplay import build_pipeline
from sparring import local_run
from sparring.config import load_config
from sparring.phases.schedule import plan_phases
from sparring.plain_runner.loop import run_selfplay

# minutes of real pipeline runs: the slow tier (make test-slow, run by CI)
pytestmark = [pytest.mark.integration, pytest.mark.slow]

TRAINED = ("answerer", "generator")


def _record(model_dir: Path) -> tuple[str, str]:
    """(phase label, digest of the problems drawn) that a phase wrote with its model."""
    meta = json.loads((model_dir / "sparring_model.json").read_text())
    return meta["phase"], meta["problems_drawn"]


def _plain_draws(workdir: Path) -> dict[str, str]:
    """Drawn-problem digests by phase label, from the plain runner's phase folders."""
    phases = [d for d in sorted(workdir.glob("r*-p*-*")) if d.name.endswith(TRAINED)]
    return dict(_record(d / "model") for d in phases)


def _kfp_draws(root: Path) -> dict[str, str]:
    """Drawn-problem digests by phase label, from kfp.local's task outputs (one folder per
    task: `<root>/<pipeline>-<time>/train-answerer-3/model/`)."""
    models = [*root.glob("*/train-answerer*/model"), *root.glob("*/train-generator*/model")]
    return dict(_record(m) for m in models)


def test_plain_runner_and_kfp_local_draw_the_same_problems(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MLflow's SQLite store keeps artifacts under ./mlruns
    cfg = load_config(
        Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml",
        [
            "name=runners-agree",
            "dry_run=true",
            "rounds=2",
            "steps.alternating=1",
            "data.humaneval_limit=1",  # evaluate is not compared: keep it short
            f"tracking.mlflow_uri=sqlite:///{tmp_path}/mlflow.db",
        ],
    )
    plan = plan_phases(cfg)
    trained = [p.name for p in plan if p.kind in TRAINED]
    assert any(p.alternating for p in plan)

    run_selfplay(cfg, str(tmp_path / "plain"))
    plain = _plain_draws(tmp_path / "plain")
    local_run.run_local(cfg, tmp_path / "kfp", build_pipeline)
    kfp = _kfp_draws(tmp_path / "kfp")

    assert sorted(plain) == sorted(kfp) == sorted(trained)  # every phase labelled by its name
    assert {name: kfp[name] for name in trained} == {name: plain[name] for name in trained}
    # the labels matter: the phases of one kind do not all draw the same problems
    for kind in TRAINED:
        assert len({plain[n] for n in trained if n.endswith(kind)}) > 1, kind

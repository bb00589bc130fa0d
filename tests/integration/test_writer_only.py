"""A writer-only run (phase_schedule: generator) end to end under kfp.local on the smoke config,
against a real MLflow server: the generator phase against the frozen base answerer, the
validation of its tests (logged, though no answerer task follows to log it), an evaluation that
scores the base answerer only (no answerer snapshot), and the final generator registered under
the writer's name while the answerers' registry entry stays empty. About a minute and a half on
2 CPU cores."""

from __future__ import annotations

import json

import mlflow
import pytest

from pipelines.selfplay import build_pipeline
from sparring import local_run
from sparring.config import load_config

# slow tier (make test-slow, CI): a whole kfp.local run, a minute on 2 cores
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_writer_only_run_trains_validates_and_registers_the_writer_alone(
    tmp_path, mlflow_server, capsys, monkeypatch
):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    name = "writer-only"
    cfg = load_config(
        "configs/smoke.yaml",
        [
            f"name={name}",
            "phase_schedule=generator",
            "rounds=1",
            f"tracking.experiment=e2e-{name}",
            f"selection.registered_model=answerer-{name}",
        ],
    )
    root = tmp_path / "outputs"
    state = local_run.run_local(cfg, root, build_pipeline)
    console = capsys.readouterr().out
    assert "r1 train-generator: done in" in console
    assert "train-answerer" not in console
    children = {c["name"]: c for c in state["children"]}
    assert set(children) == {
        "r0-materialize", "r0-init-models", "r1-train-generator", "r1-validate-tests",
        "r2-evaluate", "r2-select",
    }  # fmt: skip
    assert all(c["status"] == "FINISHED" for c in children.values())
    assert children["r1-validate-tests"]["metrics"] > 0  # logged by the evaluate task

    report = json.loads(next(root.glob("**/evaluate/report/report.json")).read_text())
    assert report["snapshots"] == []  # the base answerer is scored, no trained one

    client = mlflow.MlflowClient(mlflow_server)
    writer = client.get_model_version_by_alias(f"answerer-{name}-writer", "champion")
    assert writer.run_id == state["parent_run_id"]
    assert not client.search_model_versions(f"name='answerer-{name}'")  # no answerer registered
    champion = next(root.glob("**/select/champion"))
    meta = json.loads((champion / "sparring_model.json").read_text())
    assert meta["role"] == "generator"
    assert f"LEARN champion promoted=yes version=1 (answerer-{name}-writer)" in "\n".join(
        local_run.learn_lines(cfg, state["parent_run_id"])
    )

"""The smoke pipeline end to end under kfp.local (SubprocessRunner, use_venv=False) against a real
MLflow server with artifacts in S3 (moto server), then `--resume` served from kfp.local's cache.

Two variants: `dry_run` (phases materialize everything but skip GRPO updates: the fast check of
the DAG wiring, tracking, registry and S3) and the real smoke config (tiny random llama, a few
GRPO steps per phase; about two minutes on 2 CPU cores). Both run in the default tier.
"""

from __future__ import annotations

from pathlib import Path

import boto3
import mlflow
import pytest

from pipelines.selfplay import build_pipeline
from sparring import local_run, storage, tracking
from sparring.config import load_config

ARTIFACT_BUCKET = "sparring-test"  # created by the s3_server fixture (tests/conftest.py)

pytestmark = pytest.mark.integration


def _run_and_check(tmp_path, mlflow_server, s3_server, name, extra, capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)  # whatever an earlier test left
    bank_uri = f"s3://{ARTIFACT_BUCKET}/bank/{name}.jsonl"
    cfg = load_config(
        "configs/smoke.yaml",
        [
            f"name={name}",
            f"tracking.experiment=e2e-{name}",
            f"selection.registered_model=answerer-{name}",
            f"storage.bank_uri={bank_uri}",
            f"storage.s3_endpoint={s3_server}",
            *extra,
        ],
    )
    root = tmp_path / "outputs"
    state = local_run.run_local(cfg, root, build_pipeline)
    console = capsys.readouterr().out
    # the user sees one line per phase (and per GRPO step); kfp.local's dump goes to the log
    assert "r1 train-answerer: done in" in console and "r3-select" not in console
    assert "executor_input" not in console and "base image" not in console
    if "dry_run=true" not in extra:
        assert "r1 train-answerer step 1/1 reward=" in console
    logs = list(root.glob("run-*.log"))
    assert logs and "executor_input" in logs[0].read_text()

    mlflow.set_tracking_uri(mlflow_server)
    parent = mlflow.get_run(state["parent_run_id"])
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["sparring.kfp_run_id"] == state["kfp_run_id"]
    children = {c["name"]: c for c in state["children"]}
    for r in (1, 2):
        for phase in ("train-generator", "validate-tests", "train-answerer"):
            assert f"r{r}-{phase}" in children, sorted(children)
            assert children[f"r{r}-{phase}"]["status"] == "FINISHED"
            assert children[f"r{r}-{phase}"]["metrics"] > 0, phase
    assert {"r0-materialize", "r0-init-models", "r3-evaluate", "r3-select"} <= set(children)
    assert children["r3-evaluate"]["metrics"] > 0
    evaluate = mlflow.search_runs(
        [parent.info.experiment_id],
        filter_string="attributes.run_name = 'r3-evaluate'",
        output_format="list",
    )[-1]
    logged = {a.path for a in mlflow.MlflowClient().list_artifacts(evaluate.info.run_id, "report")}
    assert {"report/report.md", "report/curves.png", "report/cross_play.png"} <= logged
    if "dry_run=true" not in extra:  # every GRPO step's reward, read back from MLflow
        assert "report/steps.png" in logged

    select = mlflow.search_runs(
        [parent.info.experiment_id],
        filter_string="attributes.run_name = 'r3-select'",
        output_format="list",
    )[0]
    client = mlflow.MlflowClient()
    s3 = boto3.client("s3", endpoint_url=s3_server)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=ARTIFACT_BUCKET).get("Contents", [])]
    assert any(k.endswith("/config.yaml") for k in keys)
    assert storage.exists(bank_uri), "the test bank persisted to S3"
    if select.data.metrics["promoted"] == 1.0:
        version = client.get_model_version_by_alias(cfg.selection.registered_model, "champion")
        assert version.run_id == parent.info.run_id
        assert version.source.startswith("models:/m-")  # a logged model of the parent run
        logged = f"/models/{version.source.removeprefix('models:/')}/artifacts/sparring_model.json"
        assert any(logged in k for k in keys), keys
    else:  # the selection refused every snapshot: the reason is on record, nothing registered
        pytest.fail(f"nothing promoted: {select.data.params or select.data.tags}")

    if cfg.data.val_samples:
        _check_learning(cfg, root, state, client)

    again = local_run.run_local(cfg, root, build_pipeline, resume=True)
    assert again["parent_run_id"] == state["parent_run_id"] and again["resumed"]
    # kfp.local's cache served every finished task: no phase ran (and logged a run) again
    attempts = {c["name"]: c["attempts"] for c in state["children"]}
    assert {c["name"]: c["attempts"] for c in again["children"]} == attempts
    assert len(client.search_model_versions(f"name='{cfg.selection.registered_model}'")) == 1
    return state


def _check_learning(cfg, root, state, client):
    """With data.val_samples set, evaluate samples the held-out problems: the report has its
    learning table and the LEARN lines read the same numbers back from MLflow."""
    children = {r.info.run_name: r for r in tracking.child_runs(cfg, state["parent_run_id"])}
    evaluate = children["r3-evaluate"].data.metrics
    base = evaluate["learn.base_to_final.discriminating.before"]
    final = evaluate["learn.base_to_final.discriminating.after"]
    trained = sum(
        children[f"r{r}-train-answerer"].data.metrics["completions_trained"] for r in (1, 2)
    )
    report = next(root.glob("**/evaluate/report/report.md")).read_text()
    assert "## Learning on held-out problems" in report
    assert "| base to final | discriminating |" in report
    lines = local_run.learn_lines(cfg, state["parent_run_id"])
    assert any(ln.startswith(f"LEARN completions_trained {trained:.0f} sampled=") for ln in lines)
    # a step or none per quarter: no interval worth the name, so none is printed as a number
    assert lines[1].startswith("LEARN train_reward first=") and "ci95_delta=n/a (n=" in lines[1]
    assert any(
        line.startswith(f"LEARN validation_pass_rate base={base:.3f} final={final:.3f}")
        for line in lines
    )
    if "families" in cfg.data.train:  # every held-out set measured, read back from MLflow
        new_tasks = evaluate["learn.heldout_new_tasks.discriminating.n"]
        assert new_tasks == len(_heldout_tasks(root, "new_tasks")) > 0  # tasks, not instances
        for name in ("heldout_new_tasks", "heldout_trained_tasks", "heldout_new_families",
                     "heldout_bundled"):  # fmt: skip
            line = next(x for x in lines if x.startswith(f"LEARN {name} "))
            assert "base=n/a" not in line, line
        assert any(x.startswith("LEARN definition_rate base=0.") for x in lines)
        # a run from its base model: its own start is the base, so the same numbers
        vs_base = next(x for x in lines if x.startswith("LEARN heldout_new_tasks "))
        vs_start = next(x for x in lines if x.startswith("LEARN heldout_new_tasks_vs_start "))
        assert vs_start.split(" ", 2)[2] == vs_base.split(" ", 2)[2]
        assert any(x.startswith("LEARN bank size=") for x in lines)
        assert "LEARN task_overlap 0" in lines
        zone = children["r1-validate-tests"].data.metrics
        share = zone["zone_problems"] / zone["zone_estimated"]
        assert f"LEARN base_zone_share {share:.3f}" in lines
    # whether the next scheduled run starts from this one, as the select phase decided
    select = next(r for name, r in children.items() if name.endswith("-select"))
    champion = next(x for x in lines if x.startswith("LEARN champion "))
    if select.data.metrics["promoted"]:
        version = select.data.metrics["registered_version"]
        assert champion.startswith(f"LEARN champion promoted=yes version={version:.0f} (")
    else:
        assert champion == f"LEARN champion promoted=no ({select.data.params['selection_reason']})"
    logged = client.download_artifacts(state["parent_run_id"], "learn.txt")
    assert Path(logged).read_text().splitlines() == lines


def _heldout_tasks(root, name):
    """The distinct tasks (`task:` tags; a problem without one is its own) of a held-out set."""
    import json

    from sparring.evaluation.intervals import task_keys

    val = next(root.glob("**/materialize/**/val.jsonl"))
    rows = [json.loads(line) for line in val.read_text().splitlines() if line.strip()]
    tags = {r["id"]: r.get("tags", []) for r in rows if f"heldout:{name}" in r.get("tags", [])}
    return set(task_keys(tags).values())


# slow tier (15-100 s on 2 cores): make test stays under 15 minutes; CI's make test-slow runs it
@pytest.mark.slow
def test_smoke_dry_run_end_to_end(tmp_path, mlflow_server, s3_server, capsys, monkeypatch):
    _run_and_check(
        tmp_path, mlflow_server, s3_server, "e2e-dry", ["dry_run=true"], capsys, monkeypatch
    )


# the whole smoke DAG with training through kfp.local (~2 min); CI's slow tier runs it, with the
# dry run above, so that make test stays under 15 min (make smoke runs the DAG by hand)
@pytest.mark.slow
def test_smoke_end_to_end(tmp_path, mlflow_server, s3_server, capsys, monkeypatch):
    """The real smoke config on the learning canary's data (spec families; held-out new tasks,
    renamed trained tasks, a new family and the bundled set), with the held-out problems
    sampled (data.val_samples) so the evaluate phase's learning part, the report's learning
    table and the LEARN lines run."""
    families = [
        "data.train=[families]", "data.families.families=[list_count,list_map]",
        "data.families.levels=[0]", "data.families.per_family=1",
        "data.families.heldout_per_family=1", "data.families.heldout_families=[digit_ops]",
        "data.heldout=[bundled]", "data.val_fraction=0.03", "data.max_problems=0",
    ]  # fmt: skip
    _run_and_check(
        tmp_path, mlflow_server, s3_server, "e2e-smoke", ["data.val_samples=2", *families],
        capsys, monkeypatch,
    )  # fmt: skip

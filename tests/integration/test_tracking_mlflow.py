"""sparring.tracking against a real MLflow server whose artifacts live in S3 (moto server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring import tracking
from sparring.config import dump_yaml, load_config
from tests.conftest import free_port

pytestmark = pytest.mark.integration


@pytest.fixture
def cfg(mlflow_server, tmp_path, monkeypatch):
    # Pin the store for this test: earlier tests in the same process may have pointed the
    # environment or MLflow's global tracking URI elsewhere.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    return load_config(
        "configs/smoke.yaml",
        [
            "tracking.experiment=tracking-test",
            f"tracking.mlflow_uri={mlflow_server}",
            f"selection.registered_model=m-{tmp_path.name}",
        ],
    )


def test_uri_env_wins(monkeypatch, tmp_path):
    cfg = load_config("configs/smoke.yaml")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    assert tracking.tracking_uri(cfg) == f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://elsewhere:5000")
    assert tracking.tracking_uri(cfg) == "http://elsewhere:5000"
    assert tracking.ui_hint(cfg) == "http://elsewhere:5000"


def test_parent_child_register_download(cfg, mlflow_server, s3_server, tmp_path, monkeypatch):
    import boto3
    import mlflow
    from mlflow.entities import LoggedModelStatus

    parent = tracking.start_parent_run(cfg, "kfp-run-42")
    with tracking.child_run(cfg, parent, "train-answerer", 1) as child:
        tracking.log_metrics({"reward": 0.25, "note": "skipped", "flag": True}, step=3)
    mlflow.set_tracking_uri(mlflow_server)
    c = mlflow.get_run(child)
    assert c.info.run_name == "r1-train-answerer"
    assert c.data.tags["mlflow.parentRunId"] == parent
    assert (
        c.data.tags["sparring.round"] == "1" and c.data.tags["sparring.phase"] == "train-answerer"
    )
    assert c.data.metrics == {"reward": 0.25}
    p = mlflow.get_run(parent)
    assert p.data.tags[tracking.PARENT_TAG] == "kfp-run-42"
    assert p.data.params["rounds"] == "2"
    cfg_text = mlflow.artifacts.load_text(f"runs:/{parent}/config.yaml")
    assert "name: smoke" in cfg_text

    assert not tracking.download_champion(cfg, str(tmp_path / "none"), "tiny-random")
    model = tmp_path / "model"
    model.mkdir()
    (model / "sparring_model.json").write_text(json.dumps({"base": "tiny-random"}))
    (model / "adapter.bin").write_bytes(b"\x00" * 100)
    assert tracking.register_champion(cfg, str(model), parent, 0.8) == "1"
    assert tracking.register_champion(cfg, str(model), parent, 0.9) == "2"
    client = mlflow.MlflowClient()
    v = client.get_model_version_by_alias(cfg.selection.registered_model, "champion")
    assert v.version == "2" and v.run_id == parent
    # the version is a logged model of the parent run (MLflow 3), which names it back (the
    # open-source registry keeps the link as the source `models:/<model id>`, not `model_id`)
    assert v.source.startswith("models:/m-")
    logged = client.get_logged_model(v.source.removeprefix("models:/"))
    assert logged.source_run_id == parent
    assert logged.status == LoggedModelStatus.READY
    assert json.loads(logged.tags["mlflow.modelVersions"])[0]["version"] == "2"
    assert logged.model_id in {o.model_id for o in client.get_run(parent).outputs.model_outputs}
    exp = client.get_experiment(p.info.experiment_id)
    assert exp.tags["mlflow.experimentKind"] == "finetuning"
    assert (
        p.data.params["version.mlflow"] == mlflow.__version__ and "version.python" in p.data.params
    )
    assert p.info.run_name.startswith("smoke 20") and "kfp-run-42" not in p.info.run_name

    out = tmp_path / "downloaded"
    assert tracking.download_champion(cfg, str(out), "tiny-random")
    assert (out / "adapter.bin").read_bytes() == b"\x00" * 100
    from sparring.serving import inference

    monkeypatch.setenv("SPARRING_CACHE", str(tmp_path / "cache"))
    got = inference.resolve_checkpoint(
        f"models:/{cfg.selection.registered_model}@champion", tracking_uri=mlflow_server
    )
    assert json.loads((Path(got) / "sparring_model.json").read_text()) == {"base": "tiny-random"}

    keys = [
        o["Key"]
        for o in boto3.client("s3", endpoint_url=s3_server)
        .list_objects_v2(Bucket="sparring-test", Prefix="mlflow/")
        .get("Contents", [])
    ]
    # a logged model's files live under the experiment's models/<model id>/artifacts
    assert any(f"/models/{logged.model_id}/artifacts/adapter.bin" in k for k in keys), keys
    tracking.finish_parent_run(cfg, parent)
    assert mlflow.get_run(parent).info.status == "FINISHED"


@pytest.mark.parametrize("per_run", [True, False])
def test_the_seed_a_run_draws_is_tagged_on_its_parent_run(cfg, mlflow_server, tmp_path, per_run):
    """The parent's params hold the configured training_seed (MLflow keeps a param's first
    value); with seed_per_run the seed every task trains with is its tag, for the UI."""
    import dataclasses
    from types import SimpleNamespace

    from mlflow import MlflowClient

    from components import make_components
    from pipelines.common import config_line

    def art(name):
        return SimpleNamespace(path=str(tmp_path / name), uri="", metadata={},
                               log_metric=lambda key, value: None)  # fmt: skip

    small = load_config("configs/smoke.yaml", ["dry_run=true", "data.max_problems=4"])
    cfg = dataclasses.replace(cfg, data=small.data, dry_run=True, seed_per_run=per_run)
    parent = tracking.start_parent_run(cfg, "kfp-seed")
    make_components(cfg).materialize.python_func(
        config_line(cfg), parent, "kfp-seed", art("data"), art("m")
    )
    run = MlflowClient(mlflow_server).get_run(parent)
    assert run.data.params["training_seed"] == str(cfg.training_seed)
    tag = run.data.tags.get("sparring.training_seed")
    if per_run:
        assert tag == str(cfg.for_run(parent).training_seed) != str(cfg.training_seed)
    else:
        assert tag is None and cfg.for_run(parent) == cfg


def test_exit_task_marks_a_failed_runs_parent_failed(cfg, mlflow_server):
    from kfp import dsl
    from mlflow import MlflowClient

    from components import make_components

    finalize = make_components(cfg).finalize.python_func
    yaml_text = dump_yaml(cfg)

    def status(state, message=None):
        return dsl.PipelineTaskFinalStatus(state, "job", "exit-handler-1", None, message)

    client = MlflowClient(mlflow_server)
    failed = tracking.start_parent_run(cfg, "kfp-failed")
    assert finalize(yaml_text, "", "kfp-failed", status("FAILED", "Task train failed.")) == failed
    run = client.get_run(failed)
    assert run.info.status == "FAILED" and run.data.tags["sparring.error"] == "Task train failed."
    assert finalize(yaml_text, "", "kfp-failed", status("FAILED")) == ""  # already ended

    done = tracking.start_parent_run(cfg, "kfp-done")
    tracking.finish_parent_run(cfg, done)  # what select does on success
    assert finalize(yaml_text, "", "kfp-done", status("SUCCEEDED")) == ""
    assert client.get_run(done).info.status == "FINISHED"
    assert finalize(yaml_text, "", "kfp-never-started", status("FAILED")) == ""


def test_step_curves_read_every_training_phase_in_order(cfg, mlflow_server):
    parent = tracking.start_parent_run(cfg, "kfp-run-curves")
    with tracking.child_run(cfg, parent, "train-generator", 1):
        for step, reward in ((1, 0.1), (2, 0.3)):
            tracking.log_metrics({"reward": reward, "grad_norm": 0.5}, step=step)
        tracking.log_metrics({"reward": 0.2})  # the phase's summary, step 0: not a point
    with tracking.child_run(cfg, parent, "validate-tests", 1):
        tracking.log_metrics({"validity": 0.8})  # no training: left out
    with tracking.child_run(cfg, parent, "train-answerer", 1):
        tracking.log_metrics({"reward": 0.4, "frac_reward_zero_std": 0.25}, step=1)

    runs = tracking.step_curves(cfg, parent)

    assert [r["run"] for r in runs] == ["r1-train-generator", "r1-train-answerer"]
    assert runs[0]["phase"] == "train-generator" and runs[0]["round"] == 1
    assert runs[0]["curves"] == {"reward": [[1, 0.1], [2, 0.3]], "grad_norm": [[1, 0.5], [2, 0.5]]}
    assert runs[1]["curves"] == {"reward": [[1, 0.4]], "frac_reward_zero_std": [[1, 0.25]]}


def test_values_buffered_in_one_millisecond_all_arrive(cfg, mlflow_server, monkeypatch):
    """While MLflow is down, TRL's last log and the phase summary can name the same key at step 0
    within one millisecond; sent later in one batch, MLflow kept one value per (key, step,
    timestamp), so one was lost (the fault tier's `logged 166, sent 165`)."""
    import time

    from mlflow import MlflowClient

    from sparring.tracking.buffer import PhaseRun

    parent = tracking.start_parent_run(cfg, "kfp-run-same-ms")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{free_port()}")  # down
    run = PhaseRun(cfg, parent, "train-answerer", 1)
    assert not run.flush(now=True)  # refused: the next retry waits, values queue in memory
    with monkeypatch.context() as frozen:
        frozen.setattr(time, "time", lambda: 1_800_000_000.0)  # one millisecond for all three
        for value in (0.1, 0.2, 0.3):
            run.log_metrics({"reward": value})
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)  # back up
    run.close()
    history = MlflowClient(mlflow_server).get_metric_history(run.run_id, "reward")
    assert sorted(m.value for m in history) == [0.1, 0.2, 0.3]
    assert (run.logged, run.sent, run.unlogged) == (3, 3, "")


def test_phase_params_and_tags_arrive_through_an_outage(cfg, mlflow_server, monkeypatch):
    """`tracking.log_params` in a phase: params and tags (what sparring.sandbox.gate records
    about isolation) go through the phase run's buffer, so a phase that started while MLflow was
    down still gets them, sent with its metrics when the server answers again; logging the same
    value twice (a second sandbox in the phase) is no conflict."""
    from mlflow import MlflowClient

    parent = tracking.start_parent_run(cfg, "kfp-run-params")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{free_port()}")  # down
    monkeypatch.setenv("SPARRING_MLFLOW_WAIT_SECONDS", "30")
    with tracking.phase_run(cfg, parent, "validate-tests", 1) as run:
        assert not run.run_id  # not created yet: everything below waits in memory
        for _ in range(2):
            tracking.log_params({"sandbox.bwrap": "/usr/bin/bwrap", "n": 3}, tags={"t": "bwrap"})
        tracking.log_metrics({"sandbox_isolated": 1.0})
        monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)  # back up before the end
    data = MlflowClient(mlflow_server).get_run(run.run_id).data
    assert data.params == {"sandbox.bwrap": "/usr/bin/bwrap", "n": "3"}
    assert data.tags["t"] == "bwrap" and data.tags["mlflow.parentRunId"] == parent
    cost = {k: data.metrics.pop(k) for k in ("phase/peak_rss_mb", "phase/cpu_s", "phase/wall_s")}
    assert data.metrics == {"sandbox_isolated": 1.0}
    assert cost["phase/peak_rss_mb"] > 10 and cost["phase/wall_s"] >= cost["phase/cpu_s"] >= 0
    assert run.unlogged == ""


def test_params_go_to_mlflows_active_run_outside_a_phase(cfg, mlflow_server):
    import mlflow
    from mlflow import MlflowClient

    mlflow.set_tracking_uri(mlflow_server)
    assert mlflow.active_run() is None
    client = MlflowClient(mlflow_server)
    experiments = [e.experiment_id for e in client.search_experiments()]
    runs_before = {r.info.run_id for r in client.search_runs(experiments)}
    tracking.log_params({"ignored": 1})  # no run at all: nothing, no error
    # nothing: no run was started for it (MLflow's own log_params would start one)
    assert mlflow.active_run() is None, "log_params without a run started an MLflow run"
    experiments = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(experiments)
    assert {r.info.run_id for r in runs} == runs_before, "log_params without a run made a run"
    assert not [r.info.run_id for r in runs if "ignored" in r.data.params]
    parent = tracking.start_parent_run(cfg, "kfp-run-params-child")
    with tracking.child_run(cfg, parent, "evaluate", 1) as run_id:
        tracking.log_params({"sandbox.isolation_used": "none"}, tags={"t": "none"})
    data = MlflowClient(mlflow_server).get_run(run_id).data
    assert data.params == {"sandbox.isolation_used": "none"} and data.tags["t"] == "none"


FRESH = {"configured": "tiny-random", "model": "tiny-random", "base": "tiny-random",
         "weights": "w0", "base_weights": "w0", "champion": None}  # fmt: skip
CHAINED = {**FRESH, "model": "models:/sparring-smoke@champion",
           "champion": {"name": "sparring-smoke", "alias": "champion", "version": "2"}}  # fmt: skip


def _learning_run(cfg, reward, per_problem, tmp_path, extra=(), strict=None, start=FRESH):
    """A finished pipeline run whose evaluate phase logged learning/heldout.json, as
    sparring.phases.evaluate does (`strict`: its every-test-passed pairs; `start`: where its
    answerer started); returns the parent run id."""
    from mlflow import MlflowClient

    from sparring.config import load_config, to_dict
    from sparring.evaluation.arms import ARM_FIELDS
    from sparring.evaluation.heldout import HELDOUT_FILE

    run_cfg = load_config(None, [*_overrides(cfg), f"rewards.answerer={reward}", *extra])
    parent = tracking.start_parent_run(run_cfg, f"kfp-{reward}")
    with tracking.child_run(run_cfg, parent, "evaluate", 3):
        path = tmp_path / reward / HELDOUT_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        params = tracking.flatten(to_dict(run_cfg))
        arm = {f: params[f] for f in ARM_FIELDS}
        record = {"reward": reward, "sets": {"new_tasks": per_problem}, "arm": arm,
                  "start": start}  # fmt: skip
        if strict is not None:
            record["measures"] = {"strict": {"new_tasks": strict}}
        path.write_text(json.dumps(record))
        tracking.log_artifacts([path], "learning")
    tracking.finish_parent_run(run_cfg, parent)
    MlflowClient().get_run(parent)  # exists
    return run_cfg, parent


def _overrides(cfg):
    return [
        f"tracking.experiment={cfg.tracking.experiment}-control",
        f"tracking.mlflow_uri={cfg.tracking.mlflow_uri}",
    ]


def test_learn_and_learn_control_find_each_other_in_the_experiment(cfg, tmp_path):
    """make learn and make learn-control (runs of no study): whichever ends second prints
    reward_vs_control, the treatment's gain on the held-out new tasks minus the control's,
    paired over tasks, read from the other run's evaluate phase in MLflow, naming both runs."""
    from mlflow import MlflowClient

    from sparring.local_run import _arm_lines

    def _control_line(run_cfg, client, runs):
        lines = _arm_lines(run_cfg, client, runs, "reward_vs_control", "rewards.answerer")
        return lines[0] if lines else None

    ids = [f"p{i}" for i in range(6)]
    treat_cfg, treat = _learning_run(cfg, "honest", {i: [0.2, 0.6] for i in ids}, tmp_path)
    client = MlflowClient()
    # no control run yet: no line
    assert _control_line(treat_cfg, client, tracking.child_runs(treat_cfg, treat)) is None
    ctrl_cfg, ctrl = _learning_run(cfg, "format_only", {i: [0.2, 0.3] for i in ids}, tmp_path)
    expected = (
        "LEARN reward_vs_control delta=0.300 ci95_delta=0.300,0.300 n=6 "
        f"treatment=sparring:{treat} control=sparring:{ctrl}"
    )
    assert _control_line(ctrl_cfg, client, tracking.child_runs(ctrl_cfg, ctrl)) == expected
    assert _control_line(treat_cfg, client, tracking.child_runs(treat_cfg, treat)) == expected


def test_a_chained_control_is_refused_in_one_line_naming_it(cfg, tmp_path, capsys):
    """A format-only run that trained on from a champion shares the treatment's problems and
    base scores, so only its start tells it apart: the treatment pairs with the older fresh
    control, and names the chained run it refused."""
    from mlflow import MlflowClient

    from sparring.local_run import _arm_lines

    ids = [f"p{i}" for i in range(6)]
    treat_cfg, treat = _learning_run(cfg, "honest", {i: [0.2, 0.6] for i in ids}, tmp_path)
    _, ctrl = _learning_run(cfg, "format_only", {i: [0.2, 0.3] for i in ids}, tmp_path)
    _, chained = _learning_run(
        cfg, "format_only", {i: [0.2, 0.6] for i in ids}, tmp_path / "x", start=CHAINED
    )
    runs = tracking.child_runs(treat_cfg, treat)
    lines = _arm_lines(treat_cfg, MlflowClient(), runs, "reward_vs_control", "rewards.answerer")
    assert lines == [
        "LEARN reward_vs_control delta=0.300 ci95_delta=0.300,0.300 n=6 "
        f"treatment=sparring:{treat} control=sparring:{ctrl}"
    ]
    refused = [line for line in capsys.readouterr().err.splitlines() if chained in line]
    assert any("control: started from the champion sparring-smoke@champion" in x for x in refused)


def test_a_control_with_another_config_is_not_paired(cfg, tmp_path, capsys):
    """A format-only run that also trained other LoRA layers is no control: the treatment pairs
    with the older run of its own config, and says why it skipped the newer one."""
    from mlflow import MlflowClient

    from sparring.local_run import _arm_lines

    ids = [f"p{i}" for i in range(6)]
    treat_cfg, treat = _learning_run(cfg, "honest", {i: [0.2, 0.6] for i in ids}, tmp_path)
    _, ctrl = _learning_run(cfg, "format_only", {i: [0.2, 0.3] for i in ids}, tmp_path)
    other = ["lora.top_layers=3"]
    _learning_run(cfg, "format_only", {i: [0.2, 0.6] for i in ids}, tmp_path / "x", other)
    runs = tracking.child_runs(treat_cfg, treat)
    lines = _arm_lines(treat_cfg, MlflowClient(), runs, "reward_vs_control", "rewards.answerer")
    assert lines == [
        "LEARN reward_vs_control delta=0.300 ci95_delta=0.300,0.300 n=6 "
        f"treatment=sparring:{treat} control=sparring:{ctrl}"
    ]
    err = capsys.readouterr().err
    assert "is not the other arm of this one" in err and "lora.top_layers=3 there" in err


def test_self_play_finds_its_given_tests_arm(cfg, tmp_path, capsys, monkeypatch):
    """make learn and make learn-given (phase_schedule answerer, the same reward): whichever
    ends second prints selfplay_vs_given on the per-test share and selfplay_vs_given_strict on
    every test passed; the format-only control in the same experiment is not taken for it."""
    from mlflow import MlflowClient

    from sparring.local_run import _arm_lines

    monkeypatch.delenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", raising=False)
    ids = [f"p{i}" for i in range(6)]
    selfplay_cfg, selfplay = _learning_run(
        cfg, "honest", {i: [0.2, 0.7] for i in ids}, tmp_path, strict={i: [0.0, 0.5] for i in ids}
    )
    _learning_run(cfg, "format_only", {i: [0.2, 0.2] for i in ids}, tmp_path / "c")
    given = ["phase_schedule=answerer"]
    _, given_run = _learning_run(cfg, "honest", {i: [0.2, 0.5] for i in ids}, tmp_path / "g",
                                 given, strict={i: [0.0, 0.0] for i in ids})  # fmt: skip
    runs = tracking.child_runs(selfplay_cfg, selfplay)
    lines = _arm_lines(selfplay_cfg, MlflowClient(), runs, "selfplay_vs_given", "phase_schedule")
    both = f"treatment=sparring:{selfplay} control=sparring:{given_run}"
    assert lines == [
        f"LEARN selfplay_vs_given delta=0.200 ci95_delta=0.200,0.200 n=6 {both}",
        f"LEARN selfplay_vs_given_strict delta=0.500 ci95_delta=0.500,0.500 n=6 {both}",
    ]
    # no dense arm has run: no line rather than a wrong pair
    assert _arm_lines(selfplay_cfg, MlflowClient(), runs, "selfplay_vs_dense",
                      "data.given_tests") == []  # fmt: skip
    # the heldout.json downloads print no progress bar between the LEARN lines
    assert "Downloading artifacts" not in capsys.readouterr().err


def _study_run(cfg, tmp_path, arm, reward, final, study="s1", contrasts="D-F", extra=()):
    """A finished run of arm `arm` of a study whose runs share one experiment, as `make study`
    sets them (sparring.experiments.study_design.StudyDesign.overrides); every arm has the same
    six problems and base scores, `final` its held-out score after training."""
    sets = [
        f"tracking.experiment={cfg.tracking.experiment}-study-{study}",
        f"name=study-{arm}-t1",
        f'tracking.study="{study}"',
        f'tracking.arm="{arm}"',
        f'tracking.contrasts="{contrasts}"',
        *extra,
    ]
    per_problem = {f"p{i}": [0.2, final] for i in range(6)}
    return _learning_run(cfg, reward, per_problem, tmp_path / f"{study}-{arm}", sets)


def test_a_study_pairs_two_arms_of_a_planned_contrast_naming_both(cfg, tmp_path):
    """A study that plans D-F: F's run, ending second, pairs with D's (the treatment: the
    honest reward) and names both runs, treatment first."""
    from mlflow import MlflowClient

    from sparring.local_run import _arm_lines

    _, d_run = _study_run(cfg, tmp_path, "D", "honest", 0.6, study="planned")
    f_cfg, f_run = _study_run(cfg, tmp_path, "F", "format_only", 0.3, study="planned")
    runs = tracking.child_runs(f_cfg, f_run)
    lines = _arm_lines(f_cfg, MlflowClient(), runs, "reward_vs_control", "rewards.answerer")
    assert lines == [
        "LEARN reward_vs_control delta=0.300 ci95_delta=0.300,0.300 n=6 "
        f"treatment=study-D-t1:{d_run} control=study-F-t1:{f_run}"
    ]
    tags = MlflowClient().get_run(f_run).data.tags
    assert (tags["sparring.study"], tags["sparring.arm"]) == ("planned", "F")


def test_a_study_skips_arms_it_never_contrasted_and_says_why(cfg, tmp_path, capsys):
    """D (every test given) and B (the all-tests reward) differ in rewards.answerer alone, but
    a study that plans D-F and no D-B prints no reward_vs_control for them, either way round,
    and says on stderr, in one line each, which run it skipped and why; a run of no study in
    the same experiment is no partner of a study's run either."""
    from mlflow import MlflowClient

    from sparring.local_run import _arm_lines

    d_cfg, d_run = _study_run(cfg, tmp_path, "D", "honest", 0.6, study="unplanned")
    b_cfg, b_run = _study_run(cfg, tmp_path, "B", "all_tests", 0.3, study="unplanned")
    outside = [f"tracking.experiment={cfg.tracking.experiment}-study-unplanned"]
    _, loose = _learning_run(
        cfg, "format_only", {f"p{i}": [0.2, 0.2] for i in range(6)}, tmp_path / "loose", outside
    )
    client = MlflowClient()
    for run_cfg, run in ((d_cfg, d_run), (b_cfg, b_run)):
        runs = tracking.child_runs(run_cfg, run)
        assert _arm_lines(run_cfg, client, runs, "reward_vs_control", "rewards.answerer") == []
    err = capsys.readouterr().err.splitlines()
    assert (
        f"reward_vs_control: run {b_run} (arm B) is not a planned contrast of arm D in study "
        "unplanned; skipped"
    ) in err
    assert (
        f"reward_vs_control: run {d_run} (arm D) is not a planned contrast of arm B in study "
        "unplanned; skipped"
    ) in err
    assert any(x.startswith(f"reward_vs_control: run {loose} is a run of no study") for x in err)


def test_learn_seeds_pool_over_the_training_seeds_of_one_config(cfg, tmp_path):
    """make learn SEEDS=3: the last run pools its held-out gains with the runs of the other
    training seeds of its config (seeds=3), and leaves out a run whose config differs
    elsewhere (here LoRA layers) even though it shares problems and base scores."""
    from mlflow import MlflowClient

    from sparring.local_run import _pooled_lines

    ids = [f"p{i}" for i in range(6)]
    pool = [f"tracking.experiment={cfg.tracking.experiment}-pool"]
    runs = [
        _learning_run(cfg, "honest", {i: [0.2, final] for i in ids}, tmp_path / f"s{seed}",
                      [*pool, f"training_seed={seed}"])
        for seed, final in ((1, 0.6), (2, 0.4), (3, 0.5))
    ]  # fmt: skip
    other = [*pool, "training_seed=4", "lora.top_layers=3"]
    _learning_run(cfg, "honest", {i: [0.2, 0.9] for i in ids}, tmp_path / "other", other)
    last_cfg, last = runs[-1]
    lines = _pooled_lines(last_cfg, MlflowClient(), tracking.child_runs(last_cfg, last), last)
    line = next(x for x in lines if x.startswith("LEARN heldout_new_tasks "))
    assert line.startswith("LEARN heldout_new_tasks base=0.200 final=0.500 ci95_delta=")
    assert line.endswith(" n=6 seeds=3")
    first_cfg, first = runs[0]
    alone = _pooled_lines(first_cfg, MlflowClient(), tracking.child_runs(first_cfg, first), first)
    assert any(x.endswith("seeds=3") for x in alone)  # any seed's run finds the others


def test_arms_pool_over_the_training_seeds_of_both_arms(cfg, tmp_path):
    """make learn SEEDS=3 and make learn-given SEEDS=2: selfplay_vs_given pools the three
    self-play seeds against the two given-tests seeds (seeds=3 control_seeds=2), whichever arm
    asks; the format-only control pools too; a run that differs in the arm's field and in
    another one (here the reward too) is neither arm's."""
    from mlflow import MlflowClient

    from sparring.local_run import _pooled_lines

    ids = [f"p{i}" for i in range(6)]
    pool = [f"tracking.experiment={cfg.tracking.experiment}-arms"]
    given = ["phase_schedule=answerer"]

    def seeded(reward, final, seed, extra=()):  # every test passed: half the share's final
        return _learning_run(cfg, reward, {i: [0.2, final] for i in ids},
                             tmp_path / f"{reward}{seed}{len(extra)}",
                             [*pool, f"training_seed={seed}", *extra],
                             strict={i: [0.0, final / 2] for i in ids})  # fmt: skip

    selfplay = [seeded("honest", final, seed) for seed, final in ((1, 0.6), (2, 0.4), (3, 0.5))]
    given_runs = [seeded("honest", final, seed, given) for seed, final in ((1, 0.25), (2, 0.35))]
    seeded("format_only", 0.9, 4, given)  # the arm's field and the reward off: neither arm
    seeded("format_only", 0.2, 1)
    for run_cfg, run in (selfplay[-1], given_runs[-1]):
        lines = _pooled_lines(run_cfg, MlflowClient(), tracking.child_runs(run_cfg, run), run)
        line = next(x for x in lines if x.startswith("LEARN selfplay_vs_given "))
        # the seeds are resampled too: self-play gains 0.2-0.4 per seed, given tests 0.05-0.15
        assert line.startswith("LEARN selfplay_vs_given delta=0.200 ci95_delta=")
        assert line.endswith(" n=6 seeds=3 control_seeds=2")
        lo, hi = map(float, line.split("ci95_delta=")[1].split()[0].split(","))
        assert 0.05 <= lo < 0.2 < hi <= 0.35
        strict = next(x for x in lines if x.startswith("LEARN selfplay_vs_given_strict "))
        assert strict.startswith("LEARN selfplay_vs_given_strict delta=0.100 ci95_delta=")
        assert strict.endswith(" n=6 seeds=3 control_seeds=2")
    first_cfg, first = selfplay[0]
    lines = _pooled_lines(first_cfg, MlflowClient(), tracking.child_runs(first_cfg, first), first)
    control = next(x for x in lines if x.startswith("LEARN reward_vs_control "))
    assert control == "LEARN reward_vs_control delta=0.300 ci95_delta=0.200,0.400 n=6 seeds=3"


def test_a_champion_starts_only_a_run_of_its_own_base_model(cfg, tmp_path):
    """A champion trained from tiny-random under a registered name that another config shares
    (a 1.5B and a 7B preset did): the other config's run refuses it in one line naming both
    models, and init-models does not swallow that into a silent start from the base."""
    from sparring.errors import SparringError
    from sparring.phases.init_models import init_models

    model = tmp_path / "champion"
    model.mkdir()
    meta = {"base": "tiny-random", "tuning_mode": "lora", "role": "answerer"}
    (model / "sparring_model.json").write_text(json.dumps(meta))
    (model / "adapter_model.safetensors").write_bytes(b"\x01" * 64)
    parent = tracking.start_parent_run(cfg, "kfp-run-base")
    assert tracking.register_champion(cfg, str(model), parent, 0.5) == "1"
    tracking.finish_parent_run(cfg, parent)

    got = tracking.download_champion(cfg, str(tmp_path / "same-base"), "tiny-random")
    assert got == {"name": cfg.selection.registered_model, "alias": "champion", "version": "1"}

    def recurring(*sets: str):
        return load_config(
            "configs/smoke.yaml",
            [
                "tracking.experiment=tracking-test",
                f"tracking.mlflow_uri={cfg.tracking.mlflow_uri}",
                f"selection.registered_model={cfg.selection.registered_model}",
                "storage.start_fresh=false",
                *sets,
            ],
        )

    got = init_models(recurring(), str(tmp_path / "a"), str(tmp_path / "g"), champion=True)
    assert got == {"answerer_from_champion": 1.0}
    recorded = json.loads((tmp_path / "a" / "sparring_model.json").read_text())["start"]
    assert recorded["champion"]["version"] == "1" and recorded["base"] == "tiny-random"
    assert recorded["model"] == f"models:/{cfg.selection.registered_model}@champion"

    other = recurring("models.answerer.name=smollm2-135m")
    with pytest.raises(tracking.ChampionRefused) as refused:
        tracking.download_champion(other, str(tmp_path / "other"), "smollm2-135m")
    text = str(refused.value)
    assert "\n" not in text and "trained from tiny-random" in text and "is smollm2-135m" in text
    assert isinstance(refused.value, SparringError)  # the CLI prints it as one line
    with pytest.raises(tracking.ChampionRefused):
        init_models(other, str(tmp_path / "b"), str(tmp_path / "g2"), champion=True)
    assert not (tmp_path / "other").exists() and not (tmp_path / "b").exists()

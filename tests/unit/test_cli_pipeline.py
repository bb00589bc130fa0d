"""`sparring compile | submit | schedule | runs list` at the kfp.Client boundary.

No KFP server can run here: `sparring.cli.pipeline._client_factory` is replaced by a fake that
records every call; the tests check the exact arguments (the package exists and is valid IR when
the client sees it, cron expression, experiment, run name). The real kfp.Client calls are not run.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from sparring.cli import pipeline
from sparring.cli.main import main

SMOKE = "configs/smoke.yaml"


class FakeClient:
    def __init__(self, host, token, namespace):
        self.init = (host, token, namespace)
        self.calls: list[tuple[str, dict]] = []

    def _check_package(self, path):
        assert Path(path).is_file()
        docs = list(yaml.safe_load_all(Path(path).read_text()))
        assert docs[0]["pipelineInfo"]["name"] == "sparring-smoke"
        assert "root" in docs[0] and "deploymentSpec" in docs[0]

    def create_run_from_pipeline_package(self, pipeline_file, **kw):
        self._check_package(pipeline_file)
        self.calls.append(("run", dict(kw, pipeline_file=pipeline_file)))
        return SimpleNamespace(run_id="run-123")

    def create_experiment(self, name, namespace=None):
        self.calls.append(("experiment", {"name": name, "namespace": namespace}))
        return SimpleNamespace(experiment_id="exp-9")

    def get_experiment(self, experiment_name=None, namespace=None):
        self.calls.append(("get_experiment", {"experiment_name": experiment_name}))
        return SimpleNamespace(experiment_id="exp-9")

    def create_recurring_run(self, **kw):
        self._check_package(kw["pipeline_package_path"])
        self.package = next(yaml.safe_load_all(Path(kw["pipeline_package_path"]).read_text()))
        self.calls.append(("recurring", kw))
        return SimpleNamespace(recurring_run_id="rec-1")

    def list_runs(self, **kw):
        self.calls.append(("list", kw))
        run = SimpleNamespace(
            run_id="r1", state="SUCCEEDED", created_at="2026-01-01", display_name="smoke-a"
        )
        return SimpleNamespace(runs=[run])


@pytest.fixture
def fake(monkeypatch):
    made: list[FakeClient] = []

    def factory(host, token, namespace):
        made.append(FakeClient(host, token, namespace))
        return made[-1]

    monkeypatch.setattr(pipeline, "_client_factory", factory)
    for var in ("KF_PIPELINES_ENDPOINT", "KFP_HOST", "KFP_TOKEN", "KF_PIPELINES_SA_TOKEN_PATH"):
        monkeypatch.delenv(var, raising=False)
    return made


def test_submit_passes_package_experiment_and_run_name(fake, capsys):
    rc = main(
        ["submit", "--config", SMOKE, "--host", "http://kfp:8888", "--token", "tok",
         "--experiment", "exp-a", "--run-name", "smoke-1", "--namespace", "team"]
    )  # fmt: skip
    assert rc == 0
    (client,) = fake
    assert client.init == ("http://kfp:8888", "tok", "team")
    ((kind, kw),) = client.calls
    assert kind == "run"
    assert kw["run_name"] == "smoke-1"
    assert kw["experiment_name"] == "exp-a"
    assert kw["namespace"] == "team"
    assert kw["service_account"] == "sparring-pipeline"
    assert kw["pipeline_file"].endswith(".yaml")
    assert "run-123" in capsys.readouterr().out


def test_submit_host_and_token_from_env(fake, monkeypatch, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("sa-token\n")
    monkeypatch.setenv("KF_PIPELINES_ENDPOINT", "http://env-host")
    monkeypatch.setenv("KF_PIPELINES_SA_TOKEN_PATH", str(token_file))
    assert main(["submit", "--config", SMOKE]) == 0
    assert fake[0].init == ("http://env-host", "sa-token", None)
    kw = fake[0].calls[0][1]
    assert kw["experiment_name"] == "sparring-smoke"  # tracking.experiment of the config
    assert kw["run_name"].startswith("smoke-")
    monkeypatch.setenv("KFP_TOKEN", "env-token")
    assert main(["submit", "--config", SMOKE]) == 0
    assert fake[1].init[1] == "env-token"


def test_submit_without_host_is_one_line_error(fake, capsys):
    assert main(["submit", "--config", SMOKE]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no KFP host") and err.count("\n") == 1
    assert not fake


def test_schedule_cron(fake):
    rc = main(
        ["schedule", "--config", SMOKE, "--cron", "0 0 3 * * *", "--host", "http://h",
         "--name", "nightly"]
    )  # fmt: skip
    assert rc == 0
    calls = fake[0].calls
    assert calls[0] == ("experiment", {"name": "sparring-smoke", "namespace": None})
    kind, kw = calls[1]
    assert kind == "recurring"
    assert kw["cron_expression"] == "0 0 3 * * *"
    assert kw["interval_second"] is None
    assert kw["job_name"] == "nightly"
    assert kw["experiment_id"] == "exp-9"
    assert kw["max_concurrency"] == 1


def _scheduled_config(package: dict) -> dict:
    """The config every run of a compiled schedule receives (the config_yaml parameter)."""
    params = package["root"]["inputDefinitions"]["parameters"]
    return yaml.safe_load(params["config_yaml"]["defaultValue"])


def test_a_schedule_gives_each_run_its_own_seed_unless_asked_not_to(fake, capsys):
    """One compiled config runs again and again: with one seed a run after one that was not
    promoted would replay it. The package says seed_per_run, and each task derives the seed
    from its run (Config.for_run)."""
    assert main(["schedule", "-c", SMOKE, "--interval", "3600", "--host", "http://h"]) == 0
    assert _scheduled_config(fake[0].package)["seed_per_run"] is True
    assert "each run draws its training seed from its run id" in capsys.readouterr().out
    args = ["schedule", "-c", SMOKE, "--interval", "3600", "--host", "http://h", "--same-seed"]
    assert main(args) == 0
    assert _scheduled_config(fake[1].package)["seed_per_run"] is False
    assert "every run trains with training_seed 0 (--same-seed)" in capsys.readouterr().out


def test_a_schedule_says_whether_its_start_gate_keeps_the_champion(fake, capsys):
    args = ["schedule", "--interval", "3600", "--host", "http://h"]
    assert main([*args, "-c", "configs/recur.yaml", "--set", "name=smoke"]) == 0  # fake's name
    assert "  start gate: on: a run whose held-out new tasks" in capsys.readouterr().out
    assert _scheduled_config(fake[0].package)["selection"]["refuse_below_start"] is True
    assert main([*args, "-c", SMOKE]) == 0
    assert "start gate: n/a, every run starts from the base model" in capsys.readouterr().out


def test_schedule_interval(fake):
    assert main(["schedule", "-c", SMOKE, "--interval", "3600", "--host", "http://h"]) == 0
    kw = fake[0].calls[1][1]
    assert kw["interval_second"] == 3600 and kw["cron_expression"] is None
    assert kw["job_name"] == "smoke-recurring"


@pytest.mark.parametrize("cron", ["0 3 * * *", "* * * * * * *", "daily"])
def test_schedule_bad_cron_exit_2_one_line(fake, capsys, cron):
    rc = main(["schedule", "--config", SMOKE, "--cron", cron, "--host", "http://h"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --cron") and "six fields" in err and err.count("\n") == 1
    assert not fake  # rejected before any client is made


def test_schedule_needs_cron_or_interval(fake):
    with pytest.raises(SystemExit) as exc:
        main(["schedule", "--config", SMOKE, "--host", "http://h"])
    assert exc.value.code == 2


def test_runs_list(fake, capsys):
    assert main(["runs", "list", "--host", "http://h", "--experiment", "e1"]) == 0
    calls = dict(fake[0].calls)
    assert calls["get_experiment"] == {"experiment_name": "e1"}
    assert calls["list"]["experiment_id"] == "exp-9"
    assert calls["list"]["sort_by"] == "created_at desc"
    out = capsys.readouterr().out
    assert "r1" in out and "SUCCEEDED" in out and "1 runs" in out


def test_compile_cli_is_deterministic(tmp_path, capsys):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    assert main(["compile", "--config", SMOKE, "--output", str(a)]) == 0
    assert main(["compile", "--config", SMOKE, "--output", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert main(["compile", "--config", SMOKE, "--output", str(tmp_path / "x.json")]) == 2
    assert "should" not in capsys.readouterr().err  # our message, not KFP's traceback


def test_run_rejects_s3_pipeline_root(capsys):
    rc = main(["run", "--config", SMOKE, "--set", "storage.pipeline_root=s3://b/root"])
    assert rc == 2
    assert "--pipeline-root" in capsys.readouterr().err

"""`sparring infer` end to end with the tiny random model (its output is garbage: the contract of
the JSON is what is checked), input errors, and `models:/NAME@ALIAS` checkpoints."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sparring.cli.main import main
from sparring.serving import inference as inf

pytestmark = pytest.mark.integration

FAST = ["--max-tokens", "16", "--temperature", "0"]
KEYS = {"problem", "signature", "completion", "code", "tests", "results", "passed", "total"}


def test_infer_single_problem_with_tests(tmp_path, capsys):
    out = tmp_path / "f.json"
    code = main(
        [
            "infer",
            "--checkpoint",
            "tiny-random",
            "--problem",
            "Return the sum of two numbers",
            "--signature",
            "def add(a, b):",
            "--tests",
            "assert add(2,3)==5;assert add(0,0)==0",
            "--execute-tests",
            "--output",
            str(out),
            *FAST,
        ]
    )
    assert code == 0
    record = json.loads(out.read_text())
    assert set(record) == KEYS
    assert record["tests"] == ["assert add(2,3)==5", "assert add(0,0)==0"]
    assert len(record["results"]) == 2 and record["total"] == 2
    assert [r["test"] for r in record["results"]] == record["tests"]
    assert record["passed"] == sum(r["passed"] for r in record["results"])
    assert all(r["outcome"] in ("passed", "failed", "error", "timeout") for r in record["results"])
    assert "Tests:" in capsys.readouterr().out


def test_infer_batch_and_no_reasoning(tmp_path, capsys):
    problems = tmp_path / "problems.json"
    problems.write_text(
        json.dumps(
            {
                "problems": [
                    {
                        "id": "a",
                        "description": "Double x.",
                        "function_signature": "def double(x):",
                        "baseline_tests": ["assert double(2) == 4"],
                        "reference_solution": "def double(x):\n    return 2 * x\n",
                        "difficulty": "easy",
                        "tags": [],
                    },
                    {
                        "problem": "Negate x.",
                        "signature": "def neg(x):",
                        "tests": "assert neg(1) == -1",
                    },
                ]
            }
        )
    )
    out = tmp_path / "batch.json"
    code = main(
        [
            "infer",
            "--checkpoint",
            "tiny-random",
            "--batch",
            "--problems-file",
            str(problems),
            "--execute-tests",
            "--no-reasoning",
            "--output",
            str(out),
            *FAST,
        ]
    )
    assert code == 0
    records = json.loads(out.read_text())
    assert [r["signature"] for r in records] == ["def double(x):", "def neg(x):"]
    assert all(set(r) == KEYS and len(r["results"]) == 1 for r in records)
    assert "Completion:" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no problem given"),
        (["--problem-file", "/nonexistent/problem.txt"], "no such problem file"),
        (["--problem", "x", "--batch", "--problems-file", "p.json"], "not several"),
        (["--batch", "--problems-file", "/nonexistent/p.json"], "no such problems file"),
        (["--batch"], "--batch needs --problems-file"),
        (["--problem", "x", "--execute-tests"], "--execute-tests needs tests"),
    ],
)
def test_infer_bad_input_is_a_one_liner(argv, message, capsys):
    assert main(["infer", "--checkpoint", "tiny-random", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_missing_checkpoint_folder(capsys):
    assert main(["infer", "--checkpoint", "./no/such/model", "--problem", "x"]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_split_tests_keeps_semicolons_inside_strings():
    assert inf.split_tests("assert f('a;b') == 2;assert f('') == 0") == [
        "assert f('a;b') == 2",
        "assert f('') == 0",
    ]


def test_models_uri_resolves_from_the_registry(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPARRING_CACHE", str(tmp_path / "cache"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    (model_dir / "sparring_model.json").write_text('{"tuning_mode": "full"}')
    # The client, not the fluent API: an earlier test in this process may have left an active
    # experiment id behind that this fresh database does not have.
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    run = client.create_run(client.create_experiment("registry"))
    client.log_artifacts(run.info.run_id, str(model_dir), artifact_path="model")
    client.set_terminated(run.info.run_id)
    client.create_registered_model("sparring-answerer")
    source = f"{run.info.artifact_uri}/model"
    version = client.create_model_version(
        "sparring-answerer", source=source, run_id=run.info.run_id
    )
    client.set_registered_model_alias("sparring-answerer", "champion", version.version)
    # The process's own tracking points elsewhere (as in a pipeline step): the lookup must use the
    # registry it is given, not the process-wide one.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'elsewhere.db'}")
    before = (os.environ.get("MLFLOW_TRACKING_URI"), mlflow.get_tracking_uri())
    folder = inf.resolve_checkpoint("models:/sparring-answerer@champion", tracking_uri=uri)
    # the caller's own tracking is left alone (its runs must not move to the registry's server)
    assert (os.environ.get("MLFLOW_TRACKING_URI"), mlflow.get_tracking_uri()) == before
    assert (tmp_path / "cache") in Path(folder).parents
    assert json.loads((Path(folder) / "sparring_model.json").read_text())["tuning_mode"] == "full"
    with pytest.raises(inf.InferenceError, match="cannot download"):
        inf.resolve_checkpoint("models:/sparring-answerer@nope", tracking_uri=uri)
    for ref in ("sparring-answerer/1", "sparring-answerer/latest"):
        got = Path(inf.resolve_checkpoint(f"models:/{ref}", tracking_uri=uri))
        assert (got / "sparring_model.json").read_text() == '{"tuning_mode": "full"}'
    with pytest.raises(inf.InferenceError, match="name an alias or a version"):
        inf.resolve_checkpoint("models:/sparring-answerer", tracking_uri=uri)

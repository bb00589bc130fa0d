"""Every shipped game config on the tiny model: it trains its roles for real (records, gradient
steps, saved adapters), compiles into a KFP pipeline, and one game runs as that pipeline through
kfp.local against a real MLflow server with artifacts in S3 (moto)."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import mlflow
import pytest
import yaml

from sparring.config import load_config

pytestmark = pytest.mark.integration

ARTIFACT_BUCKET = "sparring-test"  # created by the s3_server fixture (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs/games").glob("*.yaml"))  # from any working directory


def test_every_registered_game_ships_a_config():
    from sparring.games.registry import GAMES

    assert {p.stem for p in CONFIGS} == set(GAMES)


class ScriptedJudge:
    """The backend's real policy (the roles sample and train on the tiny model) with a scripted
    judge: the random model never writes the verdict a judge prompt asks for, so without a
    script a judged game gets no signal and trains nothing. The judge is the oracle call with no
    adapter (`cfg.game.judge` unset); its answers cycle through votes "1"/"2", which are also
    scores in 1..10, so pairwise games (debate, elo_arena) get graded preferences and
    refine_loop gets differing scores."""

    VERDICTS = ("1", "2", "2", "1", "2", "1", "1")

    def __init__(self, policy) -> None:
        self.policy = policy
        self.judge_calls = 0

    @property
    def version(self) -> int:
        return self.policy.version

    def __getattr__(self, name):  # train, save, ...: the real policy's
        return getattr(self.policy, name)

    def sample(self, prompts, *, adapter, **kw):
        if adapter is not None:
            return self.policy.sample(prompts, adapter=adapter, **kw)
        out = [
            self.VERDICTS[(self.judge_calls + i) % len(self.VERDICTS)] for i in range(len(prompts))
        ]
        self.judge_calls += len(prompts)
        return out


HEAVY_GAMES = {"debate", "refine_loop", "elo_arena", "negotiation"}  # 40-90 s each


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=pytest.mark.slow) if p.stem in HEAVY_GAMES else p for p in CONFIGS
    ],  # the heavy games in CI's slow tier, so that make test stays under 15 min
    ids=[p.stem for p in CONFIGS],
)
def test_game_config_trains_its_roles_on_the_tiny_model(tmp_path, path):
    import torch

    from sparring import backends
    from sparring.engine.game import configured_roles
    from sparring.games.registry import check
    from sparring.phases.game_loop import run_game

    cfg = load_config(path)
    assert cfg.models.answerer.name == "tiny-random" and not cfg.game.model
    game = check(cfg)
    role_ids = [r.id for r in configured_roles(game, cfg.game)]
    real = backends.get(cfg.backend).load_policy(cfg, cfg.models.answerer.name, role_ids, None)
    policy = ScriptedJudge(real) if game.uses_judge else real

    def lora_weights():
        return {
            role: [p.detach().clone() for n, p in real.model.named_parameters()
                   if f".{role}." in n and "lora_" in n]
            for role in role_ids
        }  # fmt: skip

    before = lora_weights()
    assert all(before.values()), "every role has a LoRA adapter to train"
    result = run_game(cfg, str(tmp_path / "out"), policy=policy, progress=False)
    assert len(result["history"]) == cfg.game.steps >= 1
    trainable = [r["id"] for r in result["roles"] if r["trainable"]]
    if game.uses_judge:  # the script judged (no adapter: never a role), every call counted
        assert policy.judge_calls == result["model_calls"]["None"] > 0
    for step in result["history"]:
        # every step of every game makes records to train on
        assert step["records"] > 0
        # only trainable roles were updated
        updated = {k.split("/", 1)[1] for k in step if k.startswith("grad_norm/")}
        assert updated and updated <= set(trainable)
    # one policy update per step, each one counted: the roles were trained, not skipped
    assert result["policy_version"] == cfg.game.steps
    # and the updates moved the weights: exactly the roles whose steps had a gradient changed.
    # A judged game has one for every trainable role (the script's verdicts differ); in the
    # others the random model's groups are all flat (every answer scores the same), so there
    # is no gradient and nothing may move.
    after = lora_weights()
    moved = {
        role for role in role_ids
        if any(not torch.equal(a, b) for a, b in zip(before[role], after[role], strict=True))
    }  # fmt: skip
    pushed = {
        role for step in result["history"] for role in trainable
        if step.get(f"grad_norm/{role}", 0.0) > 0.0
    }  # fmt: skip
    assert moved == pushed, (
        f"the optimizer steps changed the weights of {sorted(moved)}, but the roles with a "
        f"nonzero gradient were {sorted(pushed)}"
    )
    if game.uses_judge:
        assert pushed == set(trainable), f"no gradient for {sorted(set(trainable) - pushed)}"
    for step in result["history"]:
        for role in trainable:
            if step.get(f"grad_norm/{role}", 0.0) == 0.0 and f"grad_norm/{role}" in step:
                assert step[f"flat_group_share/{role}"] == 1.0, step  # no signal, no gradient
    for role in result["roles"]:
        folder = tmp_path / "out/adapters" / role["id"]
        meta = json.loads((folder / "sparring_model.json").read_text())
        assert meta["tuning_mode"] == "lora" and meta["role"] == role["id"]
    assert result["before"] and result["after"]


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_game_config_compiles_into_a_game_pipeline(tmp_path, path):
    from pipelines.selfplay import compile_pipeline

    cfg = load_config(path)
    ir = yaml.safe_load_all(compile_pipeline(cfg, tmp_path / "p.yaml").read_text())
    components = set(next(ir)["components"])
    assert {"comp-train-game", "comp-evaluate-game", "comp-select-game"} <= components
    assert "comp-train-answerer" not in components


@pytest.mark.slow  # a whole kfp.local game DAG (~35 s): in CI's slow tier (make test < 15 min)
def test_game_pipeline_runs_through_kfp_local(tmp_path, mlflow_server, s3_server, monkeypatch):
    from pipelines.selfplay import build_pipeline
    from sparring import local_run

    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)  # whatever an earlier test left
    cfg = load_config(
        ROOT / "configs/games/debate.yaml",
        [
            "tracking.experiment=e2e-game",
            "selection.registered_model=game-e2e",
            f"storage.s3_endpoint={s3_server}",
        ],
    )
    state = local_run.run_local(cfg, tmp_path / "outputs", build_pipeline)
    mlflow.set_tracking_uri(mlflow_server)
    parent = mlflow.get_run(state["parent_run_id"])
    assert parent.info.status == "FINISHED"
    children = {c["name"]: c for c in state["children"]}
    assert {"r1-train-debate", "r2-evaluate", "r3-select"} <= set(children)
    assert all(c["status"] == "FINISHED" and c["metrics"] > 0 for c in children.values())
    runs = mlflow.search_runs(
        [parent.info.experiment_id], filter_string="attributes.run_name = 'r1-train-debate'",
        output_format="list",
    )  # fmt: skip
    history = mlflow.MlflowClient().get_metric_history(runs[0].info.run_id, "records")
    # one point per training step (and the phase's summary at step 0)
    assert sorted(m.step for m in history if m.step) == [1, 2]
    evaluate = mlflow.search_runs(
        [parent.info.experiment_id], filter_string="attributes.run_name = 'r2-evaluate'",
        output_format="list",
    )[0]  # fmt: skip
    logged = {a.path for a in mlflow.MlflowClient().list_artifacts(evaluate.info.run_id, "report")}
    assert {"report/report.md", "report/rewards.png"} <= logged
    version = mlflow.MlflowClient().get_model_version_by_alias("game-e2e-debate", "champion")
    assert version.run_id == parent.info.run_id
    # the MLflow server proxies its artifacts to S3 (moto): the report and the adapters are there
    s3 = boto3.client("s3", endpoint_url=s3_server)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=ARTIFACT_BUCKET).get("Contents", [])]
    assert any(k.endswith("report/rewards.png") for k in keys), keys
    assert any(k.endswith("debater_a/adapter_model.safetensors") for k in keys), keys

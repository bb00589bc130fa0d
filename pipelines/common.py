"""What both DAGs share (pipelines.selfplay, pipelines.game): the `config_yaml` parameter's
one-line default, the pipeline's name, and `Tasks`, which applies one config's Kubernetes settings
to a task by kind (light, training, TrainJob launcher, sandbox).

Cluster settings (ignored silently by kfp.local): GPU type/count, CPU and memory on training
tasks (`kubernetes.train_cpu`, `train_memory`), CPU/memory elsewhere (`cpu`, `memory`), each a
request equal to its limit, retries on idempotent tasks (materialize, validate, snapshot,
evaluate), S3 and MLflow Secrets as environment on every task except validation, node selectors and
tolerations, per-task timeouts, non-root security context, and on validation pods the label
`sparring.io/sandbox: "true"` (the NetworkPolicy selects it) plus the annotation
`sparring.io/runtime-class` (kfp-kubernetes 2.17 has no RuntimeClass setter; an admission policy
can map the annotation to runtimeClassName). The service account is a run option (`sparring
submit`), not part of the IR.

`fast_setters()` wraps a DAG's construction: KFP 2.17's task setters look up their own name with
`inspect.stack()`, which reads every frame's source and searches sys.modules per frame, so its
cost grows with what the process imported (cluster-qwen7b: 107 s to compile with torch and
transformers loaded, 4.3 s without the walk; `make bench-compile`); inside it they name
themselves from the frame alone.

Both DAG modules import this one and neither imports the other's helpers, so there is no import
cycle between them (tests/unit/test_layout.py checks it).
"""

import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import yaml
from kfp import kubernetes
from kfp.dsl import pipeline_task

from sparring.config import Config, processes_per_node, to_dict

S3_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL")
MLFLOW_ENV = ("MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")
SANDBOX_LABEL = ("sparring.io/sandbox", "true")
RUNTIME_CLASS_ANNOTATION = "sparring.io/runtime-class"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
RUN_AS = 1000  # the uid/gid of the sparring user in all three images


def config_line(cfg: Config) -> str:
    """The resolved config as one-line (flow-style) YAML: the `config_yaml` parameter default.

    One line because the compiler copies defaults into the IR's header comment verbatim, and a
    multi-line default breaks out of the comment and makes the file invalid YAML."""
    text = yaml.safe_dump(
        to_dict(cfg), default_flow_style=True, sort_keys=False, width=1_000_000
    ).strip()
    assert "\n" not in text
    return text


def pipeline_name(cfg: Config) -> str:
    return f"sparring-{cfg.name}".lower().replace("_", "-")


class _CallerNameOnly:
    """Stands in for the `inspect` module inside kfp.dsl.pipeline_task, whose one use of it is
    `inspect.stack()[1][3]` in `_ensure_container_spec_exists`: the name of the setter that called
    it, for an error message. The real `inspect.stack()` also reads every frame's source file."""

    @staticmethod
    def stack(context: int = 1) -> list:
        # frame 1 is _ensure_container_spec_exists (inspect.stack()'s [0]); frame 2 its caller
        return [None, (None, None, None, sys._getframe(2).f_code.co_name)]


@contextmanager
def fast_setters() -> Iterator[None]:
    """Builds a DAG with KFP's task setters naming their caller without reading source files;
    a KFP whose pipeline_task no longer uses `inspect` is left untouched."""
    if getattr(pipeline_task, "inspect", None) is not inspect:
        yield
        return
    pipeline_task.inspect = _CallerNameOnly
    try:
        yield
    finally:
        pipeline_task.inspect = inspect


class Tasks:
    """Applies the per-kind Kubernetes settings of one config to tasks."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.k8s = cfg.kubernetes

    def _common(self, task, display: str, secrets: bool = True):
        task.set_display_name(display)
        kubernetes.set_timeout(task, self.k8s.timeout_s)
        kubernetes.set_security_context(
            task, run_as_user=RUN_AS, run_as_group=RUN_AS, run_as_non_root=True
        )
        if secrets:
            s = self.k8s.secrets
            kubernetes.use_secret_as_env(task, s.s3, {k: k for k in S3_ENV})
            kubernetes.use_secret_as_env(task, s.mlflow, {k: k for k in MLFLOW_ENV})
        return task

    @staticmethod
    def _place(task, node_selector: dict[str, str], tolerations) -> None:
        for key, value in sorted(node_selector.items()):
            kubernetes.add_node_selector(task, key, value)
        for t in tolerations:
            kubernetes.add_toleration(
                task,
                key=t.key or None,
                operator=t.operator,
                value=t.value or None,
                effect=t.effect or None,
            )

    def light(self, task, display: str, retry: bool = False, cache: bool = True):
        """Materialize, init, snapshot, evaluate, select: CPU and memory from the config."""
        self._common(task, display)
        task.set_cpu_request(self.k8s.cpu).set_cpu_limit(self.k8s.cpu)
        task.set_memory_request(self.k8s.memory).set_memory_limit(self.k8s.memory)
        if retry and self.k8s.retries:
            task.set_retry(self.k8s.retries)
        if not cache:
            task.set_caching_options(False)
        return task

    def training(self, task, display: str):
        """GRPO phases and the warm start: GPUs, training CPU and memory, the GPU pool's node
        selector and tolerations."""
        self._common(task, display)
        gpu = self.k8s.gpu
        if gpu.count > 0:
            task.set_accelerator_type(gpu.resource).set_accelerator_limit(gpu.count)
            if gpu.accelerator:
                kubernetes.add_node_selector(task, GPU_PRODUCT_LABEL, gpu.accelerator)
        task.set_cpu_request(self.k8s.train_cpu).set_cpu_limit(self.k8s.train_cpu)
        task.set_memory_request(self.k8s.train_memory).set_memory_limit(self.k8s.train_memory)
        self._place(task, self.k8s.node_selector, self.k8s.tolerations)
        return task

    def trainjob(self, task, display: str):
        """A GRPO phase run as a Kubeflow Trainer TrainJob: this task only creates it, waits and
        fetches the outputs, so it gets a light task's CPU and memory and no GPU (the TrainJob's
        nodes have them; its service account needs the Role of manifests/components/trainer)."""
        tr = self.k8s.trainer
        label = f"{display} · TrainJob {tr.nodes}x{processes_per_node(self.cfg)}"
        return self.light(task, label)

    def sandbox(self, task, display: str):
        """Validation: sandbox image, no Secrets, sandbox pool, pod label for the NetworkPolicy."""
        self._common(task, display, secrets=False)
        task.set_cpu_request(self.k8s.cpu).set_cpu_limit(self.k8s.cpu)
        task.set_memory_request(self.k8s.memory).set_memory_limit(self.k8s.memory)
        if self.k8s.retries:
            task.set_retry(self.k8s.retries)
        sb = self.k8s.sandbox
        self._place(task, sb.node_selector, sb.tolerations)
        kubernetes.add_pod_label(task, *SANDBOX_LABEL)
        if sb.runtime_class:
            kubernetes.add_pod_annotation(task, RUNTIME_CLASS_ANNOTATION, sb.runtime_class)
        return task

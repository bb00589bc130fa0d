"""The TrainJob a training phase becomes: names, the spec built from the config, its state.

Covers: `trainjob_name` (a DNS label, unique per task execution), `staging_uri` (where the
config goes in and the outputs come out, beside the task's own output artifact in S3),
`entry_args` (the command line of `sparring.cluster.entry` for a phase), `trainjob_spec` (a
`trainer.kubeflow.org/v1alpha1` TrainJob on the configured ClusterTrainingRuntime: image,
`torchrun` command, S3 and MLflow Secrets as environment, nodes, processes and resources per
node, and a runtime patch for the pods' service account, node selector and tolerations) and
`read_state` (Created, Running, Suspended, Complete or Failed, with the reason and message of
the condition behind it).

The API is Kubeflow Trainer v2.3 (`kubeflow-trainer-api` 2.3.0 on PyPI; the TrainJob CRD
`trainer.kubeflow.org_trainjobs.yaml` of kubeflow/trainer); `manifests/schemas/` keeps the schema
the deploy checks validate these objects against, with its sources.

Does not cover: talking to the API server (`sparring.cluster.kube`), waiting (`.wait`), or the
training itself (`.entry`). Pure: imports no heavy framework and touches no network.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from sparring.config import Config, processes_per_node
from sparring.errors import SparringError
from sparring.phases.table import PHASES

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TrainJob"
PLURAL = "trainjobs"
RUNTIME_KIND = "ClusterTrainingRuntime"

# The runtime's replicated job and container that run the trainer (Kubeflow Trainer's names).
NODE = "node"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"  # the JobSet is named after the TrainJob
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"  # node rank
PATCH_MANAGER = "sparring.io/pipeline"  # owner of our entry in spec.runtimePatches

# The same Secret keys the pipeline's tasks receive (pipelines/selfplay.py; a test keeps both
# lists equal). The MLflow account is optional: a server without auth has no such keys.
S3_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL")
MLFLOW_ENV = ("MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")
OPTIONAL_ENV = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"

# What each phase a TrainJob can run reads (artifact URIs) and writes under its output prefix
# (a folder, the model, and files): read from the phase table, where each phase is declared.
PHASE_INPUTS = {n: s.inputs for n, s in PHASES.items() if s.trainjob}
PHASE_OUTPUTS = {n: tuple(s.outputs.values()) for n, s in PHASES.items() if s.trainjob}
METRICS_FILE = "metrics.json"  # the phase's metrics, written by rank 0
RANKS_FILE = "distributed.json"  # world size and each rank's weights fingerprint

NAME_MAX = 63  # the CRD's rule: an RFC 1035 label of at most 63 characters
_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def trainjob_name(phase: str, round_index: int, key: str) -> str:
    """`sparring-<phase>-r<round>-<8 hex of key>`: the same key (the task's output URI) gives
    the same name, so a restarted task finds its TrainJob instead of starting a second one."""
    if phase not in PHASE_INPUTS:
        raise SparringError(f"phase {phase!r}: no TrainJob for it; use {', '.join(PHASE_INPUTS)}")
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    name = f"sparring-{phase}-r{round_index}-{digest}"
    assert _LABEL.match(name) and len(name) <= NAME_MAX, name
    return name


def staging_uri(output_uri: str) -> str:
    """The prefix a TrainJob shares with its task: `trainjob/` beside the task's first output
    artifact (under the run's pipeline root, so it lives and dies with the run's artifacts)."""
    if not output_uri.startswith("s3://"):
        raise SparringError(
            f"{output_uri}: a TrainJob exchanges artifacts through S3, but this task's outputs "
            "are not in S3; set storage.pipeline_root (and the kfp-launcher ConfigMap) to s3://…"
        )
    return output_uri.rstrip("/").rpartition("/")[0] + "/trainjob"


def job_timeout_s(cfg: Config) -> int:
    """The TrainJob's wall-clock limit: `kubernetes.trainer.timeout_s`, or the task's own
    timeout less 10 minutes for staging and fetching (at least a minute)."""
    tr = cfg.kubernetes.trainer
    return tr.timeout_s or max(60, cfg.kubernetes.timeout_s - 600)


def entry_args(
    phase: str,
    *,
    config_uri: str,
    round_index: int,
    inputs: dict[str, str],
    out_uri: str,
    phase_name: str = "",
    mlflow_run_id: str = "",
) -> list[str]:
    """Arguments of `sparring.cluster.entry` for one phase (after `-m sparring.cluster.entry`)."""
    missing = [k for k in PHASE_INPUTS[phase] if k not in inputs]
    if missing:
        raise SparringError(f"{phase}: missing inputs {', '.join(missing)}")
    args = [phase, "--config", config_uri, "--round", str(round_index), "--out", out_uri]
    for key in PHASE_INPUTS[phase]:
        args += [f"--{key.replace('_', '-')}", inputs[key]]
    if phase_name:  # the phase's identity in the plan: its step count and seeds
        args += ["--phase", phase_name]
    if mlflow_run_id:
        args += ["--mlflow-run-id", mlflow_run_id]
    return args


def _secret_env(name: str, secret: str) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": secret, "key": name}
    if name in OPTIONAL_ENV:
        ref["optional"] = True
    return {"name": name, "valueFrom": {"secretKeyRef": ref}}


def _pod_patch(cfg: Config) -> dict[str, Any]:
    """The pods' service account, node selector and tolerations (a runtime patch)."""
    k8s = cfg.kubernetes
    spec: dict[str, Any] = {"serviceAccountName": k8s.trainer.service_account}
    selector = dict(k8s.node_selector)
    if k8s.gpu.count > 0 and k8s.gpu.accelerator:
        selector[GPU_PRODUCT_LABEL] = k8s.gpu.accelerator
    if selector:
        spec["nodeSelector"] = dict(sorted(selector.items()))
    tolerations = []
    for t in k8s.tolerations:
        item = {"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect}
        tolerations.append({k: v for k, v in item.items() if v})
    if tolerations:
        spec["tolerations"] = tolerations
    return spec


def trainjob_spec(
    cfg: Config,
    *,
    name: str,
    namespace: str,
    phase: str,
    round_index: int,
    args: list[str],
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The TrainJob object that runs `args` on `kubernetes.trainer.nodes` nodes."""
    k8s = cfg.kubernetes
    tr = k8s.trainer
    labels = {
        "app.kubernetes.io/part-of": "sparring",
        "sparring.io/phase": phase,
        "sparring.io/round": str(round_index),
    }
    resources: dict[str, Any] = {"cpu": k8s.train_cpu, "memory": k8s.train_memory}
    if k8s.gpu.count > 0:
        resources[k8s.gpu.resource] = k8s.gpu.count
    env = [_secret_env(n, k8s.secrets.s3) for n in S3_ENV]
    env += [_secret_env(n, k8s.secrets.mlflow) for n in MLFLOW_ENV]
    env.append({"name": "PYTHONUNBUFFERED", "value": "1"})
    pod = {"metadata": {"labels": dict(labels)}, "spec": _pod_patch(cfg)}
    job = {"name": NODE, "template": {"spec": {"template": pod}}}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            **({"annotations": dict(sorted(annotations.items()))} if annotations else {}),
        },
        "spec": {
            "runtimeRef": {"apiGroup": GROUP, "kind": RUNTIME_KIND, "name": tr.runtime},
            "activeDeadlineSeconds": job_timeout_s(cfg),
            "trainer": {
                "image": k8s.images.trainer,
                "command": ["torchrun"],  # reads the runtime's PET_* node/rank/master variables
                "args": ["-m", "sparring.cluster.entry", *args],
                "env": env,
                "numNodes": tr.nodes,
                "numProcPerNode": processes_per_node(cfg),
                "resourcesPerNode": {"requests": dict(resources), "limits": dict(resources)},
            },
            "runtimePatches": [
                {
                    "manager": PATCH_MANAGER,
                    "trainingRuntimeSpec": {
                        "template": {"spec": {"replicatedJobs": [job]}},
                    },
                }
            ],
        },
    }


# --------------------------------------------------------------------------- state

CREATED, RUNNING, SUSPENDED, COMPLETE, FAILED = (
    "Created", "Running", "Suspended", "Complete", "Failed",
)  # fmt: skip
FINAL = (COMPLETE, FAILED)


@dataclass(frozen=True)
class TrainJobState:
    """Where a TrainJob is: `phase` (CREATED … FAILED) and the condition's reason and message."""

    phase: str
    reason: str = ""
    message: str = ""

    @property
    def done(self) -> bool:
        return self.phase in FINAL

    def line(self) -> str:
        extra = ": ".join(x for x in (self.reason, self.message) if x)
        return f"{self.phase}" + (f" ({extra})" if extra else "")


def _true(conditions: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    for c in conditions:
        if c.get("type") == kind and c.get("status") == "True":
            return c
    return None


def read_state(obj: dict[str, Any]) -> TrainJobState:
    """The state of a TrainJob object as the API server returns it: Failed or Complete from
    their conditions (Failed wins), Suspended likewise, Running while a child Job has active
    or ready pods (`status.jobsStatus`), else Created."""
    status = obj.get("status") or {}
    conditions = status.get("conditions") or []
    for kind in (FAILED, COMPLETE, SUSPENDED):
        c = _true(conditions, kind)
        if c is not None:
            return TrainJobState(kind, str(c.get("reason", "")), str(c.get("message", "")))
    jobs = status.get("jobsStatus") or []
    if any(int(j.get("active", 0)) or int(j.get("ready", 0)) for j in jobs):
        return TrainJobState(RUNNING)
    return TrainJobState(CREATED)

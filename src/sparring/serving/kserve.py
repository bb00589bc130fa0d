"""Serving the champion on Kubernetes the Kubeflow way: a KServe InferenceService (vLLM).

Covers:
- `inference_service` (pure): the InferenceService object for a model folder in S3: KServe's
  Hugging Face serving runtime (`modelFormat: huggingface`), whose default backend for text
  generation is vLLM, reading `storageUri: s3://…` through a service account that carries the
  S3 credentials; OpenAI endpoints under /openai/v1. The same object, with a placeholder URI,
  is in manifests/components/kserve (kustomize), checked by tests/deploy.
- `servable_folder`: what that runtime can load: a full checkpoint as it is; a LoRA champion
  merged into its base first (one vLLM base per InferenceService; runtime LoRA swapping is for
  training-time servers, see sparring.serving.publisher).
- `apply`: create the InferenceService, or patch it when it exists (the Kubernetes API through
  the `kubernetes` client; in a pod, the in-cluster service account).
- `deploy_champion`: the select phase's optional last step (`serving.deploy_champion`): upload
  the servable champion to `s3://<storage.bucket>/champions/<registered model>/v<version>/`
  and apply the InferenceService pointing at it, so a new champion rolls out as a new KServe
  revision.

Does not cover: installing KServe or its runtimes (docs/cluster-guide.md), autoscaling
policy, or traffic splitting between revisions.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from sparring.backends.base import read_meta
from sparring.errors import SparringError

GROUP, VERSION, PLURAL = "serving.kserve.io", "v1beta1", "inferenceservices"
SERVICE_ACCOUNT = "sparring-kserve"


def inference_service(
    name: str,
    namespace: str,
    storage_uri: str,
    *,
    served_name: str = "champion",
    gpus: int = 1,
    gpu_resource: str = "nvidia.com/gpu",
    cpu: str = "4",
    memory: str = "24Gi",
    max_model_len: int = 4096,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The InferenceService serving the model folder at `storage_uri` with vLLM."""
    if not storage_uri.startswith(("s3://", "pvc://", "gs://", "hf://")):
        raise SparringError(f"InferenceService {name}: storageUri {storage_uri!r} is not a URI")
    limits: dict[str, str] = {"cpu": cpu, "memory": memory}
    if gpus:
        limits[gpu_resource] = str(gpus)
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "InferenceService",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "sparring", **(labels or {})},
        },
        "spec": {
            "predictor": {
                "serviceAccountName": SERVICE_ACCOUNT,
                "minReplicas": 1,
                "maxReplicas": 1,
                "model": {
                    "modelFormat": {"name": "huggingface"},
                    "args": [
                        f"--model_name={served_name}",
                        "--backend=vllm",
                        f"--max-model-len={max_model_len}",
                    ],
                    "storageUri": storage_uri,
                    "resources": {"requests": dict(limits), "limits": dict(limits)},
                },
            }
        },
    }


def servable_folder(champion: str, work_dir: str) -> str:
    """`champion` itself when it is a full model; a LoRA champion merged into its base, saved
    under `work_dir` (torch, loaded on the CPU)."""
    meta = read_meta(champion) or {}
    if os.path.isfile(os.path.join(champion, "adapters.safetensors")):  # mlx-lm's format
        raise SparringError(
            "serving.deploy_champion: the champion is an MLX adapter; KServe's vLLM runtime "
            "serves torch checkpoints (train with backend: torch on the cluster)"
        )
    if meta.get("tuning_mode") != "lora":
        return champion
    from sparring.backends.torch.models import load_model

    model, tok = load_model(champion, device="cpu", merge=True)
    out = os.path.join(work_dir, "merged")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def apply(obj: dict[str, Any], api_client: Any = None) -> str:
    """Create `obj`, or patch the existing one of that name; "created" or "updated"."""
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    if api_client is None:
        try:
            config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
        api_client = client.ApiClient()
    api = client.CustomObjectsApi(api_client)
    name, namespace = obj["metadata"]["name"], obj["metadata"]["namespace"]
    try:
        api.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    except ApiException as exc:
        if exc.status != 404:
            raise SparringError(
                f"InferenceService {namespace}/{name}: Kubernetes answered {exc.status} "
                f"{exc.reason}"
            ) from None
        api.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, obj)
        return "created"
    api.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name, obj)
    return "updated"


def deploy_champion(cfg: Any, champion: str, version: Any, api_client: Any = None) -> str:
    """Upload the servable champion to S3 and create or update its InferenceService; returns
    the storage URI it serves."""
    from sparring import storage

    if not cfg.storage.bucket:
        raise SparringError(
            "serving.deploy_champion: set storage.bucket (the champion is served from S3)"
        )
    uri = f"s3://{cfg.storage.bucket}/champions/{cfg.selection.registered_model}/v{version}/"
    with tempfile.TemporaryDirectory() as tmp:
        storage.upload_dir(servable_folder(champion, tmp), uri)
    k = cfg.kubernetes
    obj = inference_service(
        cfg.serving.inference_service,
        k.namespace,
        uri,
        served_name=cfg.selection.registered_model,
        gpus=max(1, k.gpu.count) if k.gpu.count else 0,
        gpu_resource=k.gpu.resource,
        labels={"sparring.io/champion-version": str(version)},
    )
    apply(obj, api_client)
    return uri

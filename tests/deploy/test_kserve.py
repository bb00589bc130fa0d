"""Static checks of the KServe serving of the champion (manifests/components/kserve).

Covered: both overlays render the InferenceService, its service account and the deployer RBAC;
the InferenceService validates against the InferenceService schema kept in manifests/schemas
(KServe's CRD is not installable here) and equals what `sparring.serving.kserve` writes at
deploy time; it reads S3 through a service account whose secret carries KServe's S3
annotations for the overlay's store; the pipeline may touch InferenceServices and nothing else
new. Not covered: KServe admitting it on a cluster.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest

from sparring.serving import kserve

pytestmark = pytest.mark.deploy

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "manifests/schemas/serving.kserve.io-v1beta1.schema.json").read_text())
OVERLAYS = ("dev", "prod")


def _one(objs, kind, name):
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} rendered"
    return found[0]


@pytest.mark.parametrize("name", OVERLAYS)
def test_inference_service_renders_and_validates(rendered, name):
    isvc = _one(rendered[name], "InferenceService", "sparring-champion")
    jsonschema.validate(isvc, SCHEMA)
    assert isvc["metadata"]["namespace"] == "sparring"
    model = isvc["spec"]["predictor"]["model"]
    assert model["modelFormat"]["name"] == "huggingface" and "--backend=vllm" in model["args"]
    assert model["storageUri"].startswith("s3://")
    assert isvc["spec"]["predictor"]["serviceAccountName"] == kserve.SERVICE_ACCOUNT
    for obj in rendered[name]:
        if obj["metadata"]["name"].startswith("sparring-kserve"):
            kubernetes_validate.validate(obj, "1.30", strict=True)


def test_schema_refuses_a_misspelt_field():
    isvc = kserve.inference_service("x", "sparring", "s3://b/k/")
    isvc["spec"]["predictor"]["model"]["storageURI"] = isvc["spec"]["predictor"]["model"].pop(
        "storageUri"
    )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(isvc, SCHEMA)


def test_manifest_matches_what_the_pipeline_deploys(rendered):
    isvc = _one(rendered["prod"], "InferenceService", "sparring-champion")
    made = kserve.inference_service(
        "sparring-champion",
        "sparring",
        isvc["spec"]["predictor"]["model"]["storageUri"],
        served_name="sparring-answerer",
    )
    jsonschema.validate(made, SCHEMA)
    assert made == isvc


@pytest.mark.parametrize(("name", "endpoint"), [("dev", "minio."), ("prod", "s3.eu-west-1.")])
def test_storage_initializer_reaches_the_overlays_s3(rendered, name, endpoint):
    sa = _one(rendered[name], "ServiceAccount", kserve.SERVICE_ACCOUNT)
    assert sa["secrets"] == [{"name": "sparring-s3"}]
    assert sa["automountServiceAccountToken"] is False
    notes = _one(rendered[name], "Secret", "sparring-s3")["metadata"]["annotations"]
    assert notes["serving.kserve.io/s3-endpoint"].startswith(endpoint)


@pytest.mark.parametrize("name", OVERLAYS)
def test_pipeline_may_only_manage_inference_services(rendered, name):
    role = _one(rendered[name], "Role", "sparring-kserve-deployer")
    assert role["rules"] == [
        {
            "apiGroups": ["serving.kserve.io"],
            "resources": ["inferenceservices"],
            "verbs": ["get", "create", "patch"],
        }
    ]
    binding = _one(rendered[name], "RoleBinding", "sparring-kserve-deployer")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "sparring-pipeline", "namespace": "sparring"}
    ]

"""Write trainer.kubeflow.org-v1alpha1.schema.json: the JSON Schema of Kubeflow Trainer's TrainJob
and ClusterTrainingRuntime that tests/deploy validates Sparring's objects against.

Sources (see README.md beside this file):
1. The structure (every field, its type, what is required) comes from the PyPI package
   `kubeflow-trainer-api` 2.3.0, the Trainer's own models generated from its OpenAPI spec (the
   same Go types the CRDs are generated from). Run by hand:

       pip download --no-deps kubeflow-trainer-api==2.3.0 -d /tmp/kta
       cd /tmp/kta && unzip -o kubeflow_trainer_api-2.3.0-py3-none-any.whl
       PYTHONPATH=/tmp/kta python manifests/schemas/make_trainer_schema.py

2. The validations the OpenAPI spec lacks are copied from the TrainJob CRD of kubeflow/trainer
   (`manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml`, commit
   0f13bb7a0197, the release that has `runtimePatches`): CRD_RULES
   below, each with the CRD path it comes from.
Post-processing: descriptions dropped; `Optional` (null) alternatives dropped; every object
with properties closed (`additionalProperties: false`, as the API server's strict field
validation rejects unknown fields); resource quantities and int-or-string as in the CRDs;
definition names dotted (io.k8s.api.core.v1.PodSpec).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from kubeflow_trainer_api.models.trainer_v1alpha1_cluster_training_runtime import (
    TrainerV1alpha1ClusterTrainingRuntime,
)
from kubeflow_trainer_api.models.trainer_v1alpha1_train_job import TrainerV1alpha1TrainJob

OUT = Path(__file__).with_name("trainer.kubeflow.org-v1alpha1.schema.json")
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?"
    r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)  # the CRDs' pattern for resource.Quantity
SPECIAL = {
    "IoK8sApimachineryPkgApiResourceQuantity": {
        "anyOf": [{"type": "integer"}, {"type": "string", "pattern": QUANTITY}]
    },
    "IoK8sApimachineryPkgUtilIntstrIntOrString": {
        "anyOf": [{"type": "integer"}, {"type": "string"}]
    },
}
TJ = "trainer.v1alpha1.TrainJob"
# (definition, property path, constraints): from the TrainJob CRD (source 2 above).
CRD_RULES = [
    (TJ, "", {"required": ["apiVersion", "kind", "metadata", "spec"]}),
    (TJ, "apiVersion", {"const": "trainer.kubeflow.org/v1alpha1"}),
    (TJ, "kind", {"const": "TrainJob"}),
    # openAPIV3Schema.x-kubernetes-validations: metadata.name an RFC 1035 label, <= 63
    (
        TJ,
        "metadata",
        {
            "allOf": [
                {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
                {
                    "required": ["name"],
                    "properties": {
                        "name": {
                            "type": "string",
                            "maxLength": 63,
                            "pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$",
                        }
                    },
                },
            ]
        },
    ),
    # spec.required: [runtimeRef]; spec.activeDeadlineSeconds: minimum 1
    ("trainer.v1alpha1.TrainJobSpec", "", {"required": ["runtimeRef"]}),
    ("trainer.v1alpha1.TrainJobSpec", "activeDeadlineSeconds", {"minimum": 1}),
    # spec.runtimePatches: maxItems 16, items.required [manager]
    ("trainer.v1alpha1.TrainJobSpec", "runtimePatches", {"maxItems": 16}),
    # spec.runtimeRef: name minLength 1 / maxLength 253, apiGroup and kind maxLength 253
    ("trainer.v1alpha1.RuntimeRef", "name", {"minLength": 1, "maxLength": 253}),
    ("trainer.v1alpha1.RuntimeRef", "apiGroup", {"maxLength": 253}),
    ("trainer.v1alpha1.RuntimeRef", "kind", {"maxLength": 253}),
    # spec.trainer: args/command maxItems 128 of maxLength 65536; env maxItems 128;
    # image maxLength 500; numNodes and numProcPerNode int32
    (
        "trainer.v1alpha1.Trainer",
        "args",
        {"maxItems": 128, "items": {"type": "string", "maxLength": 65536}},
    ),
    (
        "trainer.v1alpha1.Trainer",
        "command",
        {"maxItems": 128, "items": {"type": "string", "maxLength": 65536}},
    ),
    ("trainer.v1alpha1.Trainer", "env", {"maxItems": 128}),
    ("trainer.v1alpha1.Trainer", "image", {"maxLength": 500}),
    ("trainer.v1alpha1.Trainer", "numNodes", {"maximum": 2147483647}),
    ("trainer.v1alpha1.Trainer", "numProcPerNode", {"maximum": 2147483647}),
    (
        "trainer.v1alpha1.ClusterTrainingRuntime",
        "",
        {"required": ["apiVersion", "kind", "metadata", "spec"]},
    ),
    (
        "trainer.v1alpha1.ClusterTrainingRuntime",
        "apiVersion",
        {"const": "trainer.kubeflow.org/v1alpha1"},
    ),
    ("trainer.v1alpha1.ClusterTrainingRuntime", "kind", {"const": "ClusterTrainingRuntime"}),
]


def dotted(name: str) -> str:
    """IoK8sApiCoreV1PodSpec -> io.k8s.api.core.v1.PodSpec (short names, no long runs)."""
    fixed = {
        "IoK8sApimachineryPkgApiResourceQuantity": "io.k8s.apimachinery.pkg.api.resource.Quantity",
        "IoK8sApimachineryPkgUtilIntstrIntOrString": "io.k8s.apimachinery.pkg.util.intstr."
        "IntOrString",
    }
    if name in fixed:
        return fixed[name]
    m = re.match(r"^(.*?V\d+(?:alpha\d+|beta\d+)?)([A-Z].*)$", name)
    if not m:
        return name
    words = re.findall(r"[A-Z][a-z0-9]*(?:alpha\d+|beta\d+)?", m.group(1))
    return ".".join(w.lower() for w in words) + "." + m.group(2)


def clean(node, names):
    if isinstance(node, list):
        return [clean(x, names) for x in node]
    if not isinstance(node, dict):
        return node
    node = {k: v for k, v in node.items() if k not in ("description", "title", "default")}
    if "$ref" in node:
        ref = node["$ref"].rsplit("/", 1)[-1]
        return {"$ref": f"#/$defs/{names[ref]}"}
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o != {"type": "null"}]
        if len(options) == 1:
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            return clean({**options[0], **rest}, names)
    out = {k: clean(v, names) for k, v in node.items()}
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


def main() -> None:
    defs, roots = {}, {}
    for model in (TrainerV1alpha1TrainJob, TrainerV1alpha1ClusterTrainingRuntime):
        schema = model.model_json_schema(by_alias=True)
        defs.update(schema.pop("$defs", {}))
        defs[model.__name__] = schema
        roots[model.__name__] = True
    names = {n: dotted(n) for n in defs}
    names["TrainerV1alpha1TrainJob"] = TJ
    out_defs = {}
    for name, schema in defs.items():
        out_defs[names[name]] = SPECIAL.get(name) or clean(schema, names)
    for definition, prop, rule in CRD_RULES:
        target = out_defs[definition]
        if prop:
            target = target["properties"].setdefault(prop, {})
            if "allOf" in rule:
                target.clear()
        for key, value in rule.items():
            if key == "properties":
                target.setdefault("properties", {}).update(value)
            else:
                target[key] = value
    patch = out_defs["trainer.v1alpha1.RuntimePatch"]
    assert "manager" in patch.get("required", []), "runtimePatches[].manager must be required"
    doc = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "Generated by make_trainer_schema.py; sources in README.md. Do not edit.",
        "kinds": {
            "TrainJob": {"$ref": f"#/$defs/{TJ}"},
            "ClusterTrainingRuntime": {"$ref": "#/$defs/trainer.v1alpha1.ClusterTrainingRuntime"},
        },
        "$defs": dict(sorted(out_defs.items())),
    }
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    print(f"{OUT}: {len(out_defs)} definitions, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()

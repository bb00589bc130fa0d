"""Static checks of multi-node training on Kubeflow Trainer: the `components/trainer` manifests
and every TrainJob Sparring creates, against the TrainJob/ClusterTrainingRuntime schema kept in
`manifests/schemas/` (sources in its README) and the Kubernetes 1.30 schema for built-in kinds.

Covered: dev and prod rendered with the component (every object validates, strictly); the
RBAC (namespaced, exactly what sparring.cluster needs, bound to the pipeline's service account
only; TrainJob pods get an identity with no rights and no token); the runtime (the names and
labels Kubeflow Trainer's torch plugin looks for); the TrainJob spec of
configs/cluster-multinode.yaml and of every shipped config at 2 nodes, for both phases, and
that what it names (runtime, service account, Secrets and their keys) exists in the
manifests. And that the schema catches what it checks.
Not covered: anything that needs a cluster (the CRDs' remaining CEL rules, the controller).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest

from sparring.cluster.trainjob import (
    ANCESTOR_LABEL,
    NODE,
    PHASE_INPUTS,
    entry_args,
    staging_uri,
    trainjob_name,
    trainjob_spec,
)
from sparring.config import Config, load_config

pytestmark = pytest.mark.deploy

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
SCHEMA = json.loads((MANIFESTS / "schemas/trainer.kubeflow.org-v1alpha1.schema.json").read_text())
K8S_VERSION = "1.30"
TRAINER_GROUP = "trainer.kubeflow.org/"
SHIPPED = sorted((ROOT / "configs").glob("*.yaml"))


def schema_errors(obj: dict) -> list[str]:
    """Every violation of the trainer schema by a TrainJob or ClusterTrainingRuntime."""
    root = {"$ref": SCHEMA["kinds"][obj["kind"]]["$ref"], "$defs": SCHEMA["$defs"]}
    validator = jsonschema.Draft202012Validator(root)
    return [
        f"{obj['kind']}/{obj.get('metadata', {}).get('name')}: "
        f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
        for e in validator.iter_errors(obj)
    ]


def validate_any(obj: dict) -> list[str]:
    if obj["apiVersion"].startswith(TRAINER_GROUP):
        return schema_errors(obj)
    if obj["apiVersion"].startswith("serving.kserve.io/"):
        return []  # the champion's InferenceService: tests/deploy/test_kserve.py
    try:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{obj['kind']}/{obj['metadata']['name']}: {e.message}"]
    return []


def by(objs, kind, name):
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert found, f"no {kind}/{name} rendered"
    return found[0]


@pytest.fixture(scope="module", params=("dev", "prod"))
def with_trainer(request, kustomize, tmp_path_factory):
    """An overlay as the guide makes it: `../<overlay>` plus the trainer component."""
    tree = tmp_path_factory.mktemp("m") / "manifests"
    shutil.copytree(MANIFESTS, tree, ignore=shutil.ignore_patterns("local", "*.env"))
    local = tree / "overlays" / "local"
    local.mkdir()
    (local / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"namespace: sparring\nresources: [../{request.param}]\n"
        "components: [../../components/trainer]\n"
    )
    return kustomize(local)


def spec_for(cfg: Config, phase: str) -> dict:
    out = "s3://sparring-artifacts/pipeline-root/p/run-1/train/model"
    staging = staging_uri(out)
    inputs = {k: f"s3://sparring-artifacts/pipeline-root/p/run-1/{k}" for k in PHASE_INPUTS[phase]}
    args = entry_args(phase, config_uri=f"{staging}/config.yaml", round_index=3, inputs=inputs,
                      out_uri=f"{staging}/out", mlflow_run_id="0123456789abcdef")  # fmt: skip
    return trainjob_spec(cfg, name=trainjob_name(phase, 3, staging), namespace="sparring",
                         phase=phase, round_index=3, args=args,
                         annotations={"sparring.io/staging": staging})  # fmt: skip


def configs_at_two_nodes() -> list[tuple[str, Config]]:
    out = [("cluster-multinode", load_config(ROOT / "configs/cluster-multinode.yaml"))]
    for path in SHIPPED:
        cfg = load_config(path)
        if cfg.backend == "torch" and path.stem != "cluster-multinode":
            out.append((path.stem, load_config(path, ["kubernetes.trainer.nodes=2"])))
    return out


# ---------------------------------------------------------------- the manifests


def test_overlays_with_the_trainer_component_validate(with_trainer):
    errors = [e for obj in with_trainer for e in validate_any(obj)]
    assert not errors, "\n".join(errors)
    kinds = {o["kind"] for o in with_trainer}
    assert "ClusterTrainingRuntime" in kinds


def test_the_component_is_optional(rendered):
    for name, objs in rendered.items():
        assert not [o for o in objs if o["apiVersion"].startswith(TRAINER_GROUP)], name


def test_trainjob_rbac_is_namespaced_and_minimal(with_trainer):
    assert not [o for o in with_trainer if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    role = by(with_trainer, "Role", "sparring-trainjobs")
    assert role["metadata"]["namespace"] == "sparring"
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): r["verbs"] for r in role["rules"]}
    assert rules == {
        (("trainer.kubeflow.org",), ("trainjobs",)): ["create", "get", "delete"],
        (("",), ("pods",)): ["list"],
    }
    binding = by(with_trainer, "RoleBinding", "sparring-trainjobs")
    assert binding["metadata"]["namespace"] == "sparring"
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": "sparring-trainjobs"}  # fmt: skip
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "sparring-pipeline", "namespace": "sparring"}
    ]
    # reading rank 0's log uses the base Role's pods get and pods/log get
    base_role = by(with_trainer, "Role", "sparring-pipeline")
    base = {r["resources"][0]: r["verbs"] for r in base_role["rules"]}
    assert "get" in base["pods"] and "get" in base["pods/log"]
    trainer_sa = by(with_trainer, "ServiceAccount", "sparring-trainer")
    assert trainer_sa["automountServiceAccountToken"] is False
    bound = [s["name"] for o in with_trainer if o["kind"] == "RoleBinding" for s in o["subjects"]]
    assert "sparring-trainer" not in bound, "TrainJob pods need no API rights"


def test_runtime_is_what_the_torch_plugin_and_our_spec_expect(with_trainer):
    runtime = by(with_trainer, "ClusterTrainingRuntime", "sparring-torch-distributed")
    assert runtime["metadata"]["name"] == Config().kubernetes.trainer.runtime
    assert runtime["spec"]["mlPolicy"]["torch"] == {}
    (job,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    assert job["name"] == NODE
    assert job["template"]["metadata"]["labels"][ANCESTOR_LABEL] == "trainer"
    pod = job["template"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["name"] == NODE and not container["image"].endswith(":latest")
    assert pod["serviceAccountName"] == "sparring-trainer"
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"  # NCCL
    assert "/tmp" in mounts


# ---------------------------------------------------------------- the TrainJobs Sparring makes


@pytest.mark.parametrize("phase", sorted(PHASE_INPUTS))
@pytest.mark.parametrize("name,cfg", configs_at_two_nodes(), ids=lambda x: getattr(x, "name", x))
def test_trainjob_specs_validate(name, cfg, phase):
    obj = spec_for(cfg, phase)
    assert not schema_errors(obj)
    assert obj["spec"]["trainer"]["numNodes"] == cfg.kubernetes.trainer.nodes >= 2


def test_multinode_trainjob_is_2_nodes_of_8_gpus():
    cfg = load_config(ROOT / "configs/cluster-multinode.yaml")
    trainer = spec_for(cfg, "train-answerer")["spec"]["trainer"]
    assert trainer["numNodes"] == 2 and trainer["numProcPerNode"] == 8
    assert trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == 8
    assert trainer["command"] == ["torchrun"]
    assert trainer["args"][:3] == ["-m", "sparring.cluster.entry", "train-answerer"]


def test_what_a_trainjob_names_exists_in_the_manifests(with_trainer):
    cfg = load_config(ROOT / "configs/cluster-multinode.yaml")
    obj = spec_for(cfg, "train-generator")
    assert obj["spec"]["runtimeRef"]["name"] in {
        o["metadata"]["name"] for o in with_trainer if o["kind"] == "ClusterTrainingRuntime"
    }
    (patch,) = obj["spec"]["runtimePatches"]
    (job,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert job["name"] == NODE
    sa = job["template"]["spec"]["template"]["spec"]["serviceAccountName"]
    assert by(with_trainer, "ServiceAccount", sa)
    for env in obj["spec"]["trainer"]["env"]:
        ref = (env.get("valueFrom") or {}).get("secretKeyRef")
        if ref and not ref.get("optional"):
            secret = by(with_trainer, "Secret", ref["name"])
            keys = set(secret.get("stringData") or {}) | set(secret.get("data") or {})
            assert ref["key"] in keys, f"{ref['name']} has no key {ref['key']}"


def test_the_schema_catches_what_it_checks():
    cfg = load_config(ROOT / "configs/cluster-multinode.yaml")
    good = spec_for(cfg, "train-answerer")
    assert not schema_errors(good)

    def broken(change) -> list[str]:
        obj = json.loads(json.dumps(good))
        change(obj)
        return schema_errors(obj)

    assert broken(lambda o: o["spec"]["trainer"].update(numProcPerNode="auto"))  # int in v2.3
    assert broken(lambda o: o["spec"]["trainer"].update(gpus=8))  # unknown field
    assert broken(lambda o: o["metadata"].update(name="Sparring_Job"))  # not an RFC 1035 label
    assert broken(lambda o: o["metadata"].update(name="s" * 64))
    assert broken(lambda o: o["spec"].pop("runtimeRef"))
    assert broken(
        lambda o: o["spec"]["trainer"]["resourcesPerNode"]["limits"].update(memory="9 GB")
    )
    assert broken(lambda o: o["spec"]["runtimePatches"][0].pop("manager"))
    assert broken(lambda o: o["spec"].update(activeDeadlineSeconds=0))
    assert broken(lambda o: o["spec"]["trainer"].update(args=["x"] * 129))

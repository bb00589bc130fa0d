"""Static checks of manifests/: rendering, schema, security, secrets and the sandbox policy.

Covered: `kubectl kustomize` of base and both overlays (plus the documented local-secrets overlay
and the gvisor component), Kubernetes 1.30 schema validation of every object, pinned images, the
security context of every workload container, placeholder-only secrets, the kfp-launcher config,
RBAC minimality and the sandbox default-deny NetworkPolicy. Not covered: anything that needs a
cluster (admission, the CNI enforcing the policy, images actually pulling).
"""

from __future__ import annotations

import base64
import re
import shutil
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

pytestmark = pytest.mark.deploy

# Not imported from conftest: with several conftest.py files in tests/, `import conftest` is
# whichever pytest loaded last.
ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
OVERLAYS = ("dev", "prod")
K8S_VERSION = "1.30"  # kubernetes-validate's bundled 1.30 schemas, strict mode
SANDBOX_LABELS = {"sparring.io/sandbox": "true"}

ALL = ("base", *OVERLAYS)
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "Job", "DaemonSet", "CronJob"}
CLUSTER_SCOPED = {"Namespace", "RuntimeClass", "ClusterRole", "ClusterRoleBinding"}
SECRET_KEY = re.compile(r"(PASSWORD|SECRET|TOKEN|ACCESS_KEY|_KEY_ID)", re.I)
PLACEHOLDERS = {"", "REPLACE_ME"}


def objects_of(objs: list[dict], kind: str) -> list[dict]:
    return [o for o in objs if o["kind"] == kind]


def by_name(objs: list[dict], kind: str, name: str) -> dict:
    matches = [o for o in objects_of(objs, kind) if o["metadata"]["name"] == name]
    assert matches, f"no {kind}/{name} rendered"
    return matches[0]


def pod_spec(obj: dict) -> dict:
    if obj["kind"] == "Pod":
        return obj["spec"]
    if obj["kind"] == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return obj["spec"]["template"]["spec"]


def containers(spec: dict) -> list[dict]:
    return spec.get("initContainers", []) + spec["containers"]


def workloads(objs: list[dict]) -> list[dict]:
    return [o for o in objs if o["kind"] in WORKLOAD_KINDS]


def selector_matches(selector: dict, labels: dict[str, str]) -> bool:
    """Kubernetes label-selector semantics (matchLabels and matchExpressions)."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def secret_data(secret: dict) -> dict[str, str]:
    data = dict(secret.get("stringData") or {})
    for key, value in (secret.get("data") or {}).items():
        data[key] = base64.b64decode(value).decode()
    return data


# ---------------------------------------------------------------- rendering and schema


@pytest.mark.parametrize("name", ALL)
def test_renders(rendered, name):
    kinds = {o["kind"] for o in rendered[name]}
    assert {"Namespace", "NetworkPolicy", "ConfigMap", "Secret", "Deployment"} <= kinds


@pytest.mark.parametrize("name", ALL)
def test_objects_validate_against_kubernetes_schema(rendered, name):
    errors = []
    for obj in rendered[name]:
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        if obj["apiVersion"].startswith("serving.kserve.io/"):
            continue  # a CRD: checked against its schema in tests/deploy/test_kserve.py
        try:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            errors.append(f"{where}: unknown kind/apiVersion {obj['apiVersion']} (no CRDs here)")
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path)
            errors.append(f"{where}: {path}: {e.message}")
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("name", ALL)
def test_everything_lives_in_the_sparring_namespace(rendered, name):
    for obj in rendered[name]:
        if obj["kind"] not in CLUSTER_SCOPED:
            assert obj["metadata"].get("namespace") == "sparring", obj["metadata"]["name"]


def test_dev_has_minio_and_prod_does_not(rendered):
    dev = {(o["kind"], o["metadata"]["name"]) for o in rendered["dev"]}
    prod = {(o["kind"], o["metadata"]["name"]) for o in rendered["prod"]}
    for item in [
        ("Deployment", "minio"),
        ("Service", "minio"),
        ("PersistentVolumeClaim", "minio-data"),
        ("Job", "minio-create-bucket"),
    ]:
        assert item in dev
        assert item not in prod
    for name in ("dev", "prod"):
        objs = rendered[name]
        assert by_name(objs, "Service", "mlflow")["spec"]["ports"][0]["port"] == 5000
        assert by_name(objs, "StatefulSet", "postgres")
        assert by_name(objs, "Service", "postgres")


def test_prod_patches_region_and_capacity(rendered):
    prod, base = rendered["prod"], rendered["base"]
    s3 = secret_data(by_name(prod, "Secret", "sparring-s3"))
    assert s3["AWS_DEFAULT_REGION"] != "us-east-1"
    assert s3["AWS_DEFAULT_REGION"] in s3["AWS_ENDPOINT_URL"]
    assert set(s3) == set(secret_data(by_name(base, "Secret", "sparring-s3")))
    launcher = yaml.safe_load(by_name(prod, "ConfigMap", "kfp-launcher")["data"]["providers"])
    assert launcher["s3"]["default"]["region"] == s3["AWS_DEFAULT_REGION"]
    assert by_name(prod, "Deployment", "mlflow")["spec"]["replicas"] >= 2


def test_reference_pod_and_gvisor_validate(reference_pod):
    kubernetes_validate.validate(reference_pod, K8S_VERSION, strict=True)
    rc = yaml.safe_load((MANIFESTS / "components/gvisor/runtimeclass.yaml").read_text())
    kubernetes_validate.validate(rc, K8S_VERSION, strict=True)
    assert rc["metadata"]["name"] == "gvisor" and rc["handler"] == "runsc"


def test_local_secret_overlay_from_examples_renders(kustomize, tmp_path):
    """The guide's recipe: a git-ignored overlays/local with real values replaces the templates."""
    tree = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, tree, ignore=shutil.ignore_patterns("local", "*.env"))
    local = tree / "overlays" / "local"
    local.mkdir()
    examples = tree / "secrets-example"
    for name in ("s3", "mlflow", "postgres"):
        text = (examples / f"{name}.env.example").read_text()
        (local / f"{name}.env").write_text(text.replace("REPLACE_ME", "filled-in-value-1"))
    text = (examples / "kustomization.yaml.example").read_text()
    text = text.replace("# components:", "components:")
    text = text.replace("#   - ../../components/gvisor", "  - ../../components/gvisor")
    (local / "kustomization.yaml").write_text(text)
    objs = kustomize(local)
    assert by_name(objs, "RuntimeClass", "gvisor")["handler"] == "runsc"
    for name in ("sparring-s3", "sparring-mlflow", "sparring-postgres"):
        values = secret_data(by_name(objs, "Secret", name))
        assert "REPLACE_ME" not in values.values(), name
    s3 = secret_data(by_name(objs, "Secret", "sparring-s3"))
    assert s3["AWS_ACCESS_KEY_ID"] == "filled-in-value-1"
    assert set(s3) == {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
    }


def test_local_overlay_is_git_ignored():
    ignored = (MANIFESTS / ".gitignore").read_text().split()
    assert "overlays/local/" in ignored and "*.env" in ignored


# ---------------------------------------------------------------- images


def test_no_latest_or_untagged_image_in_manifests(rendered, reference_pod):
    for name, objs in rendered.items():
        for obj in [*workloads(objs), reference_pod]:
            for c in containers(pod_spec(obj)):
                image = c["image"]
                last = image.rsplit("/", 1)[-1]
                assert "@sha256:" in image or ":" in last, f"{name}: untagged image {image}"
                assert not image.endswith(":latest"), f"{name}: {image}"


def test_no_latest_anywhere_in_manifests_and_images():
    offenders = []
    for folder in (MANIFESTS, ROOT / "images"):
        for path in folder.rglob("*"):
            if path.is_file() and re.search(r":latest\b", path.read_text(errors="ignore")):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders


# ---------------------------------------------------------------- security


@pytest.mark.parametrize("name", ALL)
def test_workload_containers_are_locked_down(rendered, name):
    problems = []
    for obj in workloads(rendered[name]):
        spec = pod_spec(obj)
        pod_sc = spec.get("securityContext") or {}
        if spec.get("automountServiceAccountToken") is not False:
            problems.append(f"{obj['metadata']['name']}: automountServiceAccountToken not false")
        for c in containers(spec):
            where = f"{obj['kind']}/{obj['metadata']['name']}/{c['name']}"
            sc = c.get("securityContext") or {}
            res = c.get("resources") or {}
            for part in ("requests", "limits"):
                if not {"cpu", "memory"} <= set(res.get(part) or {}):
                    problems.append(f"{where}: resources.{part} needs cpu and memory")
            if not sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")):
                problems.append(f"{where}: runAsNonRoot")
            if sc.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: allowPrivilegeEscalation must be false")
            if (sc.get("capabilities") or {}).get("drop") != ["ALL"]:
                problems.append(f"{where}: capabilities.drop must be [ALL]")
            seccomp = sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}
            if seccomp.get("type") != "RuntimeDefault":
                problems.append(f"{where}: seccompProfile RuntimeDefault")
            if sc.get("privileged"):
                problems.append(f"{where}: privileged")
            if sc.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{where}: readOnlyRootFilesystem")
            mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
            if "/tmp" not in mounts:
                problems.append(f"{where}: read-only root needs an emptyDir on /tmp")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", ALL)
def test_namespace_pod_security(rendered, name):
    labels = by_name(rendered[name], "Namespace", "sparring")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] in {"baseline", "restricted"}
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"


def test_rbac_is_minimal(rendered):
    objs = rendered["base"]
    assert by_name(objs, "ServiceAccount", "sparring-pipeline")
    role = by_name(objs, "Role", "sparring-pipeline")
    binding = by_name(objs, "RoleBinding", "sparring-pipeline")
    assert binding["roleRef"]["name"] == "sparring-pipeline"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "sparring-pipeline", "namespace": "sparring"}
    ]
    assert not objects_of(objs, "ClusterRole") and not objects_of(objs, "ClusterRoleBinding")
    for rule in role["rules"]:
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], rule
        if "secrets" in rule["resources"]:
            assert rule["verbs"] == ["get"], "secrets: get only (no list/watch)"
        if "pods" in rule["resources"]:
            assert "create" not in rule["verbs"] and "delete" not in rule["verbs"]


# ---------------------------------------------------------------- secrets


def test_secret_templates_hold_only_placeholders(rendered):
    for name, objs in rendered.items():
        secrets = objects_of(objs, "Secret")
        assert {s["metadata"]["name"] for s in secrets} == {
            "sparring-s3",
            "sparring-mlflow",
            "sparring-postgres",
        }
        for secret in secrets:
            for key, value in secret_data(secret).items():
                if SECRET_KEY.search(key):
                    assert value in PLACEHOLDERS, f"{name}: {secret['metadata']['name']}.{key}"
        mlflow = secret_data(by_name(objs, "Secret", "sparring-mlflow"))
        assert mlflow["MLFLOW_TRACKING_URI"] == "http://mlflow.sparring.svc.cluster.local:5000"


def test_no_real_looking_secret_in_files():
    patterns = {
        "AWS access key id": re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
        "40-char AWS secret": re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
        "password in URL": re.compile(r"://[^/\s:@$]+:[^/\s@$(]+@"),
    }
    hits = []
    for folder in (MANIFESTS, ROOT / "images"):
        for path in folder.rglob("*"):
            if path.is_file() and "overlays/local" not in path.as_posix():
                text = path.read_text(errors="ignore")
                hits += [
                    f"{path.relative_to(ROOT)}: {what}"
                    for what, rx in patterns.items()
                    if rx.search(text)
                ]
    assert not hits, hits


def test_example_env_files_hold_only_placeholders():
    for path in (MANIFESTS / "secrets-example").glob("*.env.example"):
        for line in path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                key, _, value = line.partition("=")
                if SECRET_KEY.search(key):
                    assert value in PLACEHOLDERS, f"{path.name}: {key}"


# ---------------------------------------------------------------- KFP launcher and MLflow


@pytest.mark.parametrize("name", ALL)
def test_kfp_launcher_config(rendered, name):
    objs = rendered[name]
    data = by_name(objs, "ConfigMap", "kfp-launcher")["data"]
    assert data["defaultPipelineRoot"] == "s3://sparring-artifacts/pipeline-root"
    default = yaml.safe_load(data["providers"])["s3"]["default"]
    ref = default["credentials"]["secretRef"]
    assert default["credentials"]["fromEnv"] is False
    s3 = secret_data(by_name(objs, "Secret", ref["secretName"]))
    assert ref["accessKeyKey"] in s3 and ref["secretKeyKey"] in s3
    assert "://" not in default["endpoint"], "the launcher wants host[:port], no scheme"
    if name == "dev":
        assert default["endpoint"] == "minio.sparring.svc.cluster.local:9000"
        assert default["disableSSL"] is True
        assert s3["AWS_ENDPOINT_URL"] == "http://minio.sparring.svc.cluster.local:9000"


@pytest.mark.parametrize("name", ALL)
def test_mlflow_server(rendered, name):
    mlflow = pod_spec(by_name(rendered[name], "Deployment", "mlflow"))["containers"][0]
    args = " ".join(mlflow.get("command", []) + mlflow.get("args", []))
    assert "--serve-artifacts" in args
    assert "--artifacts-destination=s3://sparring-artifacts/mlflow" in args
    assert "--backend-store-uri=postgresql://" in args
    assert {"secretRef": {"name": "sparring-s3"}} in mlflow["envFrom"]


# ---------------------------------------------------------------- sandbox network policy


@pytest.mark.parametrize("name", OVERLAYS)
def test_sandbox_pods_are_default_denied(rendered, name, reference_pod):
    sandbox_labels = {**reference_pod["metadata"]["labels"], **SANDBOX_LABELS}
    policies = [
        p
        for p in objects_of(rendered[name], "NetworkPolicy")
        if selector_matches(p["spec"]["podSelector"], sandbox_labels)
    ]
    deny = [
        p
        for p in policies
        if sorted(p["spec"].get("policyTypes", [])) == ["Egress", "Ingress"]
        and not p["spec"].get("ingress")
        and not p["spec"].get("egress")
    ]
    assert deny, "no default-deny (Ingress+Egress, no rules) NetworkPolicy selects sandbox pods"
    assert deny[0]["spec"]["podSelector"] == {"matchLabels": SANDBOX_LABELS}
    # Every other policy selecting sandbox pods may only open egress to the launcher's routes.
    allowed = {"sandbox-launcher-egress", "sandbox-egress-object-store"}
    opening = {
        p["metadata"]["name"]
        for p in policies
        if p["spec"].get("ingress") or p["spec"].get("egress")
    }
    assert opening <= allowed, f"unexpected policies opening traffic for sandbox pods: {opening}"
    for p in policies:
        assert not p["spec"].get("ingress"), "nothing may reach a sandbox pod"


@pytest.mark.parametrize("name", OVERLAYS)
def test_sandbox_egress_is_only_dns_kfp_and_object_store(rendered, name):
    launcher = by_name(rendered[name], "NetworkPolicy", "sandbox-launcher-egress")["spec"]
    ports = sorted(p["port"] for rule in launcher["egress"] for p in rule["ports"])
    assert ports == [53, 53, 8080, 8887, 8888]
    store = by_name(rendered[name], "NetworkPolicy", "sandbox-egress-object-store")["spec"]
    (rule,) = store["egress"]
    if name == "dev":
        assert rule["to"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "minio"}}}]
        assert rule["ports"] == [{"port": 9000, "protocol": "TCP"}]
    else:
        (block,) = rule["to"]
        assert "169.254.0.0/16" in block["ipBlock"]["except"], "metadata service must stay closed"
        assert "10.0.0.0/8" in block["ipBlock"]["except"]
        assert rule["ports"] == [{"port": 443, "protocol": "TCP"}]


def test_reference_sandbox_pod_holds_no_secret_and_no_token(reference_pod, rendered):
    spec = reference_pod["spec"]
    assert selector_matches({"matchLabels": SANDBOX_LABELS}, reference_pod["metadata"]["labels"])
    policy = by_name(rendered["dev"], "NetworkPolicy", "sandbox-default-deny")
    assert selector_matches(policy["spec"]["podSelector"], reference_pod["metadata"]["labels"])
    assert spec["automountServiceAccountToken"] is False
    for volume in spec.get("volumes", []):
        assert "secret" not in volume, volume
        sources = (volume.get("projected") or {}).get("sources", [])
        assert not any("secret" in s or "serviceAccountToken" in s for s in sources), volume
    pod_sc = spec["securityContext"]
    assert pod_sc["runAsNonRoot"] is True
    assert pod_sc["seccompProfile"]["type"] == "RuntimeDefault"
    for c in containers(spec):
        assert "envFrom" not in c, c["name"]
        for env in c.get("env", []):
            assert "secretKeyRef" not in (env.get("valueFrom") or {}), env
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
        assert sc["runAsNonRoot"] is True
        assert {"cpu", "memory"} <= set(c["resources"]["limits"])
    assert spec.get("runtimeClassName") in (None, "gvisor")


def test_reference_pod_is_not_part_of_any_kustomization():
    for path in MANIFESTS.rglob("kustomization.yaml"):
        assert "reference" not in path.read_text(), path


def test_reference_sandbox_pod_runs_a_module_the_package_has(reference_pod):
    """`python -m X` in the reference pod names a module with a `__main__` entry in src/."""
    import importlib.util

    command = reference_pod["spec"]["containers"][0]["command"]
    assert command[:2] == ["python", "-m"], command
    spec = importlib.util.find_spec(command[2])
    assert spec is not None and spec.origin, f"{command[2]}: no such module"
    source = Path(spec.origin).read_text()
    assert spec.origin.endswith("__main__.py") or 'if __name__ == "__main__":' in source

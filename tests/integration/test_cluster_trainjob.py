"""Creating and waiting for TrainJobs against a real HTTP server on loopback that plays the
Kubernetes API (tests/integration/fake_kube.py), and a training component's TrainJob path end
to end: S3 on moto, the fake controller running the TrainJob's own `torchrun` command line.

Covered: created -> running -> succeeded with rank 0's log streamed once per line; failed (the
condition's reason and message fail the wait); timed out (the TrainJob is deleted); an
existing TrainJob adopted (409); refused (403) with the RBAC hint; transient API errors
retried; a rotated service-account token read again; no cluster at all. Then `launch.run_phase`
for the answerer (dry run): config staged in S3, inputs fetched by the entry point, outputs and
metrics back in the task's paths, state and log in the MLflow run.
Not covered: a real API server, controller or JobSet (none can run here).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import sparring
from sparring.cluster import launch
from sparring.cluster.kube import RBAC_HINT, KubeClient, KubeError
from sparring.cluster.trainjob import trainjob_name, trainjob_spec
from sparring.cluster.wait import TrainJobFailed, TrainJobTimeout, wait_for_trainjob
from sparring.config import load_config
from sparring.errors import SparringError

sys.path.insert(0, str(Path(__file__).parent))
from fake_kube import CREATED, RUNNING, FakeKube, complete, failed

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
NS = "sparring"


@pytest.fixture
def cfg():
    return load_config(ROOT / "configs/cluster-multinode.yaml")


@pytest.fixture
def kube():
    with FakeKube(NS) as fake:
        yield fake


def client_for(fake: FakeKube, token: str = "token-1") -> KubeClient:
    return KubeClient(fake.url, token=token, timeout_s=5)


def make(cfg, fake: FakeKube, name: str = "sparring-train-answerer-r1-00000000") -> str:
    obj = trainjob_spec(cfg, name=name, namespace=NS, phase="train-answerer", round_index=1,
                        args=["train-answerer"])  # fmt: skip
    assert launch.create_or_adopt(client_for(fake), NS, obj)
    return name


def wait(fake: FakeKube, name: str, timeout_s: float = 10.0, **kw):
    states, lines = [], []
    result = wait_for_trainjob(
        kw.pop("client", None) or client_for(fake), NS, name, timeout_s=timeout_s,
        poll_s=0.01, on_state=states.append, on_log=lines.append, **kw,
    )  # fmt: skip
    return result, [s.phase for s in states], lines


def test_created_running_succeeded_streams_the_log_once(cfg, kube):
    name = make(cfg, kube)
    kube.statuses[name] = [CREATED, RUNNING, RUNNING, RUNNING, RUNNING, complete()]
    kube.logs[name] = [  # several lines in one second: sinceTime overlaps, nothing repeats
        ("2026-11-25T10:00:01.000000001Z", "rank 0 starting"),
        ("2026-11-25T10:00:01.5Z", "step 1/2"),
        ("2026-11-25T10:00:01.75Z", "step 2/2"),
        ("2026-11-25T10:00:02Z", "train-answerer: done on 16 process(es), 2 node(s)"),
    ]
    state, phases, lines = wait(kube, name)
    assert state.phase == "Complete" and state.reason == "JobsCompleted"
    assert phases == ["Created", "Running", "Complete"]
    assert lines == [text for _, text in kube.logs[name]]
    log_calls = [q for m, p, q in kube.requests if p.endswith("/log")]
    assert all(q["timestamps"] == "true" and q["container"] == "node" for q in log_calls)
    assert any(q.get("sinceTime") == "2026-11-25T10:00:01Z" for q in log_calls)
    assert name in kube.trainjobs  # a finished TrainJob stays for inspection


def test_failed_raises_with_the_reason_and_message(cfg, kube):
    name = make(cfg, kube)
    kube.statuses[name] = [
        RUNNING,
        failed("JobSetFailed", "jobset failed: pod node-1 exited with code 137 (OOMKilled)"),
    ]
    with pytest.raises(TrainJobFailed) as err:
        wait(kube, name)
    text = str(err.value)
    assert f"TrainJob {NS}/{name} failed" in text
    assert "JobSetFailed" in text and "OOMKilled" in text and "\n" not in text
    assert err.value.state.phase == "Failed"


def test_timeout_deletes_the_trainjob(cfg, kube):
    name = make(cfg, kube)
    kube.statuses[name] = [RUNNING]
    with pytest.raises(TrainJobTimeout) as err:
        wait(kube, name, timeout_s=0.3)
    assert f"TrainJob {NS}/{name} did not finish within 0.3 s" in str(err.value)
    assert "deleted it" in str(err.value) and "kubernetes.trainer.timeout_s" in str(err.value)
    assert ("DELETE", f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NS}/trainjobs/{name}",
            {}) in kube.requests  # fmt: skip
    assert name not in kube.trainjobs


def test_existing_trainjob_is_adopted_not_duplicated(cfg, kube):
    name = make(cfg, kube)
    obj = trainjob_spec(cfg, name=name, namespace=NS, phase="train-answerer", round_index=1,
                        args=["train-answerer"])  # fmt: skip
    assert launch.create_or_adopt(client_for(kube), NS, obj) is False  # 409: wait for it
    kube.statuses[name] = [complete()]
    assert wait(kube, name)[0].phase == "Complete"
    assert sum(1 for m, _, _ in kube.requests if m == "POST") == 2


def test_forbidden_create_names_the_rbac_fix(cfg, kube):
    kube.forbid_create = True
    with pytest.raises(KubeError) as err:
        make(cfg, kube)
    assert err.value.status == 403 and "Forbidden" in str(err.value)
    assert RBAC_HINT in str(err.value) and "\n" not in str(err.value)


def test_transient_api_errors_are_retried_but_a_deleted_job_is_not(cfg, kube):
    name = make(cfg, kube)
    kube.statuses[name] = [complete()]
    kube.fail_next = [500, 503]
    assert wait(kube, name)[0].phase == "Complete"
    other = make(cfg, kube, "sparring-train-answerer-r1-11111111")
    kube.statuses[other] = [RUNNING]
    del kube.trainjobs[other]
    with pytest.raises(SparringError, match="is gone: deleted while this task waited"):
        wait(kube, other)


def test_rotated_token_is_read_again(cfg, kube, tmp_path):
    token = tmp_path / "token"
    token.write_text("token-1")
    client = KubeClient(kube.url, token_file=token, timeout_s=5)
    name = make(cfg, kube)
    kube.statuses[name] = [RUNNING, RUNNING, complete()]
    client.get_trainjob(NS, name)
    kube.tokens = {"token-2"}  # the kubelet rotated the projected token
    token.write_text("token-2\n")
    assert wait(kube, name, client=client)[0].phase == "Complete"


def test_no_cluster_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(SparringError, match=r"kubernetes\.trainer\.nodes: 1") as err:
        KubeClient.in_cluster(tmp_path)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------ the component's path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Controller:
    """Plays Kubeflow Trainer's controller for one node: runs the TrainJob's own command line
    (torchrun reading PET_* variables, as the torch runtime sets them) with its environment
    (Secrets resolved from `secrets`), the process's output as node 0's log, and the status
    Running, then Complete or Failed by its exit code."""

    def __init__(self, fake: FakeKube, secrets: dict[str, dict[str, str]], env: dict[str, str]):
        self.fake, self.secrets, self.env = fake, secrets, env
        self.threads: list[threading.Thread] = []

    def __call__(self, obj):
        t = threading.Thread(target=self.run, args=(obj,), daemon=True)
        self.threads.append(t)
        t.start()

    def run(self, obj):
        name, trainer = obj["metadata"]["name"], obj["spec"]["trainer"]
        env = dict(self.env, PET_NNODES="1", PET_NODE_RANK="0", PET_MASTER_ADDR="127.0.0.1",
                   PET_MASTER_PORT=str(free_port()),
                   PET_NPROC_PER_NODE=str(trainer["numProcPerNode"]))  # fmt: skip
        for item in trainer["env"]:
            ref = (item.get("valueFrom") or {}).get("secretKeyRef")
            value = self.secrets.get(ref["name"], {}).get(ref["key"]) if ref else item["value"]
            if value is not None:
                env[item["name"]] = value
        assert trainer["command"] == ["torchrun"]
        cmd = [sys.executable, "-m", "torch.distributed.run", *trainer["args"]]
        with self.fake.lock:
            self.fake.statuses[name] = [RUNNING]
            self.fake.logs[name] = []
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)  # fmt: skip
        for i, line in enumerate(proc.stdout):
            stamp = f"2026-11-25T10:{i // 60 % 60:02d}:{i % 60:02d}.5Z"
            with self.fake.lock:
                self.fake.logs[name].append((stamp, line.rstrip()))
        code = proc.wait()
        done = complete() if code == 0 else failed("TrainingFailed", f"node 0 exited with {code}")
        with self.fake.lock:
            self.fake.statuses[name] = [done]


# slow tier (15-100 s on 2 cores): make test stays under 15 minutes; CI's make test-slow runs it
@pytest.mark.slow
def test_component_runs_the_phase_as_a_trainjob(kube, s3_server, tmp_path, monkeypatch):
    import boto3
    import mlflow

    from sparring import storage
    from sparring.phases.materialize import materialize

    bucket = "sparring-test"
    sets = [
        "dry_run=true", "kubernetes.trainer.poll_s=0.05", "kubernetes.trainer.processes_per_node=1",
        "kubernetes.gpu.count=0", "models.answerer.name=tiny-random", "models.answerer.device=cpu",
        "data.train=[bundled]", "data.max_problems=12", f"storage.s3_endpoint={s3_server}",
        "selection.refuse_below_start=false",  # the gate measures the families, not trained here
    ]  # fmt: skip
    cfg = load_config(ROOT / "configs/cluster-multinode.yaml", sets)
    storage.configure(cfg)
    data = tmp_path / "data"
    materialize(load_config(ROOT / "configs/smoke.yaml"), str(data))
    root = f"s3://{bucket}/pipeline-root/sparring-x/run-1"
    storage.upload_dir(data, f"{root}/materialize/data")
    storage.write_text(f"{root}/init-models/answerer/sparring_model.json",
                       json.dumps({"base": "tiny-random", "tuning_mode": "base"}))  # fmt: skip
    src = str(Path(sparring.__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PET_"))}
    env.update(PYTHONPATH=os.pathsep.join([src, str(ROOT)]), HF_HUB_OFFLINE="1")
    mlflow_uri = f"sqlite:///{tmp_path}/mlflow.db"
    secrets = {
        "sparring-s3": {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": s3_server},
        "sparring-mlflow": {"MLFLOW_TRACKING_URI": mlflow_uri},
    }  # fmt: skip
    controller = Controller(kube, secrets, env)
    kube.on_create = controller
    kube.reveal_all = True
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_uri)
    said: list[str] = []
    out_model = tmp_path / "task" / "model"
    with mlflow.start_run() as run:
        metrics = launch.run_phase(
            cfg, "train-answerer", 1,
            inputs={"data": f"{root}/materialize/data", "bank": f"{root}/materialize/data",
                    "init_model": f"{root}/init-models/answerer"},
            outputs={"model": str(out_model)},
            output_uri=f"{root}/train-answerer/model",
            client=client_for(kube), namespace=NS, say=said.append,
        )  # fmt: skip
    # the outputs are in the task's paths, the metrics are the phase's
    assert json.loads((out_model / "sparring_model.json").read_text())["role"] == "answerer"
    assert metrics["dry_run"] == 1.0 and metrics["world_size"] == 1.0 and metrics["problems"] > 0
    # what the TrainJob was told, and what went through S3
    (obj,) = kube.trainjobs.values()
    name = obj["metadata"]["name"]
    assert name == trainjob_name("train-answerer", 1, f"{root}/train-answerer/trainjob")
    assert obj["spec"]["trainer"]["numNodes"] == 2
    prefix = "pipeline-root/sparring-x/run-1/train-answerer/trainjob/"
    listed = boto3.client("s3", endpoint_url=s3_server).list_objects_v2(
        Bucket=bucket, Prefix=prefix
    )
    keys = [o["Key"] for o in listed["Contents"]]
    assert any(k.endswith("trainjob/config.yaml") for k in keys)
    assert any(k.endswith("trainjob/out/metrics.json") for k in keys)
    assert any(k.endswith("trainjob/out/model/sparring_model.json") for k in keys)
    # the task's log and the MLflow run got the TrainJob's state and rank 0's log
    assert any("Complete" in line for line in said)
    assert any("train-answerer: done on 1 process(es), 1 node(s)" in line for line in said)
    client = mlflow.MlflowClient()
    tags = client.get_run(run.info.run_id).data.tags
    assert tags["sparring.trainjob"] == f"{NS}/{name}"
    assert tags["sparring.trainjob.state"] == "Complete"
    artifacts = [a.path for a in client.list_artifacts(run.info.run_id, "trainjob")]
    assert artifacts == [f"trainjob/{name}.log"]
    for t in controller.threads:
        t.join(timeout=10)

"""A real HTTP server on loopback that plays the Kubernetes API for TrainJobs.

It serves what `sparring.cluster.kube.KubeClient` asks for: create/get/delete of
`trainer.kubeflow.org/v1alpha1` TrainJobs in a namespace, pods listed by label selector, and a
pod's log with `timestamps` and `sinceTime` (whole seconds, as the API server does). Requests
need `Authorization: Bearer <token>`; errors are v1 Status objects.

A TrainJob's life is a script: `statuses[name]` is the list of `status` values it shows on
successive GETs (the last one stays); `logs` are the lines its node-0 pod has logged, each
revealed with the status GET of its index (all at once with `reveal_all`). `on_create(obj)`
may play the controller (run the trainer's command). Every request is recorded in
`requests` as (method, path, query).
Used by tests/integration/test_cluster_trainjob.py.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PREFIX = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/"


def status_obj(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": message}  # fmt: skip


def condition(kind: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": "True", "reason": reason or kind, "message": message,
            "lastTransitionTime": "2026-11-25T10:00:00Z"}  # fmt: skip


RUNNING = {"jobsStatus": [{"name": "node", "active": 2, "ready": 2, "succeeded": 0,
                           "failed": 0, "suspended": 0}]}  # fmt: skip
CREATED: dict[str, Any] = {}


def complete() -> dict[str, Any]:
    return {"conditions": [condition("Complete", "JobsCompleted", "TrainJob is completed")]}


def failed(reason: str, message: str) -> dict[str, Any]:
    return {"conditions": [condition("Failed", reason, message)]}


class FakeKube:
    def __init__(self, namespace: str = "sparring", token: str = "token-1"):
        self.namespace = namespace
        self.tokens = {token}
        self.trainjobs: dict[str, dict[str, Any]] = {}
        self.statuses: dict[str, list[dict[str, Any]]] = {}
        self.reads: dict[str, int] = {}
        self.logs: dict[str, list[tuple[str, str]]] = {}  # trainjob -> [(timestamp, text)]
        self.fail_next: list[int] = []  # HTTP codes for the next requests (then normal)
        self.forbid_create = False
        self.reveal_all = False  # every logged line at once (a controller appends them live)
        self.on_create = None
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, body: Any, raw: bool = False) -> None:
                data = body.encode() if raw else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain" if raw else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                with fake.lock:
                    fake.requests.append((method, url.path, query))
                    auth = self.headers.get("Authorization", "")
                    if auth.removeprefix("Bearer ") not in fake.tokens:
                        return self._send(401, status_obj(401, "Unauthorized", "bad token"))
                    if fake.fail_next:
                        code = fake.fail_next.pop(0)
                        return self._send(code, status_obj(code, "InternalError", "try again"))
                    code, out, raw = fake.route(method, url.path, query, body)
                self._send(code, out, raw)
                if method == "POST" and code == 201 and fake.on_create is not None:
                    fake.on_create(out)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_DELETE(self):
                self._handle("DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeKube:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ---------------------------------------------------------------- routes

    def route(self, method: str, path: str, query: dict[str, str], body: Any):
        ns = self.namespace
        base = f"{PREFIX}{ns}/trainjobs"
        if path == base and method == "POST":
            if self.forbid_create:
                msg = 'trainjobs.trainer.kubeflow.org is forbidden: User "system:serviceaccount'
                return 403, status_obj(403, "Forbidden", msg + f':{ns}:default" cannot create'), 0
            name = body["metadata"]["name"]
            if name in self.trainjobs:
                return 409, status_obj(409, "AlreadyExists", f'trainjobs "{name}" exists'), False
            self.trainjobs[name] = body
            self.statuses.setdefault(name, [CREATED])
            self.reads[name] = 0
            return 201, body, False
        if path.startswith(base + "/"):
            name = path[len(base) + 1 :]
            if name not in self.trainjobs:
                return 404, status_obj(404, "NotFound", f'trainjobs "{name}" not found'), False
            if method == "DELETE":
                del self.trainjobs[name]
                return 200, status_obj(200, "Success", "deleted") | {"status": "Success"}, False
            script = self.statuses[name]
            i = min(self.reads[name], len(script) - 1)
            self.reads[name] += 1
            return 200, {**self.trainjobs[name], "status": script[i]}, False
        if path == f"/api/v1/namespaces/{ns}/pods":
            return 200, {"kind": "PodList", "items": self._pods(query.get("labelSelector", ""))}, 0
        if path.startswith(f"/api/v1/namespaces/{ns}/pods/") and path.endswith("/log"):
            pod = path.split("/")[-2]
            job = pod.rsplit("-node-0-0", 1)[0]
            return 200, self._log(job, query), True
        return 404, status_obj(404, "NotFound", path), False

    def _pods(self, selector: str) -> list[dict[str, Any]]:
        want = dict(part.split("=", 1) for part in selector.split(",") if part)
        out = []
        for name in self.trainjobs:
            labels = {
                "jobset.sigs.k8s.io/jobset-name": name,
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "batch.kubernetes.io/job-completion-index": "0",
            }
            if self.reads.get(name, 0) and all(labels.get(k) == v for k, v in want.items()):
                meta = {"name": f"{name}-node-0-0-abcde", "labels": labels,
                        "creationTimestamp": "2026-11-25T10:00:00Z"}  # fmt: skip
                out.append({"metadata": meta})
        return out

    def _log(self, job: str, query: dict[str, str]) -> str:
        shown = self.logs.get(job, [])
        if not self.reveal_all:
            shown = shown[: self.reads.get(job, 0)]
        since = query.get("sinceTime", "")
        lines = [f"{ts} {text}" for ts, text in shown if not since or ts[:19] >= since[:19]]
        return "".join(line + "\n" for line in lines)

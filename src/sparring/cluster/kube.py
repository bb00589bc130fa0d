"""A small Kubernetes REST client: TrainJobs, the pods they run and those pods' logs.

Covers: `KubeClient.in_cluster()` (the API server, service-account token and CA a pod is
given; the token is read again for every request, because projected tokens rotate during a
long wait), create/get/delete of `trainer.kubeflow.org/v1alpha1` TrainJobs, listing pods by
label selector and reading a container's log since a time. Errors become `KubeError` with the
HTTP status and the API's own reason and message (401/403 add the RBAC hint).
Does not cover: watches (the wait loop polls), other resources, kubeconfig files.
Plain urllib and json: no client library, so a loopback HTTP server can play the API in tests.
"""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from sparring.cluster.trainjob import API_VERSION, PLURAL
from sparring.errors import SparringError

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
RBAC_HINT = (
    "the task's service account lacks the right: apply manifests/components/trainer (Role "
    "sparring-trainjobs) and submit the run with kubernetes.service_account"
)


class KubeError(SparringError):
    """A request the API server refused or could not answer; `status` is the HTTP code
    (0 when the server was not reached)."""

    def __init__(self, message: str, status: int = 0, reason: str = ""):
        super().__init__(message)
        self.status = status
        self.reason = reason


class KubeClient:
    """Requests to one API server with a bearer token (read from `token_file` each time)."""

    def __init__(
        self,
        host: str,
        *,
        token: str = "",
        token_file: str | Path | None = None,
        ca_file: str | Path | None = None,
        timeout_s: float = 30.0,
    ):
        self.host = host.rstrip("/")
        self.token = token
        self.token_file = Path(token_file) if token_file else None
        self.timeout_s = timeout_s
        self._ssl = None
        if self.host.startswith("https://"):
            self._ssl = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)

    @classmethod
    def in_cluster(cls, sa_dir: Path = SA_DIR) -> KubeClient:
        """The client a pod has: KUBERNETES_SERVICE_HOST/PORT and its service account."""
        host = os.environ.get("KUBERNETES_SERVICE_HOST")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host or not (sa_dir / "token").is_file():
            raise SparringError(
                "kubernetes.trainer.nodes > 1 creates a TrainJob, which needs the Kubernetes API "
                "of a pod (no KUBERNETES_SERVICE_HOST or service-account token here); run it on "
                "the cluster, or set kubernetes.trainer.nodes: 1"
            )
        if ":" in host:  # IPv6
            host = f"[{host}]"
        return cls(f"https://{host}:{port}", token_file=sa_dir / "token", ca_file=sa_dir / "ca.crt")

    # ------------------------------------------------------------------ transport

    def _token(self) -> str:
        if self.token_file is not None:
            return self.token_file.read_text().strip()
        return self.token

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, str] | None = None,
        raw: bool = False,
    ) -> Any:
        """One request; returns the decoded JSON (or text with `raw`)."""
        url = self.host + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "*/*" if raw else "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        token = self._token()
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s, context=self._ssl) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as exc:
            raise _api_error(method, path, exc) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise KubeError(f"{method} {path}: API server not reached ({reason})") from None
        if raw:
            return payload.decode("utf-8", errors="replace")
        return json.loads(payload) if payload else {}

    # ------------------------------------------------------------------ TrainJobs

    @staticmethod
    def trainjobs_path(namespace: str, name: str = "") -> str:
        path = f"/apis/{API_VERSION}/namespaces/{namespace}/{PLURAL}"
        return f"{path}/{name}" if name else path

    def create_trainjob(self, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", self.trainjobs_path(namespace), obj)

    def get_trainjob(self, namespace: str, name: str) -> dict[str, Any]:
        return self.request("GET", self.trainjobs_path(namespace, name))

    def delete_trainjob(self, namespace: str, name: str) -> None:
        """Delete a TrainJob and, in the background, its JobSet and pods."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        try:
            self.request("DELETE", self.trainjobs_path(namespace, name), body)
        except KubeError as exc:
            if exc.status != 404:
                raise

    # ------------------------------------------------------------------ pods and logs

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        out = self.request(
            "GET", f"/api/v1/namespaces/{namespace}/pods", query={"labelSelector": selector}
        )
        return list(out.get("items") or [])

    def pod_log(
        self, namespace: str, pod: str, container: str, since_time: str = ""
    ) -> str:  # fmt: skip
        """The container's log with RFC 3339 timestamps, from `since_time` (whole seconds) on."""
        query = {"container": container, "timestamps": "true"}
        if since_time:
            query["sinceTime"] = since_time
        return self.request(
            "GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log", query=query, raw=True
        )


def _api_error(method: str, path: str, exc: urllib.error.HTTPError) -> KubeError:
    """A KubeError from an HTTP error carrying (usually) a v1 Status object."""
    reason, message = exc.reason, ""
    try:
        status = json.loads(exc.read() or b"{}")
        reason = status.get("reason") or reason
        message = status.get("message") or ""
    except (ValueError, OSError):
        pass
    text = f"{method} {path}: {exc.code} {reason}" + (f": {message}" if message else "")
    if exc.code in (401, 403):
        text += f"; {RBAC_HINT}"
    return KubeError(text, status=exc.code, reason=str(reason))


def pod_namespace(default: str, sa_dir: Path = SA_DIR) -> str:
    """The namespace this pod runs in (its service account's), else `default`."""
    f = sa_dir / "namespace"
    return f.read_text().strip() if f.is_file() else default

"""Deploying the champion to KServe after select: the champion uploaded to S3 (moto in server
mode) and its InferenceService created, then updated, through the `kubernetes` client against a
small Kubernetes API server on loopback that plays the part (no kube-apiserver installs here).

The fake API keeps InferenceServices in a dict: GET (404 when absent), POST (create), PATCH
(merge). It answers only the paths the client uses, so a wrong group, version, namespace or
verb fails the test.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from sparring import storage
from sparring.config import from_dict
from sparring.errors import SparringError
from sparring.serving import kserve
from tests.conftest import ARTIFACT_BUCKET

PREFIX = "/apis/serving.kserve.io/v1beta1/namespaces/sparring/inferenceservices"


class FakeKube(BaseHTTPRequestHandler):
    objects: ClassVar[dict[str, dict]] = {}
    calls: ClassVar[list[tuple[str, str]]] = []

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def do_GET(self):
        self.calls.append(("GET", self.path))
        name = self.path.removeprefix(PREFIX + "/")
        if self.path.startswith(PREFIX + "/") and name in self.objects:
            return self._send(200, self.objects[name])
        self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound"})

    def do_POST(self):
        self.calls.append(("POST", self.path))
        assert self.path == PREFIX, self.path
        obj = self._body()
        self.objects[obj["metadata"]["name"]] = obj
        self._send(201, obj)

    def do_PATCH(self):
        self.calls.append(("PATCH", self.path))
        name = self.path.removeprefix(PREFIX + "/")
        assert name in self.objects, self.path
        self.objects[name] = {**self.objects[name], **self._body()}
        self._send(200, self.objects[name])

    def log_message(self, *args):
        pass


@pytest.fixture()
def kube():
    from kubernetes import client

    FakeKube.objects, FakeKube.calls = {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeKube)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    conf = client.Configuration(host=f"http://127.0.0.1:{server.server_port}")
    try:
        yield client.ApiClient(conf)
    finally:
        server.shutdown()


def _full_champion(folder: Path) -> str:
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / "sparring_model.json").write_text('{"tuning_mode": "full", "base": "x"}')
    return str(folder)


def test_deploy_uploads_the_champion_and_creates_then_updates(s3_server, kube, tmp_path):
    cfg = from_dict({"storage": {"bucket": ARTIFACT_BUCKET}, "serving": {"deploy_champion": True}})
    storage.configure(cfg)
    champion = _full_champion(tmp_path / "champion")
    uri = kserve.deploy_champion(cfg, champion, 3, api_client=kube)
    assert uri == f"s3://{ARTIFACT_BUCKET}/champions/sparring-answerer/v3/"
    assert storage.read_text(uri + "config.json") == '{"model_type": "llama"}'
    isvc = FakeKube.objects["sparring-champion"]
    assert isvc["spec"]["predictor"]["model"]["storageUri"] == uri
    assert isvc["metadata"]["labels"]["sparring.io/champion-version"] == "3"
    assert [c[0] for c in FakeKube.calls] == ["GET", "POST"]

    uri4 = kserve.deploy_champion(cfg, champion, 4, api_client=kube)
    assert [c[0] for c in FakeKube.calls][2:] == ["GET", "PATCH"]
    assert FakeKube.objects["sparring-champion"]["spec"]["predictor"]["model"]["storageUri"] == (
        uri4
    )


def test_deploy_without_a_bucket_is_one_line(tmp_path):
    cfg = from_dict({"serving": {"deploy_champion": True}})
    with pytest.raises(SparringError, match=r"set storage\.bucket"):
        kserve.deploy_champion(cfg, _full_champion(tmp_path / "c"), 1)


def test_mlx_champion_is_refused(tmp_path):
    folder = tmp_path / "mlx"
    folder.mkdir()
    (folder / "sparring_model.json").write_text('{"backend": "mlx", "tuning_mode": "lora"}')
    (folder / "adapters.safetensors").write_bytes(b"")
    with pytest.raises(SparringError, match="MLX adapter"):
        kserve.servable_folder(str(folder), str(tmp_path))


def test_lora_champion_is_merged_into_its_base(tmp_path):
    from peft import get_peft_model

    from sparring.backends.torch.models import load_model, peft_lora_config, save_model
    from sparring.config import LoraConfig

    model, tok = load_model("tiny-random", device="cpu")
    model = get_peft_model(model, peft_lora_config(LoraConfig(r=4)))
    save_model(model, tok, str(tmp_path / "lora"), {"base": "tiny-random", "role": "answerer"})
    out = kserve.servable_folder(str(tmp_path / "lora"), str(tmp_path))
    assert (Path(out) / "config.json").is_file()
    assert not (Path(out) / "adapter_config.json").exists()

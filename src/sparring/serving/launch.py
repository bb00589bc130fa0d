"""What `sparring serve` serves: a base model or full checkpoint plus LoRA adapters, as folders.

Covers: `resolve_source` (a built-in name such as `smollm2-135m`, a local HF folder, a
Sparring model artifact, or `models:/NAME@ALIAS` / `models:/NAME/VERSION` downloaded from the
MLflow registry) and `plan` (the engine's `--model` folder and its start-up adapters: a LoRA
artifact passed as the model serves its recorded base with the adapter under its role's name;
a full checkpoint is served as the model; a "base" pointer artifact as the base it names;
`NAME=SOURCE` adapters keep their name, a bare SOURCE takes its role or folder name), and
`run_until_signal`, which keeps a started engine up until SIGINT or SIGTERM and then stops it.

Does not cover: the engine processes (sparring.serving.engines) or hot-swapping
(sparring.serving.publisher). Imports MLflow only for `models:/` and torch only to build a
built-in model's folder the first time.
"""

from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from sparring.backends.base import read_meta
from sparring.errors import SparringError


@dataclass(frozen=True)
class Plan:
    model: str  # folder the engine loads
    served_name: str  # its name in /v1/models
    adapters: dict[str, str]  # start-up adapters: served name -> folder


def resolve_source(source: str, tracking_uri: str | None = None) -> str:
    """A local folder for a built-in name, a folder, or a `models:/` registry URI."""
    if not source or not source.strip():
        raise SparringError("serve: the model is empty; pass a folder, a built-in or models:/…")
    if source.startswith("models:/"):
        from sparring.serving.inference import resolve_checkpoint

        return resolve_checkpoint(source, tracking_uri)
    path = Path(source).expanduser()
    if path.is_dir():
        return str(path.resolve())
    from sparring.backends.builtins import BUILTINS, builtin_dir

    if source in BUILTINS:
        return str(builtin_dir(source))
    raise SparringError(
        f"serve: {source!r} is not a folder, a built-in ({', '.join(BUILTINS)}) or models:/…; "
        "engines here cannot reach a model hub"
    )


def _base_of(folder: str, tracking_uri: str | None) -> str:
    meta = read_meta(folder) or {}
    base = str(meta.get("base") or "")
    if not base:
        raise SparringError(f"serve: {folder} is a LoRA adapter that does not name its base")
    return resolve_source(base, tracking_uri)


def _default_name(model: str, folder: str) -> str:
    """`models:/NAME@ALIAS` -> NAME; a folder -> its name; a built-in -> itself."""
    if model.startswith("models:/"):
        return re.split(r"[@/]", model[len("models:/") :])[0]
    if Path(model).expanduser().is_dir():
        return Path(folder).name
    return model


def _split_adapter(text: str) -> tuple[str | None, str]:
    name, sep, source = text.partition("=")
    if sep and name and not name.startswith(("models:", "/", ".", "~")):
        return name, source
    return None, text


def plan(
    model: str,
    adapters: list[str] | None = None,
    *,
    served_name: str | None = None,
    tracking_uri: str | None = None,
) -> Plan:
    """The engine's model folder and start-up adapters for `sparring serve MODEL --adapter …`."""
    folder = resolve_source(model, tracking_uri)
    meta = read_meta(folder) or {}
    mode = meta.get("tuning_mode")
    out: dict[str, str] = {}
    if mode == "lora":
        out[str(meta.get("role") or "adapter")] = folder
        folder = _base_of(folder, tracking_uri)
    elif mode == "base":
        folder = resolve_source(str(meta["base"]), tracking_uri)
    name = served_name or _default_name(model, folder)
    for text in adapters or []:
        given, source = _split_adapter(text)
        path = resolve_source(source, tracking_uri)
        ameta = read_meta(path) or {}
        if not (Path(path) / "adapter_config.json").is_file():
            raise SparringError(f"serve: adapter {source}: not a LoRA adapter folder")
        key = given or str(ameta.get("role") or Path(path).name)
        if "@" in key:
            raise SparringError(f"serve: adapter name {key!r} may not contain '@' (versions do)")
        if key in out:
            raise SparringError(f"serve: two adapters named {key!r}; use NAME=SOURCE")
        out[key] = path
    return Plan(model=folder, served_name=name, adapters=out)


def run_until_signal(proc, announce: str = "") -> int:
    """Keep `proc` (a started EngineProcess) up until SIGINT/SIGTERM or its exit; then stop it.
    Returns 0 on a signal, else the engine's exit code."""
    # The handler only appends to a list: a handler that takes a lock (threading.Event.set)
    # deadlocks when the signal lands while the main thread holds that lock in Event.wait,
    # which left `sparring serve` hanging after SIGTERM (2026-12-07).
    signals: list[int] = []
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, lambda signum, _frame: signals.append(signum))
    if announce:
        print(announce, flush=True)
    try:
        while not signals:
            code = proc.proc.poll()
            if code is not None:
                print(f"engine exited with code {code}; log: {proc.log_path}", flush=True)
                return int(code) or 1
            time.sleep(0.5)  # the handler runs inside the sleep; the loop sees it within 0.5 s
        print("stopping the engine", flush=True)
        proc.stop()
        return 0
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if proc.proc and proc.proc.poll() is None:
            proc.stop()


def default_log_path(port: int) -> str:
    """Where the engine's output goes unless --log-file says otherwise."""
    root = os.environ.get("SPARRING_CACHE") or os.path.join(Path.home(), ".cache", "sparring")
    return str(Path(root) / "serve" / f"engine-{port}.log")

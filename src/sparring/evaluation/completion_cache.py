"""Completions of an unchanged model, kept on disk so that the runs that share them sample once.

Every `make learn` run, its control and every training seed of one config evaluate the same base
model on the same held-out problems with the same sampling seed; the base model's answers are
the same each time and cost a quarter of a run. `CompletionCache` keeps them under
`$SPARRING_CACHE/completions/` (default ~/.cache/sparring), one JSON file per sampling call,
named by a hash of everything the answers depend on: the model's identity (`model_identity`: a
built-in's name and files; a folder's contents, wherever it lies; an adapter's with its base
model's), how it was loaded (`loaded_on`: backend, device, dtype; on a CPU torch's thread count
and vector instruction set), the prompts, the budget,
temperature, top_p, samples per prompt, seed, rows decoded at once, FORMAT (raise it when an
entry's layout changes) and the source of the decoding code (DECODER_MODULES: a decoder change
is a new key by construction; 8229cb5 changed what the decoder returns while FORMAT stayed 1).
Sampling draws one stream for a whole call, so a call is the unit: the same problems in another
order or with one more problem is another entry.
`SPARRING_COMPLETION_CACHE=0` turns it off.

Besides the base model, the evaluation caches a run's final snapshot: in recurring training the
next run starts from it, and its measure against that start (sparring.phases.evaluate.
versus_start) reads the start's sampled answers from here instead of sampling them again. The
frozen answerer's pool samples (sparring.phases.generator) go through it as well, their key
holding the topology besides.
Does not cover: eviction (an entry is a few hundred kB; `rm -r` the folder).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sparring.atomic import write_file
from sparring.backends import lineage
from sparring.backends.base import read_meta
from sparring.backends.builtins import BUILTINS, builtin_dir

log = logging.getLogger(__name__)

FORMAT = 2
# the modules whose code decides which tokens a sampling call returns, relative to the package
DECODER_MODULES = (
    "backends/sampler.py",
    "problems/prompts.py",
    "backends/budget.py",
    "backends/torch/generation.py",
    "backends/torch/slot_decoder.py",
    "backends/torch/decode_attention.py",
    "backends/torch/models.py",
    "backends/mlx/generation.py",
)


def cache_root() -> Path:
    root = os.environ.get("SPARRING_CACHE") or os.path.join(Path.home(), ".cache", "sparring")
    return Path(root) / "completions"


def enabled() -> bool:
    return os.environ.get("SPARRING_COMPLETION_CACHE", "1").strip().lower() not in {
        "0", "false", "no", "off",
    }  # fmt: skip


def decoder_digest(root: Path | None = None) -> str:
    """sha256 of the DECODER_MODULES' source (under `root`, default the installed package)."""
    root = root or Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for rel in DECODER_MODULES:
        path = root / rel
        h.update(rel.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\0")
    return h.hexdigest()


def model_identity(name: str) -> str:
    """What a model's answers depend on, as a hash. A built-in: its name and the name, size and
    modification time of every file in its cache folder (built once, then only read). A folder
    or file of weights: the relative name and contents of every file, and not its path: the
    final snapshot one run evaluates and the champion version the next run starts from are the
    same bytes at two paths, so the second samples nothing. An adapter's identity holds its
    base model's: the same adapter files over other base weights answer otherwise. Anything
    else (a hub name): the name."""
    if name in BUILTINS:
        path = builtin_dir(name)
        parts = [name]
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            st = f.stat()
            parts.append(f"{f.relative_to(path)}:{st.st_size}:{st.st_mtime_ns}")
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()
    path = Path(name)
    if not path.exists():
        return hashlib.sha256(name.encode()).hexdigest()
    h = hashlib.sha256(b"contents\0")
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode() + b"\0")
        with f.open("rb") as stream:
            for chunk in iter(lambda: stream.read(1 << 22), b""):
                h.update(chunk)
        h.update(b"\0")
    base = str((read_meta(path) or {}).get("base") or "") if path.is_dir() else ""
    if base and base != name:  # an adapter or a pointer: what lies under it
        h.update(b"base:" + model_identity(base).encode())
    return h.hexdigest()


def loaded_on(loaded: Any) -> dict[str, str | None]:
    """What decides a loaded model's tokens besides its files: the backend that loaded it, the
    device and the dtype (one folder answers otherwise in bf16, on a GPU or under MLX), and on
    a CPU `cpu_kind`; None for what the object does not say."""
    backend, model = getattr(loaded, "backend", None), getattr(loaded, "model", None)
    device, dtype = getattr(model, "device", None), getattr(model, "dtype", None)
    out: dict[str, Any] = {
        "backend": getattr(backend, "name", None),
        "device": None if device is None else str(device),
        "dtype": None if dtype is None else str(dtype),
    }
    if device is None or str(device).startswith("cpu"):
        out.update(cpu_kind())
    return out


def cpu_kind() -> dict[str, Any]:
    """torch's CPU thread count and vector instruction set ({} without torch): on a CPU they
    change sampled tokens (19 of 64 completions of one seed differed between 1 and 2 threads,
    2026-12-03), so an entry sampled with one is never handed to a run computing with another."""
    try:
        return {"cpu_threads": lineage.torch_threads(), "cpu_capability": lineage.cpu_capability()}
    except ImportError:
        return {}


def identity_if_enabled(name: str) -> str | None:
    """`model_identity(name)` when the cache is on, else None (nothing is looked up)."""
    return model_identity(name) if enabled() else None


def call_key(model: str, messages: Sequence[Any], settings: dict[str, Any]) -> str:
    """The hash naming one sampling call: model identity, the prompts in order, the settings."""
    body = json.dumps(
        {
            "format": FORMAT,
            "decoder": decoder_digest(),
            "model": model,
            "messages": list(messages),
            "settings": settings,
        },
        sort_keys=True,
    )
    return hashlib.sha256(body.encode()).hexdigest()


class CompletionCache:
    """Look up and store the completions of one call under `root` (default: cache_root())."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else cache_root()

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def get(self, key: str, n_prompts: int, n_samples: int) -> list[list[str]] | None:
        """The stored completions, or None when absent or not of the asked shape (a torn or
        foreign file is a miss, never an error)."""
        try:
            texts = json.loads(self._path(key).read_text())["texts"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not isinstance(texts, list) or len(texts) != n_prompts:
            return None
        if any(not isinstance(t, list) or len(t) != n_samples for t in texts):
            return None
        return texts

    def put(self, key: str, texts: list[list[str]], note: str = "") -> None:
        """Store a call's completions; a full disk or read-only cache only loses the entry."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            write_file(self._path(key), json.dumps({"note": note, "texts": texts}).encode())
        except Exception as exc:  # a cache that cannot be written is no reason to fail a run
            log.warning("completion cache not written (%s): %s", self._path(key), exc)


def through_cache(
    model: str,
    messages: Sequence[Any],
    settings: dict[str, Any],
    samples: int,
    sample: Callable[[], list[list[str]]],
    note: str = "",
) -> list[list[str]]:
    """The completions of one sampling call (`samples` per prompt) from the cache, or from
    `sample()`, stored for the next run that asks the same."""
    key = call_key(model, messages, settings)
    store = CompletionCache()
    texts = store.get(key, len(messages), samples)
    if texts is None:
        texts = sample()
        store.put(key, texts, note=note)
    else:
        log.info("%s: %d x %d answers from the completion cache", note, len(messages), samples)
    return texts

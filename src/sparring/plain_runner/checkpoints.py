"""Checkpoints of the plain-Python runner: atomic folders with a completion marker, resume, best,
and an optional mirror in S3 (or another folder).

A checkpoint is a folder `<root>/<phase name>/` holding the state after that phase: the current
model artifacts of both roles (`answerer/`, `generator/`, hard-linked when possible), the
adversarial test bank (`bank.jsonl`), and `checkpoint.json` (round, phase, stage, metrics, config
digest, time, score). It is written into a hidden temp folder, the `COMPLETE` marker is written
last (and fsynced), then the folder is swapped into place in one step (`storage.atomic_dir`): a
folder without the marker is ignored by `list_checkpoints`, `latest` and `best`, and a process
killed at any point leaves the previous checkpoint as it was. A full disk is a one-line
SparringError naming the checkpoint; what killed writers left behind is swept before the next
write of the same checkpoint.

Mirror (`upload`, `latest_remote`, `download`): a checkpoint copied to
`<prefix>/checkpoints/<name>/` with `storage.upload_dir` (manifest last); only checkpoints whose
upload finished are seen by `latest_remote`, so a half-uploaded one is never resumed from.

Covers: writing, listing, loading, the latest complete checkpoint (local or mirrored),
best-checkpoint selection by `rewards.checkpoint_score` with the config's selection weights.
Does not cover: what the runner does with them (sparring.plain_runner.loop).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring import rewards, storage
from sparring.errors import SparringError
from sparring.rewards.bank import BANK_FILE, copy_bank

MARKER = "COMPLETE"
META = "checkpoint.json"


class CheckpointError(SparringError):
    """A checkpoint cannot be used (missing, incomplete, from another config)."""


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    meta: dict[str, Any]

    @property
    def index(self) -> int:
        return int(self.meta["phase_index"])

    def model(self, role: str) -> str | None:
        rel = self.meta.get("models", {}).get(role)
        return str(self.path / rel) if rel else None

    @property
    def bank(self) -> Path:
        return self.path / BANK_FILE


def _link_tree(src: str | Path, dst: Path) -> None:
    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=link)


def write_checkpoint(
    root: str | Path,
    name: str,
    meta: Mapping[str, Any],
    models: Mapping[str, str | None],
    bank: str | Path | None,
) -> Checkpoint:
    """Write a complete checkpoint atomically. `models`: role -> artifact folder, or a base
    model name (recorded, not copied), or None."""
    final = Path(root) / name
    storage.sweep_temps(final)  # leftovers of writers killed while writing this checkpoint
    with storage.atomic_dir(final) as tmp:
        recorded: dict[str, str | None] = {}
        bases: dict[str, str] = {}
        for role, src in models.items():
            if src and os.path.isdir(src):
                _link_tree(src, tmp / role)
                recorded[role] = role
            else:
                recorded[role] = None
                if src:
                    bases[role] = src
        copy_bank(bank, tmp / BANK_FILE)  # no bank: an empty one
        record = {**meta, "models": recorded, "base_models": bases, "time": time.time()}
        (tmp / META).write_text(json.dumps(record, indent=1, sort_keys=True))
        with open(tmp / MARKER, "w") as fh:  # last: its presence means everything is there
            fh.write(name + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    return Checkpoint(final, record)


def is_complete(path: str | Path) -> bool:
    p = Path(path)
    return (p / MARKER).is_file() and (p / META).is_file()


def load_checkpoint(path: str | Path) -> Checkpoint:
    p = Path(path)
    if not p.is_dir():
        raise CheckpointError(f"{path}: no such checkpoint folder")
    if not is_complete(p):
        raise CheckpointError(f"{path}: incomplete checkpoint (no {MARKER} marker); pick another")
    return Checkpoint(p, json.loads((p / META).read_text()))


def list_checkpoints(root: str | Path) -> list[Checkpoint]:
    """Complete checkpoints under `root`, in phase order (incomplete ones, and writers'
    hidden temporary folders, are ignored)."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [
        load_checkpoint(p)
        for p in root.iterdir()
        # a hidden folder is a writer's temporary copy: complete inside but never renamed into
        # place when its writer was killed; resuming from it would skip the phase it belongs to
        if p.is_dir() and not p.name.startswith(".") and is_complete(p)
    ]
    return sorted(found, key=lambda c: c.index)


def latest(root: str | Path) -> Checkpoint | None:
    found = list_checkpoints(root)
    return found[-1] if found else None


def score_of(meta: Mapping[str, Any], weights: Mapping[str, float] | None = None) -> float | None:
    """Checkpoint score from the running answerer reward and test validity in `meta`."""
    reward = meta.get("answerer_reward")
    validity = meta.get("test_validity")
    if reward is None and validity is None:
        return None
    return rewards.checkpoint_score(float(reward or 0.0), float(validity or 0.0), weights)


def select_best(
    checkpoints: list[Checkpoint], weights: Mapping[str, float] | None = None
) -> Checkpoint | None:
    """The checkpoint with the highest score (ties: the later one); None when none is scored."""
    best: tuple[float, int] | None = None
    chosen = None
    for c in checkpoints:
        s = score_of(c.meta, weights)
        if s is None:
            continue
        if best is None or (s, c.index) >= best:
            best, chosen = (s, c.index), c
    return chosen


def selection_weights(cfg: Any) -> dict[str, float]:
    return {
        "answerer_reward": cfg.selection.answerer_reward,
        "test_validity": cfg.selection.test_validity,
    }


def remote_uri(prefix: str, name: str) -> str:
    """Where the mirror keeps the checkpoint `name`."""
    return f"{prefix.rstrip('/')}/checkpoints/{name}"


def upload(checkpoint: Checkpoint, prefix: str) -> str:
    """Copy a complete checkpoint to the mirror (manifest last); returns its URI."""
    if not is_complete(checkpoint.path):
        raise CheckpointError(f"{checkpoint.path}: incomplete checkpoint; not uploaded")
    uri = remote_uri(prefix, checkpoint.path.name)
    storage.upload_dir(checkpoint.path, uri, last=(MARKER,))
    return uri


def latest_remote(prefix: str) -> tuple[str, dict[str, Any]] | None:
    """The mirrored checkpoint with the highest phase index whose upload finished (a manifest
    listing its COMPLETE marker), as (URI, its checkpoint.json); None when there is none."""
    base = remote_uri(prefix, "")
    names = set()
    for uri in storage.list_uris(base):
        rel = uri[len(base) :]
        name, _, rest = rel.partition("/")
        if rest == storage.MANIFEST:
            names.add(name)
    best: tuple[str, dict[str, Any]] | None = None
    for name in sorted(names):
        uri = remote_uri(prefix, name)
        manifest = json.loads(storage.read_text(f"{uri}/{storage.MANIFEST}"))
        listed = {f["path"] for f in manifest.get("files", [])}
        if not {MARKER, META} <= listed:
            continue  # a folder that was not a complete checkpoint when it was uploaded
        meta = json.loads(storage.read_text(f"{uri}/{META}"))
        if best is None or int(meta["phase_index"]) > int(best[1]["phase_index"]):
            best = (uri, meta)
    return best


def download(uri: str, root: str | Path) -> Checkpoint:
    """Copy a mirrored checkpoint into `root` (atomically; it must be a finished upload)."""
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    storage.download_dir(uri, Path(root) / name)
    return load_checkpoint(Path(root) / name)

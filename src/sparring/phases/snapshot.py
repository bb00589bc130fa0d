"""The snapshot manifest: each round's answerer, tests and generator, by artifact URI, for
evaluation.

KFP v2 cannot pass a compile-time list of artifacts to one task (dsl.Collected only gathers
ParallelFor outputs), so after each round a tiny `snapshot` task appends `{round, answerer:
<artifact uri>, tests: <artifact uri>, generator: <artifact uri>}` to a JSON manifest (a chain
of small artifacts; weights are never copied). The generator is the round's latest (the init
model's when no generator phase ran yet); a manifest of older code has none. Evaluation
resolves each URI: a local path under kfp.local, an `s3://` (or `minio://`) URI on the
cluster, downloaded with boto3. A warm-started answerer heads the manifest as `{round: 0,
label: "warm-start", answerer: <uri>, tests: ""}`: it has no generator round, so evaluation
scores it apart from the rounds. Does not cover: evaluating (sparring.phases.evaluate).
"""

from __future__ import annotations

import json
from pathlib import Path

from sparring import storage
from sparring.errors import SparringError

WARM_START_LABEL = "warm-start"


def add_snapshot(
    previous_manifest: str | None,
    round_index: int,
    answerer_uri: str,
    tests_uri: str,
    out: str,
    label: str = "",
    generator_uri: str = "",
) -> list[dict]:
    """Append one round's answerer, generated tests and generator (by URI) to the snapshot
    manifest. A `label` marks an answerer without a generator round (the warm start: tests_uri
    "", no generator)."""
    entries = json.loads(Path(previous_manifest).read_text()) if previous_manifest else []
    entry = {"round": round_index, "answerer": answerer_uri, "tests": tests_uri}
    if generator_uri:
        entry["generator"] = generator_uri
    if label:
        entry["label"] = label
    entries.append(entry)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(entries, indent=1))
    return entries


def localize(uri: str, cache: Path) -> str:
    """A local path for an artifact URI (downloads s3:// and minio:// into cache)."""
    if uri.startswith("minio://"):
        uri = "s3://" + uri[len("minio://") :]
    if not storage.is_s3(uri):
        path = uri[len("file://") :] if uri.startswith("file://") else uri
        if not Path(path).exists():
            raise SparringError(f"{uri}: snapshot artifact does not exist")
        return path
    target = cache / storage.split_s3(uri)[1].strip("/")
    if storage.exists(uri):  # a single object (a file artifact)
        target.parent.mkdir(parents=True, exist_ok=True)
        storage.write_bytes(str(target), storage.read_bytes(uri))
    else:  # a folder KFP's launcher uploaded: no Sparring manifest
        storage.download_dir(uri, target, require_manifest=False)
    return str(target)


def resolve_snapshots(manifest_path: str, cache_dir: str) -> list[dict]:
    """Manifest entries with local `answerer_path` and `tests_path`, and `generator_path`: the
    last entry naming a generator has it local, every other entry "" (evaluation measures only
    the final generator; each round's would be a model downloaded for nothing)."""
    entries = json.loads(Path(manifest_path).read_text())
    cache = Path(cache_dir)
    for e in entries:
        e["answerer_path"] = localize(e["answerer"], cache)
        e["tests_path"] = localize(e["tests"], cache) if e["tests"] else ""
        e["generator_path"] = ""
    last = next((e for e in reversed(entries) if e.get("generator")), None)
    if last is not None:
        last["generator_path"] = localize(last["generator"], cache)
    return entries

"""Storage: S3 (boto3) and local paths behind one small API that survives outages, kills and
full disks.

Covers: `read_text`/`write_text`, `read_bytes`/`write_bytes`, `read_records` (a JSON or JSON
Lines file's records, sparring.records, local or S3: one reader) and `write_records` (JSON
Lines), `exists`, `list_uris`,
`upload_dir`, `download_dir`, `is_complete_upload`, for `s3://bucket/key` URIs and plain local
paths (or `file://`); local paths are written through sparring.atomic (`atomic_dir` is
re-exported). The S3 endpoint comes from `cfg.storage.s3_endpoint` (via `configure(cfg)`) or the
`AWS_ENDPOINT_URL` environment variable (MinIO, moto). Missing objects raise SparringError
naming the URI.

What it guarantees:
- Local writes are atomic (sparring.atomic): a reader, or a process killed at any point, sees
  the old version or the new one, never a torn one; a full disk is a one-line SparringError
  naming the path, the previous version intact.
- S3 calls retry transient failures (connection refused or reset, timeouts, 5xx, throttling)
  for `SPARRING_S3_RETRY_SECONDS` (default 120) from the first failure, with backoff, on top of
  botocore's standard-mode retries; then they raise a one-line SparringError naming the URI.
- `upload_dir` removes the prefix's old manifest first and writes a new one
  (`_SPARRING_MANIFEST.json`: every file, its size and sha256) last. `download_dir` reads only a
  prefix with a manifest, checks every file against it and fills the local folder atomically;
  a prefix whose writer died (objects but no manifest) raises "incomplete upload" instead of
  being read as complete. KFP's own artifacts have no manifest: `require_manifest=False`.

Does not cover: KFP artifacts (the launcher moves those) or MLflow artifacts (MLflow does);
objects a dead upload left under a prefix (readers ignore them; the next upload to the prefix
replaces them).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sparring import retrying
from sparring.atomic import atomic_dir, sweep_temps, write_file
from sparring.errors import SparringError
from sparring.records import parse_records
from sparring.records import read_records as read_local_records

log = logging.getLogger(__name__)
T = TypeVar("T")
__all__ = ["atomic_dir", "sweep_temps"]  # re-exported from sparring.atomic

_endpoint: str = ""  # set by configure(cfg); AWS_ENDPOINT_URL is the fallback
RETRY_ENV = "SPARRING_S3_RETRY_SECONDS"
DEFAULT_RETRY_SECONDS = 120.0
MANIFEST = "_SPARRING_MANIFEST.json"
_THROTTLED = {"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "InternalError"}


def configure(cfg) -> None:
    """Use the S3 endpoint of a config (`storage.s3_endpoint`) for later calls."""
    global _endpoint
    _endpoint = cfg.storage.s3_endpoint or ""


def is_s3(uri: str) -> bool:
    return str(uri).startswith("s3://")


def split_s3(uri: str) -> tuple[str, str]:
    """`s3://bucket/key` -> (bucket, key)."""
    rest = uri[len("s3://") :]
    bucket, _, key = rest.partition("/")
    if not bucket:
        raise SparringError(f"{uri}: not an s3://bucket/key URI")
    return bucket, key


def endpoint() -> str:
    """The S3 endpoint in use ("" = AWS's default)."""
    return _endpoint or os.environ.get("AWS_ENDPOINT_URL") or ""


def client():
    """A boto3 S3 client with the configured endpoint and standard-mode retries."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint() or None,
        config=Config(
            retries={"mode": "standard", "max_attempts": 3},
            connect_timeout=10,
            read_timeout=60,
        ),
    )


def retry_seconds() -> float:
    """How long an S3 call keeps retrying transient failures (`SPARRING_S3_RETRY_SECONDS`)."""
    return retrying.seconds_from_env(RETRY_ENV, DEFAULT_RETRY_SECONDS)


def _transient(exc: BaseException) -> bool:
    """True for failures worth retrying: the endpoint is down, slow or throttling."""
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError

    seen: BaseException | None = exc
    for _ in range(8):  # the cause chain (s3transfer wraps botocore's errors)
        if seen is None:
            return False
        if isinstance(seen, (BotoConnectionError, HTTPClientError, ConnectionError, TimeoutError)):
            return True
        if isinstance(seen, ClientError):
            status = seen.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
            code = seen.response.get("Error", {}).get("Code", "")
            return status >= 500 or status == 429 or code in _THROTTLED
        seen = seen.__cause__ or seen.__context__
    return False


def _missing(exc: Exception) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    return code in ("404", "NoSuchKey", "NotFound", "NoSuchBucket")


def s3_call(uri: str, what: str, fn: Callable[[], T]) -> T:
    """`fn()`, retried while it fails transiently, for up to `retry_seconds()` from the first
    failure; then a SparringError naming `uri`. Other errors pass through unchanged."""

    def first_failure(exc: BaseException) -> None:
        log.warning("%s: S3 failed while %s (%s); retrying", uri, what, retrying.one_line(exc, 200))

    def give_up(waited: float, exc: BaseException) -> Exception:
        return SparringError(
            f"{uri}: S3 endpoint {endpoint() or 'AWS'} unreachable for {waited:.0f}s "
            f"while {what} ({retrying.one_line(exc, 200)}); nothing was marked complete, "
            f"{RETRY_ENV} sets the wait"
        )

    return retrying.with_deadline(fn, _transient, retry_seconds(), first_failure, give_up)


def _client_error(uri: str, exc: Exception) -> SparringError:
    if _missing(exc):
        return SparringError(f"{uri}: no such object")
    return SparringError(f"{uri}: S3 error: {retrying.one_line(exc, 200)}")


def _local(uri: str) -> Path:
    return Path(uri[len("file://") :] if uri.startswith("file://") else uri)


def _join(uri: str, rel: str) -> str:
    return f"{uri.rstrip('/')}/{rel}"


def read_bytes(uri: str) -> bytes:
    if is_s3(uri):
        from botocore.exceptions import ClientError

        bucket, key = split_s3(uri)
        s3 = client()
        try:
            return s3_call(
                uri, "reading", lambda: s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            )
        except ClientError as exc:
            raise _client_error(uri, exc) from None
    path = _local(uri)
    if not path.is_file():
        raise SparringError(f"{uri}: no such file")
    return path.read_bytes()


def read_text(uri: str) -> str:
    return read_bytes(uri).decode("utf-8")


def read_records(
    uri: str, key: str = "", error: type[SparringError] = SparringError
) -> list[tuple[str, Any]]:
    """(label, record) pairs of the JSON or JSON Lines file at a local path or an s3:// URI
    (sparring.records.parse_records, told apart by the text); a missing, unreadable or non-UTF-8
    file is `error` naming it."""
    if not is_s3(uri):
        return read_local_records(_local(uri), key, error)
    data = read_bytes(uri)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{uri}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    return parse_records(text, uri, key, error)


def write_bytes(uri: str, data: bytes) -> None:
    """Write one object or file; atomic on both (an S3 PUT replaces an object whole)."""
    if is_s3(uri):
        from botocore.exceptions import ClientError

        bucket, key = split_s3(uri)
        s3 = client()
        try:
            s3_call(uri, "writing", lambda: s3.put_object(Bucket=bucket, Key=key, Body=data))
        except ClientError as exc:
            raise _client_error(uri, exc) from None
        return
    path = _local(uri)
    write_file(path, data)


def write_text(uri: str, text: str) -> None:
    write_bytes(uri, text.encode("utf-8"))


def write_records(uri: str | Path, rows: list[dict[str, Any]]) -> None:
    """Write `rows` as JSON Lines, one object or file written whole (a killed writer leaves the
    old one); a full disk is a one-line SparringError naming the file. A local Path is taken as
    its string, as the phases' old writer took it."""
    write_text(str(uri), "".join(json.dumps(r) + "\n" for r in rows))


def exists(uri: str) -> bool:
    if is_s3(uri):
        from botocore.exceptions import ClientError

        bucket, key = split_s3(uri)
        s3 = client()
        try:
            s3_call(uri, "checking it exists", lambda: s3.head_object(Bucket=bucket, Key=key))
            return True
        except ClientError as exc:
            if _missing(exc):
                return False
            raise _client_error(uri, exc) from None
    return _local(uri).exists()


def list_uris(prefix: str) -> list[str]:
    """Every object (file) under a prefix (folder), sorted; empty when there is none."""
    if is_s3(prefix):
        bucket, key = split_s3(prefix)
        s3 = client()

        def listing() -> list[str]:
            out = []
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
                out.extend(f"s3://{bucket}/{obj['Key']}" for obj in page.get("Contents", []))
            return out

        return sorted(s3_call(prefix, "listing", listing))
    path = _local(prefix)
    if path.is_file():
        return [str(path)]
    if not path.is_dir():
        return []
    return sorted(str(p) for p in path.rglob("*") if p.is_file())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _folder_manifest(src: Path) -> dict[str, Any]:
    files = []
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        rel = path.relative_to(src).as_posix()
        if rel == MANIFEST:
            continue
        files.append({"path": rel, "size": path.stat().st_size, "sha256": _sha256(path)})
    return {"version": 1, "files": files}


def is_complete_upload(uri: str) -> bool:
    """True when `uri` (an S3 prefix or a folder) holds a manifest, i.e. its upload finished."""
    return exists(_join(uri, MANIFEST))


def upload_dir(local: str | Path, uri: str, last: tuple[str, ...] = ()) -> None:
    """Copy a local folder to a URI (S3 prefix or local folder), its manifest written last.

    On S3 the old manifest is removed first, so while the objects are replaced the prefix reads
    as incomplete; a failed upload leaves it so. Files named in `last` (a completion marker)
    go just before the manifest. A local target is replaced atomically."""
    src = Path(local)
    if not src.is_dir():
        raise SparringError(f"{local}: no such folder to upload")
    manifest = _folder_manifest(src)
    manifest["files"].sort(key=lambda f: (f["path"] in last, f["path"]))
    body = json.dumps(manifest, indent=1).encode()
    if not is_s3(uri):
        with atomic_dir(_local(uri)) as tmp:
            shutil.copytree(src, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(MANIFEST))
            (tmp / MANIFEST).write_bytes(body)
        return
    from botocore.exceptions import ClientError

    bucket, key = split_s3(uri)
    prefix = key.rstrip("/")
    s3 = client()

    def object_key(rel: str) -> str:
        return f"{prefix}/{rel}" if prefix else rel

    manifest_uri = _join(uri, MANIFEST)
    try:
        s3_call(
            manifest_uri,
            "removing the old manifest",
            lambda: s3.delete_object(Bucket=bucket, Key=object_key(MANIFEST)),
        )
        for entry in manifest["files"]:
            rel = entry["path"]
            s3_call(
                _join(uri, rel),
                "uploading",
                lambda rel=rel: s3.upload_file(str(src / rel), bucket, object_key(rel)),
            )
        s3_call(
            manifest_uri,
            "writing the manifest",
            lambda: s3.put_object(Bucket=bucket, Key=object_key(MANIFEST), Body=body),
        )
    except ClientError as exc:
        raise _client_error(uri, exc) from None


def _read_manifest(uri: str) -> dict[str, Any] | None:
    if not exists(_join(uri, MANIFEST)):
        return None
    try:
        manifest = json.loads(read_text(_join(uri, MANIFEST)))
        files = manifest["files"]
        assert all(isinstance(f["path"], str) and isinstance(f["size"], int) for f in files)
        return manifest
    except (ValueError, KeyError, TypeError, AssertionError):
        raise SparringError(f"{_join(uri, MANIFEST)}: not a readable manifest") from None


def _incomplete(uri: str) -> SparringError:
    return SparringError(
        f"{uri}: incomplete upload (no {MANIFEST}: its writer did not finish), so it is not read"
    )


def _check_file(path: Path, entry: dict[str, Any], uri: str) -> None:
    size = path.stat().st_size
    if size != entry["size"] or (entry.get("sha256") and _sha256(path) != entry["sha256"]):
        raise SparringError(f"{uri}: does not match its manifest ({size} bytes); upload it again")


def download_dir(uri: str, local: str | Path, require_manifest: bool = True) -> None:
    """Copy a folder (S3 prefix or local folder) to a local folder, replacing it atomically.

    With `require_manifest` (the default) only a completed `upload_dir` is read: its manifest's
    files, each checked; objects without a manifest raise "incomplete upload"."""
    dst = Path(local)
    if not is_s3(uri):
        src = _local(uri)
        if not src.is_dir():
            raise SparringError(f"{uri}: no such folder")
        manifest = _read_manifest(str(src))
        if manifest is None and require_manifest:
            raise _incomplete(uri)
        with atomic_dir(dst) as tmp:
            shutil.copytree(src, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(MANIFEST))
            for entry in (manifest or {}).get("files", []):
                _check_file(tmp / entry["path"], entry, _join(uri, entry["path"]))
        return
    from botocore.exceptions import ClientError

    bucket, key = split_s3(uri)
    prefix = key.rstrip("/") + "/" if key else ""
    uris = list_uris(f"s3://{bucket}/{prefix}")
    if not uris:
        raise SparringError(f"{uri}: no objects under this prefix")
    manifest = _read_manifest(f"s3://{bucket}/{prefix}")
    if manifest is None and require_manifest:
        raise _incomplete(uri)
    if manifest is not None:
        entries = manifest["files"]
    else:
        entries = [{"path": split_s3(u)[1][len(prefix) :]} for u in uris]
    s3 = client()
    try:
        with atomic_dir(dst) as tmp:
            for entry in entries:
                rel = entry["path"]
                target = tmp / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                obj_uri = f"s3://{bucket}/{prefix}{rel}"
                s3_call(
                    obj_uri,
                    "downloading",
                    lambda rel=rel, target=target: s3.download_file(
                        bucket, f"{prefix}{rel}", str(target)
                    ),
                )
                if "size" in entry:
                    _check_file(target, entry, obj_uri)
    except ClientError as exc:
        raise _client_error(uri, exc) from None

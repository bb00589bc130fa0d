"""Storage: S3 (boto3) and local paths behind one small API.

Covers: `read_text`/`write_text`, `read_bytes`/`write_bytes`, `exists`, `list_uris`, `upload_dir`,
`download_dir`, for `s3://bucket/key` URIs and plain local paths (or `file://`); and
`atomic_dir`, the crash-safe local folder write (a reader never sees a half-written model,
adapter or checkpoint). The S3 endpoint
comes from `cfg.storage.s3_endpoint` (via `configure(cfg)`) or the `AWS_ENDPOINT_URL` environment
variable (MinIO, moto); boto3 uses standard-mode retries. Missing objects raise SparringError
naming the URI.

Does not cover: KFP artifacts (the launcher moves those) or MLflow artifacts (MLflow does).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sparring.errors import SparringError

_endpoint: str = ""  # set by configure(cfg); AWS_ENDPOINT_URL is the fallback


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


def client():
    """A boto3 S3 client with the configured endpoint and standard-mode retries."""
    import boto3
    from botocore.config import Config

    endpoint = _endpoint or os.environ.get("AWS_ENDPOINT_URL") or None
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        config=Config(retries={"mode": "standard", "max_attempts": 5}),
    )


def _local(uri: str) -> Path:
    return Path(uri[len("file://") :] if uri.startswith("file://") else uri)


def _missing(exc: Exception) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    return code in ("404", "NoSuchKey", "NotFound", "NoSuchBucket")


def read_bytes(uri: str) -> bytes:
    if is_s3(uri):
        from botocore.exceptions import ClientError

        bucket, key = split_s3(uri)
        try:
            return client().get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if _missing(exc):
                raise SparringError(f"{uri}: no such object") from None
            raise SparringError(f"{uri}: S3 error: {exc}") from None
    path = _local(uri)
    if not path.is_file():
        raise SparringError(f"{uri}: no such file")
    return path.read_bytes()


def read_text(uri: str) -> str:
    return read_bytes(uri).decode("utf-8")


def write_bytes(uri: str, data: bytes) -> None:
    if is_s3(uri):
        bucket, key = split_s3(uri)
        client().put_object(Bucket=bucket, Key=key, Body=data)
        return
    path = _local(uri)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_text(uri: str, text: str) -> None:
    write_bytes(uri, text.encode("utf-8"))


def exists(uri: str) -> bool:
    if is_s3(uri):
        from botocore.exceptions import ClientError

        bucket, key = split_s3(uri)
        try:
            client().head_object(Bucket=bucket, Key=key)
            return True
        except ClientError as exc:
            if _missing(exc):
                return False
            raise SparringError(f"{uri}: S3 error: {exc}") from None
    return _local(uri).exists()


def list_uris(prefix: str) -> list[str]:
    """Every object (file) under a prefix (folder), sorted; empty when there is none."""
    if is_s3(prefix):
        bucket, key = split_s3(prefix)
        out = []
        for page in client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
            out.extend(f"s3://{bucket}/{obj['Key']}" for obj in page.get("Contents", []))
        return sorted(out)
    path = _local(prefix)
    if path.is_file():
        return [str(path)]
    if not path.is_dir():
        return []
    return sorted(str(p) for p in path.rglob("*") if p.is_file())


def upload_dir(local: str | Path, uri: str) -> None:
    """Copy a local folder to a URI (S3 prefix or local folder)."""
    src = Path(local)
    if not src.is_dir():
        raise SparringError(f"{local}: no such folder to upload")
    if not is_s3(uri):
        shutil.copytree(src, _local(uri), dirs_exist_ok=True)
        return
    bucket, key = split_s3(uri)
    s3 = client()
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        rel = path.relative_to(src).as_posix()
        s3.upload_file(str(path), bucket, f"{key.rstrip('/')}/{rel}" if key else rel)


def download_dir(uri: str, local: str | Path) -> None:
    """Copy a folder (S3 prefix or local folder) to a local folder; missing raises."""
    dst = Path(local)
    if not is_s3(uri):
        src = _local(uri)
        if not src.is_dir():
            raise SparringError(f"{uri}: no such folder")
        shutil.copytree(src, dst, dirs_exist_ok=True)
        return
    bucket, key = split_s3(uri)
    prefix = key.rstrip("/") + "/" if key else ""
    uris = list_uris(f"s3://{bucket}/{prefix}")
    if not uris:
        raise SparringError(f"{uri}: no objects under this prefix")
    s3 = client()
    for obj_uri in uris:
        obj_key = split_s3(obj_uri)[1]
        target = dst / obj_key[len(prefix) :]
        target.parent.mkdir(parents=True, exist_ok=True)
        s3.download_file(bucket, obj_key, str(target))


@contextmanager
def atomic_dir(out_dir: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling of `out_dir` to fill; when the block succeeds it replaces
    `out_dir` with one rename, and when it fails it is removed and `out_dir` is untouched."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        yield tmp
        if out.exists():
            shutil.rmtree(out)
        os.rename(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)

"""sparring.storage on local paths and on a real S3 endpoint (moto server on loopback)."""

from __future__ import annotations

import pytest

from sparring import storage
from sparring.config import load_config
from sparring.errors import SparringError


def test_local_roundtrip(tmp_path):
    uri = str(tmp_path / "a" / "b.txt")
    assert not storage.exists(uri)
    storage.write_text(uri, "héllo")
    assert storage.exists(uri) and storage.read_text(uri) == "héllo"
    storage.write_bytes(str(tmp_path / "c.bin"), b"\x00\x01")
    assert storage.read_bytes(f"file://{tmp_path}/c.bin") == b"\x00\x01"
    assert storage.list_uris(str(tmp_path)) == sorted([uri, str(tmp_path / "c.bin")])
    assert storage.list_uris(str(tmp_path / "nothing")) == []


def test_local_missing_names_uri(tmp_path):
    with pytest.raises(SparringError, match=r"nope\.txt"):
        storage.read_text(str(tmp_path / "nope.txt"))
    with pytest.raises(SparringError, match="nodir"):
        storage.download_dir(str(tmp_path / "nodir"), tmp_path / "out")


def test_local_dirs(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "x.txt").write_text("x")
    storage.upload_dir(src, str(tmp_path / "dst"))
    storage.download_dir(str(tmp_path / "dst"), tmp_path / "back")
    assert (tmp_path / "back" / "sub" / "x.txt").read_text() == "x"


@pytest.fixture
def bucket(s3_server):
    import boto3

    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket="unit")
    return "s3://unit"


def test_s3_roundtrip(bucket):
    uri = f"{bucket}/dir/one.json"
    assert not storage.exists(uri)
    storage.write_text(uri, '{"a": 1}')
    assert storage.exists(uri)
    assert storage.read_text(uri) == '{"a": 1}'
    storage.write_bytes(f"{bucket}/dir/two.bin", b"\x02")
    assert storage.list_uris(f"{bucket}/dir/") == [
        f"{bucket}/dir/one.json",
        f"{bucket}/dir/two.bin",
    ]
    assert storage.list_uris(f"{bucket}/empty/") == []


def test_s3_missing_object_names_uri(bucket):
    with pytest.raises(SparringError, match=r"s3://unit/missing\.txt: no such object"):
        storage.read_text(f"{bucket}/missing.txt")
    with pytest.raises(SparringError, match="no objects"):
        storage.download_dir(f"{bucket}/nothing-here", "/tmp/never")


def test_s3_dirs(bucket, tmp_path):
    src = tmp_path / "model"
    (src / "nested").mkdir(parents=True)
    (src / "a.json").write_text("{}")
    (src / "nested" / "w.bin").write_bytes(b"123")
    storage.upload_dir(src, f"{bucket}/models/m1")
    assert storage.list_uris(f"{bucket}/models/m1") == [
        f"{bucket}/models/m1/a.json",
        f"{bucket}/models/m1/nested/w.bin",
    ]
    storage.download_dir(f"{bucket}/models/m1", tmp_path / "out")
    assert (tmp_path / "out" / "nested" / "w.bin").read_bytes() == b"123"


def test_endpoint_from_config(s3_server, monkeypatch, bucket):
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    cfg = load_config("configs/smoke.yaml", [f"storage.s3_endpoint={s3_server}"])
    storage.configure(cfg)
    try:
        storage.write_text(f"{bucket}/cfg.txt", "ok")
        assert storage.client().meta.endpoint_url == s3_server
        assert storage.client().meta.config.retries["mode"] == "standard"
    finally:
        storage.configure(load_config("configs/smoke.yaml"))


def test_problems_load_from_s3(bucket):
    from sparring.problems import load_bundled, load_source

    problem = load_bundled()[0]
    import json

    storage.write_text(f"{bucket}/problems/p.json", json.dumps([problem.to_dict()]))
    loaded = load_source(f"{bucket}/problems/")
    assert [p.id for p in loaded] == [problem.id]

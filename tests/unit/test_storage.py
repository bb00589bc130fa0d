"""sparring.storage on local paths and on a real S3 endpoint (moto server on loopback): round
trips, missing objects named, folder uploads whose manifest is written last and downloads that
refuse a prefix without one, atomic local writes and the one-line disk-full error. Outages of
the endpoint itself are the faults tier's (tests/faults)."""

from __future__ import annotations

import json
from pathlib import Path

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
    assert storage.is_complete_upload(str(tmp_path / "dst"))
    storage.download_dir(str(tmp_path / "dst"), tmp_path / "back")
    assert (tmp_path / "back" / "sub" / "x.txt").read_text() == "x"
    (tmp_path / "plain").mkdir()
    with pytest.raises(SparringError, match="incomplete upload"):
        storage.download_dir(str(tmp_path / "plain"), tmp_path / "never")


def test_local_write_replaces_whole_and_leaves_no_temp(tmp_path):
    path = tmp_path / "bank.jsonl"
    storage.write_text(str(path), "old\n")
    storage.write_text(str(path), "new\n")
    assert path.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["bank.jsonl"]


def test_disk_full_is_one_line_naming_the_path(tmp_path):
    """EFBIG under a 1 KiB file-size limit (RLIMIT_FSIZE, in a child process) stands in for a
    full disk here; the faults tier fills a real tmpfs."""
    import subprocess
    import sys

    target = tmp_path / "big.bin"
    storage.write_text(str(target), "previous")
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))\n"
        "from sparring import storage\n"
        "from sparring.errors import SparringError\n"
        "try:\n"
        f"    storage.write_bytes({str(target)!r}, b'x' * 4096)\n"
        "except SparringError as exc:\n"
        "    print(exc)\n"
        "    sys.exit(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    line = done.stdout.strip()
    assert "\n" not in line and line.startswith(f"{target}: file too large"), line
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["big.bin"]


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
        f"{bucket}/models/m1/{storage.MANIFEST}",
        f"{bucket}/models/m1/a.json",
        f"{bucket}/models/m1/nested/w.bin",
    ]
    assert storage.is_complete_upload(f"{bucket}/models/m1")
    storage.download_dir(f"{bucket}/models/m1", tmp_path / "out")
    assert (tmp_path / "out" / "nested" / "w.bin").read_bytes() == b"123"
    assert not (tmp_path / "out" / storage.MANIFEST).exists()


def test_s3_prefix_without_manifest_is_not_read_as_complete(bucket, tmp_path):
    """Objects a dead upload left (no manifest) are refused; a KFP artifact folder, which never
    has one, is read when the caller says so; an object that changed after its manifest was
    written is caught."""
    storage.write_text(f"{bucket}/half/a.json", "{}")
    assert not storage.is_complete_upload(f"{bucket}/half")
    with pytest.raises(SparringError, match=r"s3://unit/half: incomplete upload"):
        storage.download_dir(f"{bucket}/half", tmp_path / "half")
    assert not (tmp_path / "half").exists()
    storage.download_dir(f"{bucket}/half", tmp_path / "kfp", require_manifest=False)
    assert (tmp_path / "kfp" / "a.json").read_text() == "{}"
    src = tmp_path / "src"
    src.mkdir()
    (src / "w.bin").write_bytes(b"1234")
    storage.upload_dir(src, f"{bucket}/changed")
    storage.write_bytes(f"{bucket}/changed/w.bin", b"12")
    with pytest.raises(SparringError, match=r"changed/w\.bin: does not match its manifest"):
        storage.download_dir(f"{bucket}/changed", tmp_path / "changed")


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


def test_a_problems_file_on_s3_that_is_not_utf8_is_one_error_naming_it(bucket):
    from sparring.problems import ProblemError, load_source

    uri = f"{bucket}/latin1/p.jsonl"
    storage.write_bytes(uri, '{"id": "caf\xe9"}\n'.encode("latin-1"))
    with pytest.raises(
        ProblemError, match=r"s3://unit/latin1/p\.jsonl: not UTF-8 text \(byte 11\)"
    ):
        load_source(uri)


def test_write_records_writes_json_lines_to_a_local_path_or_its_string(tmp_path):
    """The phases write their test and frozen-answer files through it, named as strings or Paths."""
    rows = [{"problem_id": "p1", "tests": ["assert f(1) == 1"]}, {"problem_id": "p2", "tests": []}]
    for target in (tmp_path / "a.jsonl", str(tmp_path / "b.jsonl")):
        storage.write_records(target, rows)
        lines = Path(target).read_text().splitlines()
        assert [json.loads(line) for line in lines] == rows

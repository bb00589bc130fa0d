"""Issue 16, point 1: the S3 endpoint goes down in the middle of a phase's upload.

`sparring train --dry-run --mirror s3://…` uploads the datasets and every checkpoint (manifest
last). The endpoint (proxy.py in front of the session's moto server) takes itself down on the
6th checkpoint PUT, i.e. after the first object of the second checkpoint landed:
- short outage (back after 2 s, retry window 30 s): the upload is retried and the run completes;
  every mirrored checkpoint has its manifest and equals the local one and the reference lineage.
- long outage (window 3 s, endpoint down until the run gave up): the run fails with one line
  naming the object's URI; the half-uploaded checkpoint has objects but no manifest, so
  `latest_remote` skips it and `download_dir` refuses it; once the endpoint is back,
  `--resume` in an empty workdir (a new pod) continues from the last finished upload and the
  final bank equals the reference.
"""

from __future__ import annotations

import subprocess
import time

import pytest
from faultlib import (
    ROOT,
    TALLY,
    Proxy,
    bank_loss,
    check_against_reference,
    checkpoint_state,
    env,
    kill_group,
    train_cmd,
)

from sparring import storage
from sparring.errors import SparringError
from sparring.plain_runner import checkpoints as ck

pytestmark = pytest.mark.faults
BUCKET = "faults"
DIE_ON = 6  # 4 PUTs of the materialize checkpoint (3 files + manifest), then 1 of the next


@pytest.fixture(scope="module")
def bucket(s3_server):
    import boto3

    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket=BUCKET)
    return BUCKET


def _run_with_outage(tmp_path, s3_server, prefix: str, window: float, down_for: float | None):
    """Start the mirrored run, let the endpoint die mid-upload, bring it back after `down_for`
    seconds (None: only after the run exited). Returns (completed process, seconds down, proxy)."""
    proxy = Proxy(s3_server)
    proxy.start(die_on_put=DIE_ON, match=f"/{BUCKET}/{prefix}/checkpoints/")
    run_env = env(AWS_ENDPOINT_URL=proxy.url, SPARRING_S3_RETRY_SECONDS=str(window))
    cmd = train_cmd(tmp_path / "run", "--mirror", f"s3://{BUCKET}/{prefix}")
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        died_on = proxy.wait_down(timeout=120)
        down_at = time.monotonic()
        TALLY.inject("s3_outage")
        assert "/checkpoints/" in died_on, died_on
        if down_for is not None:
            time.sleep(down_for)
            proxy.start()
        out, err = proc.communicate(timeout=240)
        if down_for is None:
            proxy.start()
        down = time.monotonic() - down_at if down_for is None else down_for
    finally:
        if proc.poll() is None:
            kill_group(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), down, proxy


def _mirrored(prefix: str) -> dict[str, bool]:
    base = f"s3://{BUCKET}/{prefix}/checkpoints/"
    names = {u[len(base) :].split("/", 1)[0] for u in storage.list_uris(base)}
    return {n: storage.is_complete_upload(f"{base}{n}") for n in sorted(names)}


def test_short_outage_is_retried_and_the_run_completes(tmp_path, s3_server, bucket, reference):
    done, _, proxy = _run_with_outage(tmp_path, s3_server, "short", window=30, down_for=2.0)
    try:
        assert done.returncode == 0, done.stderr[-3000:]
        assert "retrying" in done.stderr  # the outage was met, not missed
        mirrored = _mirrored("short")
        assert sorted(mirrored) == sorted(reference["checkpoints"]) and all(mirrored.values())
        lost = 0
        for name in mirrored:  # every mirrored checkpoint, byte for byte the local one
            got = tmp_path / "back" / name
            storage.download_dir(f"s3://{BUCKET}/short/checkpoints/{name}", got)
            local = tmp_path / "run" / "checkpoints" / name
            files = sorted(p.relative_to(local) for p in local.rglob("*") if p.is_file())
            assert files == sorted(p.relative_to(got) for p in got.rglob("*") if p.is_file())
            lost += sum((local / f).read_bytes() != (got / f).read_bytes() for f in files)
        state = checkpoint_state(tmp_path / "back")
        lost += check_against_reference(state, reference, "s3_outage")
        assert lost == 0
        TALLY.survive("s3_outage")
    finally:
        proxy.stop()


def test_long_outage_fails_in_one_line_and_leaves_nothing_that_reads_complete(
    tmp_path, s3_server, bucket, reference, monkeypatch
):
    done, _, proxy = _run_with_outage(tmp_path, s3_server, "long", window=3, down_for=None)
    try:
        assert done.returncode == 2, done.stderr[-3000:]
        last = done.stderr.strip().splitlines()[-1]
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        assert last.startswith(f"error: s3://{BUCKET}/long/checkpoints/r01-p01-generator/"), last
        assert "unreachable for" in last and "SPARRING_S3_RETRY_SECONDS" in last, last
        mirrored = _mirrored("long")
        assert mirrored == {"r00-p00-materialize": True, "r01-p01-generator": False}, mirrored

        # What a later reader sees, with the endpoint back: only the finished upload.
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        monkeypatch.setenv("SPARRING_S3_RETRY_SECONDS", "10")
        latest = ck.latest_remote(f"s3://{BUCKET}/long")
        lost = 0 if latest and latest[0].endswith("/r00-p00-materialize") else 1
        try:
            storage.download_dir(
                f"s3://{BUCKET}/long/checkpoints/r01-p01-generator", tmp_path / "x"
            )
            lost += 1  # a half-written upload was read as complete
        except SparringError as exc:
            assert "incomplete upload" in str(exc)

        # A new pod: empty workdir, --resume from the mirror.
        resume_env = env(AWS_ENDPOINT_URL=proxy.url, SPARRING_S3_RETRY_SECONDS="30")
        cmd = train_cmd(tmp_path / "pod2", "--resume", "--mirror", f"s3://{BUCKET}/long")
        again = subprocess.run(
            cmd, cwd=ROOT, env=resume_env, capture_output=True, text=True, timeout=300
        )
        assert again.returncode == 0, again.stderr[-3000:]
        assert "r00-p00-materialize is the latest finished checkpoint" in again.stdout
        state = checkpoint_state(tmp_path / "pod2" / "checkpoints")
        lost += check_against_reference(state, reference, "s3_outage")
        final = max(state.values(), key=lambda s: s["index"])["bank"]
        lost += bank_loss(final, reference["final"])
        assert all(_mirrored("long").values()), _mirrored("long")
        assert lost == 0
        TALLY.survive("s3_outage")
    finally:
        proxy.stop()

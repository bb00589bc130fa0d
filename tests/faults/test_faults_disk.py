"""Issue 16, point 4: the disk fills up in the middle of a run.

A real tmpfs of 8 MiB is the output root (mounted in a private mount namespace by disk_full.py:
`unshare -m` as root, `unshare -Urm` otherwise; skipped only where neither is allowed). Once the
first checkpoint is complete, a neighbour fills the file system. The run must stop with one line
naming the path it could not write and saying the disk is full; every checkpoint it leaves is
complete and equal to the reference run's (the one being written when the disk filled is not
there at all); after space is freed, `--resume` finishes with the reference bank.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from faultlib import HERE, ROOT, TALLY, bank_loss, check_against_reference, env

pytestmark = pytest.mark.faults


def _namespace() -> list[str]:
    cmd = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-Urm"]
    probe = subprocess.run([*cmd, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a mount namespace for a small tmpfs: {probe.stderr!r}")
    return cmd


def test_disk_full_is_one_line_and_the_last_checkpoint_survives(tmp_path, reference):
    mount_dir = tmp_path / "mnt"
    mount_dir.mkdir()
    cmd = [*_namespace(), sys.executable, str(HERE / "disk_full.py"), str(mount_dir), "8m"]
    done = subprocess.run(cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    failed, resumed = result["failed"], result["resumed"]
    TALLY.inject("disk_full")

    assert failed["rc"] == 2, failed["stderr"]
    assert "Traceback" not in failed["stderr"], failed["stderr"]
    last = failed["stderr"].strip().splitlines()[-1]
    assert last.startswith(f"error: {result['workdir']}/"), last
    assert "no space left on device while writing" in last, last
    assert "the previous version is intact" in last, last
    left = failed["checkpoints"]
    assert "r00-p00-materialize" in left and len(left) < 7, sorted(left)
    lost = check_against_reference(left, reference, "disk_full")

    assert resumed["rc"] == 0, resumed["stderr"]
    lost += check_against_reference(resumed["checkpoints"], reference, "disk_full")
    assert sorted(resumed["checkpoints"]) == sorted(reference["checkpoints"])
    final = resumed["checkpoints"]["r02-p06-answerer"]["bank"]
    lost += bank_loss(final, reference["final"])
    assert resumed["hidden"] == [], resumed["hidden"]  # no temp folder left to fill the disk
    assert lost == 0
    TALLY.survive("disk_full")

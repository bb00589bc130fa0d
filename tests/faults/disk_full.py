"""The disk-full scenario, run inside a private mount namespace (`unshare -m`, or `unshare -Urm`
without root) so that it can mount a small tmpfs without touching the machine's mounts.

    python disk_full.py MOUNT_DIR SIZE

Mounts a tmpfs of SIZE at MOUNT_DIR and runs `sparring train --dry-run` with its workdir there.
As soon as the first checkpoint is complete, another writer fills the file system (as a
neighbour on a shared disk would); the run then fails wherever its next write lands. The
scenario records the failure, the checkpoints left behind, frees the space, runs `--resume`
and records again. Its last stdout line is one JSON object for the test to judge (the tmpfs
vanishes with the namespace).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from faultlib import ROOT, checkpoint_state, env, train_cmd


def snapshot(work: Path) -> dict:
    ck_root = work / "checkpoints"
    hidden = sorted(p.name for p in ck_root.glob(".*")) if ck_root.is_dir() else []
    return {"checkpoints": checkpoint_state(ck_root), "hidden": hidden}


def main() -> None:
    mount_dir, size = Path(sys.argv[1]), sys.argv[2]
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_dir)], check=True
    )
    work = mount_dir / "run"
    proc = subprocess.Popen(
        train_cmd(work), cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    first_ck = work / "checkpoints" / "r00-p00-materialize" / "COMPLETE"
    while not first_ck.exists() and proc.poll() is None:
        time.sleep(0.005)
    filled = 0
    with open(mount_dir / "filler", "wb") as fh:  # the neighbour
        block = b"\0" * 65536
        try:
            while True:
                fh.write(block)
                fh.flush()
                filled += len(block)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    _, err = proc.communicate(timeout=300)
    failed = {"rc": proc.returncode, "stderr": err[-3000:], "filled": filled, **snapshot(work)}
    os.remove(mount_dir / "filler")
    again = subprocess.run(
        train_cmd(work, "--resume"), cwd=ROOT, env=env(), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    resumed = {"rc": again.returncode, "stderr": again.stderr[-3000:], **snapshot(work)}
    print(json.dumps({"failed": failed, "resumed": resumed, "workdir": str(work)}))


if __name__ == "__main__":
    main()

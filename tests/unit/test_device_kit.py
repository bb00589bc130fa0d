"""benchmarks/device/: the scripts that carry `make bench-gpu` to a lent GPU machine. What runs
there cannot be retried cheaply (15 minutes of device time a session), so what can be checked
here is: they parse, each wheel they fetch is pinned in requirements.lock, and call 2 refuses to
start without its output folder or call 1's part. The whole flow is rehearsed on the CPU by
benchmarks/device/rehearse.sh (minutes; not a unit test)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "benchmarks" / "device"
SCRIPTS = sorted(KIT.glob("*.sh"))


def test_the_kit_has_its_four_scripts_and_each_parses():
    assert [p.name for p in SCRIPTS] == ["bench.sh", "prepare.sh", "rehearse.sh", "stage.sh"]
    for script in SCRIPTS:
        done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert done.returncode == 0, f"{script.name}: {done.stderr}"


def test_every_wheel_prepare_fetches_is_pinned_in_the_lock():
    text = (KIT / "prepare.sh").read_text()
    names = re.search(r"for name in ([^;]+); do", text).group(1).split()
    lock = (ROOT / "requirements.lock").read_text()
    assert "transformers" in names and "trl" in names
    for name in names:
        assert re.search(rf"^{re.escape(name)}==", lock, re.M), f"{name} not in requirements.lock"


@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, "set OUT"), ({"OUT": "/tmp", "REHEARSE": "1", "KIT_TMP": "none"}, "part is missing")],
)
def test_call_two_refuses_to_start_without_what_it_needs(tmp_path, env, expected):
    done = subprocess.run(
        ["bash", str(KIT / "bench.sh")],
        cwd=tmp_path,  # no .gpu-kit here, and KIT_TMP names no folder
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert expected in done.stdout + done.stderr

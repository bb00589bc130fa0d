"""The environment the tests run in is requirements.lock: every package it pins is installed at
exactly that version (torch's local build tag, +cpu or a CUDA one, aside)."""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

LOCK = Path(__file__).resolve().parents[2] / "requirements.lock"


def locked() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_lock_pins_the_stack():
    pins = locked()
    for name in ("torch", "transformers", "trl", "peft", "accelerate", "mlflow", "kfp", "boto3"):
        assert re.fullmatch(r"\d+(\.\d+)+", pins[name]), (name, pins.get(name))


@pytest.mark.skipif(sys.platform != "linux", reason="the lock is resolved for Linux")
def test_installed_versions_are_the_locked_ones():
    mismatched = {}
    for name, version in locked().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            mismatched[name] = (version, "not installed")
            continue
        if installed.split("+")[0] != version:
            mismatched[name] = (version, installed)
    assert not mismatched, f"installed differs from requirements.lock: {mismatched}"

"""Static checks of images/: hadolint, pinned bases, what each image must (not) contain, build.sh.

No image is built here (no container engine on dev/CI machines); build.sh runs against a fake
engine that records its arguments.
"""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.deploy

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "images"

NAMES = ("trainer", "sandbox", "mlx")
BUILD_SH = IMAGES / "build.sh"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def dockerfile(name: str) -> str:
    return (IMAGES / name / "Dockerfile").read_text()


def instructions(name: str) -> list[str]:
    """Dockerfile instructions with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile(name))
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


@pytest.mark.parametrize("name", NAMES)
def test_hadolint(hadolint, name):
    proc = subprocess.run(
        [
            hadolint,
            "--config",
            str(ROOT / ".hadolint.yaml"),
            "--no-color",
            str(IMAGES / name / "Dockerfile"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", NAMES)
def test_base_image_pinned(name):
    froms = [i.split() for i in instructions(name) if i.upper().startswith("FROM ")]
    assert froms, "no FROM"
    for words in froms:
        image = next(w for w in words[1:] if not w.startswith("--"))
        last = image.rsplit("/", 1)[-1]
        assert "@sha256:" in image or ":" in last, f"untagged base {image}"
        tag = last.split(":", 1)[-1]
        assert tag != "latest" and re.search(r"\d+\.\d+", tag), f"tag not exact: {image}"


@pytest.mark.parametrize("name", NAMES)
def test_non_root_and_no_secrets(name):
    lines = instructions(name)
    users = [line.split()[1] for line in lines if line.upper().startswith("USER ")]
    assert users and users[-1].split(":")[0] == "1000", "last USER must be uid 1000"
    assert "WORKDIR /home/sparring" in lines
    for line in lines:
        if line.upper().startswith(("ENV ", "ARG ")):
            assert not re.search(r"(SECRET|PASSWORD|TOKEN|ACCESS_KEY)", line, re.I), line
    assert not any(line.upper().startswith("COPY") and ".env" in line for line in lines)


@pytest.mark.parametrize("name", NAMES)
def test_installs_sparring_from_the_repo(name):
    text = dockerfile(name)
    assert "COPY pyproject.toml README.md LICENSE requirements.lock ./" in text
    assert "COPY src ./src" in text
    assert "bubblewrap" in text


def test_trainer():
    text = dockerfile("trainer")
    assert "ARG WITH_VLLM=0" in text
    assert re.search(r"HF_HOME=/home/sparring/", text)
    assert "pip install --no-cache-dir -c requirements.lock ." in text
    assert "torch.version.cuda" in text  # the build prints which CUDA the locked torch brings


@pytest.mark.parametrize("name", NAMES)
def test_images_install_the_lock(name):
    """Every pip install of a package that requirements.lock pins is constrained by it, so the
    images run the versions `make install` and CI test (vLLM and DeepSpeed, optional build
    arguments absent from the lock, are the exceptions the trainer's Dockerfile explains)."""
    lines = instructions(name)
    assert any(line.upper().startswith("COPY") and "requirements.lock" in line for line in lines), (
        "requirements.lock is not copied in"
    )
    run = " ".join(line for line in lines if line.upper().startswith("RUN "))
    for command in re.split(r"&&|;", run):
        if "pip install" not in command or "--no-deps ." in command:
            continue
        if re.search(r"vllm==|deepspeed==", command):
            continue
        assert "-c requirements.lock" in command, command


def test_sandbox_is_minimal():
    text = dockerfile("sandbox")
    run = " ".join(i for i in instructions("sandbox") if i.upper().startswith("RUN "))
    assert "--no-deps ." in run
    for banned in (
        "curl",
        "wget",
        "gcc",
        "g++",
        "build-essential",
        "torch",
        "transformers",
        "mlflow",
        "boto3",
        "openssh",
        "git ",
    ):
        assert banned not in run, banned
    assert "python:3.11." in text and "-slim" in text
    assert re.search(r"-c requirements\.lock [\w -]*\bkfp\b", run)


def test_mlx_is_arm64():
    first = instructions("mlx")[0]
    assert "--platform=linux/arm64" in first
    assert ".[mlx]" in dockerfile("mlx")  # mlx[cpu] and mlx-lm, at the locked versions
    assert "Metal" in dockerfile("mlx")


# ---------------------------------------------------------------- build.sh


def run_build(args: list[str], path: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["/bin/bash", str(BUILD_SH), *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": path, **env},
    )


def test_build_sh_syntax():
    assert os.access(BUILD_SH, os.X_OK), "images/build.sh must be executable"
    proc = subprocess.run(["bash", "-n", str(BUILD_SH)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_build_sh_without_engine_fails_clearly(tmp_path):
    proc = run_build(["build"], str(tmp_path))
    assert proc.returncode != 0
    assert "no container engine" in proc.stderr and "docker" in proc.stderr


def test_build_sh_rejects_bad_usage(tmp_path):
    assert run_build(["frobnicate"], str(tmp_path)).returncode != 0
    assert run_build(["build", "nosuchimage"], str(tmp_path)).returncode != 0


@pytest.fixture
def fake_engine(tmp_path: Path) -> tuple[str, Path]:
    bindir, log = tmp_path / "bin", tmp_path / "calls.log"
    bindir.mkdir()
    engine = bindir / "podman"
    engine.write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    engine.chmod(0o755)
    return f"{bindir}:/usr/bin:/bin", log


def test_build_sh_builds_all_three(fake_engine):
    path, log = fake_engine
    proc = run_build(["build"], path, REGISTRY="registry.example.com/team/")
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines()
    assert len(calls) == 3
    for name, call in zip(NAMES, calls, strict=True):
        assert call.startswith("build ")
        assert f"-t registry.example.com/team/sparring-{name}:{VERSION}" in call
        assert f"-f {IMAGES / name / 'Dockerfile'}" in call
        assert call.endswith(str(ROOT)), "build context must be the repo root"
    assert "--platform linux/arm64" in calls[2]


def test_build_sh_push_defaults_to_localhost(fake_engine):
    path, log = fake_engine
    proc = run_build(["push", "sandbox"], path)
    assert proc.returncode == 0, proc.stderr
    assert log.read_text().split() == ["push", f"localhost/sparring-sandbox:{VERSION}"]

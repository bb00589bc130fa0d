"""The faults tier (`make test-faults`, marker `faults`): real servers and real processes taken
down, killed or starved of disk while Sparring runs, and what must hold afterwards.

Fixtures: `tally` (the counts behind the closing `FAULTS injected=N survived=N lost=N` line),
`reference` (one uninterrupted small dry run of `sparring train`, the lineage every faulted run
is compared with). The S3 endpoint is the session's moto server (tests/conftest.py) behind
faultlib.Proxy; MLflow is faultlib.MlflowServer, one per test that needs it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import faultlib


@pytest.fixture(scope="session")
def tally() -> faultlib.Tally:
    return faultlib.TALLY


@pytest.fixture(scope="session")
def reference(tmp_path_factory) -> dict:
    return faultlib.reference_run(tmp_path_factory.mktemp("reference") / "run")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if faultlib.TALLY.injected:
        terminalreporter.write_line(faultlib.TALLY.line())

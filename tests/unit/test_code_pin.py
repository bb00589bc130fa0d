"""One run is one code version: a local run hands the code it started at to its phases'
processes, and a phase whose imported package is another refuses (lineage.code_drift,
sparring.phases.table.run_task); a command that files results, run in a checkout whose source
Python does not import, refuses too (lineage.checkout_mismatch). Both failures happened: runs
started in a git worktree imported the main checkout's package through its editable install,
and kfp.local's later phases imported whatever that source held by then."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from sparring import local_run
from sparring.backends import lineage
from sparring.cli.main import main
from sparring.config import load_config


def test_code_drift_only_when_the_run_started_at_other_code():
    here = lineage.code_digest()
    assert lineage.code_drift({}) == ""  # not a local run's phase (a cluster's image is fixed)
    assert lineage.code_drift({lineage.RUN_CODE_ENV: here}) == ""
    why = lineage.code_drift({lineage.RUN_CODE_ENV: "0123456789abcdef"})
    assert f"would run code {here}, but its run started at code 0123456789abcdef" in why


def test_a_phase_process_refuses_code_its_run_did_not_start_at():
    """As kfp.local starts a phase: a new process running the table's row."""
    code = "from sparring.phases.table import run_task; run_task('materialize', {})"
    env = {**os.environ, lineage.RUN_CODE_ENV: "0123456789abcdef"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode != 0
    assert "materialize: this phase would run code" in done.stderr
    assert "its run started at code 0123456789abcdef" in done.stderr


def test_a_local_run_hands_its_code_to_its_phases(tmp_path, monkeypatch):
    cfg = load_config("configs/smoke.yaml", [])
    seen = {}
    # set first so monkeypatch restores the variable's absence: run_local writes os.environ
    monkeypatch.setenv(lineage.RUN_CODE_ENV, "")
    monkeypatch.setattr(local_run, "prepare_local_run", lambda cfg, root, resume: {
        "kfp_run_id": "local-x", "parent_run_id": "p", "code": "c0dec0dec0dec0de"})  # fmt: skip
    monkeypatch.setattr(local_run, "child_summary", lambda cfg, run_id: [])

    def build_pipeline(cfg, local):
        return lambda **_: seen.setdefault("code", os.environ.get(lineage.RUN_CODE_ENV))

    local_run.run_local(cfg, tmp_path, build_pipeline)
    assert seen["code"] == "c0dec0dec0dec0de"  # the state's code, what resume_refusal checked


def _checkout(root: Path, package: Path | None) -> Path:
    target = root / "src" / "sparring"
    if package is None:
        target.mkdir(parents=True)
        (target / "__init__.py").write_text('"""another version"""\n')
    else:
        shutil.copytree(package, target, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_a_checkout_whose_source_is_not_imported_is_named(tmp_path):
    other = _checkout(tmp_path / "other", None)
    why = lineage.checkout_mismatch(other)
    assert f"this checkout's {other / 'src' / 'sparring'} is not the sparring package" in why
    assert f"run with PYTHONPATH={other / 'src'}" in why
    assert lineage.checkout_mismatch(_checkout(tmp_path / "same", lineage.PACKAGE_ROOT)) == ""
    assert lineage.checkout_mismatch(tmp_path) == ""  # no checkout here: nothing to compare


def test_a_results_command_refuses_another_checkouts_code(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(_checkout(tmp_path, None))
    assert main(["precheck", "size-n", "--rows", "answers.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: this checkout's ") and "PYTHONPATH=" in err
    smoke = str(Path(__file__).parents[2] / "configs" / "smoke.yaml")
    assert main(["config", "validate", smoke]) == 0  # reads no code: not refused

"""`sparring run --resume` after the process was killed mid-pipeline: finished tasks come from
kfp.local's cache (no second MLflow child run for them) and the run completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SETS = ["dry_run=true", "name=resume", "data.max_problems=6", "data.humaneval_limit=1"]


def _sparring(tmp_path, *args):
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"}
    cmd = [sys.executable, "-m", "sparring.cli.main", "run", "--config", "configs/smoke.yaml"]
    cmd += [f"--set={s}" for s in SETS] + ["--pipeline-root", str(tmp_path / "out"), *args]
    return cmd, env


@pytest.mark.slow  # two kfp.local runs (~50 s): in CI's slow tier, to keep make test under 15 min
def test_resume_after_kill_reuses_finished_tasks(tmp_path):
    cmd, env = _sparring(tmp_path)
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    cache = tmp_path / "out" / ".sparring" / "resume" / "cache"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if cache.is_dir() and len(list(cache.iterdir())) >= 3:
            break
        time.sleep(0.5)
    assert proc.poll() is None, "the run ended before it could be killed"
    finished_before_kill = len(list(cache.iterdir()))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

    cmd, env = _sparring(tmp_path, "--resume")
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "r3-select" in done.stdout

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["sparring-smoke"], output_format="list")
    by_name: dict[str, list] = {}
    for r in runs:
        by_name.setdefault(r.info.run_name, []).append(r)
    assert len(by_name["r0-materialize"]) == 1, "a task finished before the kill ran again"
    assert len(by_name["r0-init-models"]) == 1
    assert by_name["r3-select"][-1].info.status == "FINISHED"
    assert finished_before_kill >= 3


@pytest.mark.slow  # a kfp.local run that fails (~40 s): CI's slow tier keeps make test under 15 min
def test_failed_task_is_named_in_one_line(tmp_path):
    """A user mistake that only shows inside a task (a model folder that holds no model: one
    that does not exist is refused at the door) ends `sparring run` with one line naming the
    task and the mistake, not kfp.local's traceback."""
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"}
    empty = tmp_path / "model"
    empty.mkdir()
    cmd = [sys.executable, "-m", "sparring.cli.main", "run", "--config", "configs/smoke.yaml"]
    cmd += ["--set=name=failing", f"--set=models.generator.name={empty}"]
    cmd += ["--set=data.max_problems=6", "--pipeline-root", str(tmp_path / "out")]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: task train-generator failed: model folder {empty}:"), last
    assert "Traceback" not in done.stderr

"""Issue 16, point 2: the MLflow server dies while a run is going on.

- Mid-training, back within the wait: a real GRPO phase (train_phase.py: tiny random model,
  8 steps, inside `tracking.phase_run`) logs to a real `mlflow server`; the server is SIGKILLed
  once the first training step reached its database and started again 3 s later (it takes a
  few more to answer). Training goes on; the values logged meanwhile wait in memory and are sent
  when it answers: the database then holds every value the phase logged (every step of the loss
  and reward curves, some of them logged while the server was down), the phase's run and the
  parent run are FINISHED, and the model is saved.
- Down until the end: `sparring run` (kfp.local, dry run, one round) loses its server after the
  first training task. Every later phase still runs to its end and says what it could not log;
  the select task, which must register the champion and end the parent run, fails after the
  wait (3 s here) with one line naming MLflow, and the command's error says the parent run stays
  RUNNING until `--resume`. With the server back, `--resume` reruns only select: the parent run
  ends FINISHED and no run of the experiment is left RUNNING. A new run that replaces an
  abandoned one ends the old parent run as FAILED.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from faultlib import HERE, ROOT, SMOKE, TALLY, MlflowServer, env, kill_group

pytestmark = pytest.mark.faults
STEPS = 4


class Lines:
    """A child's stdout, read line by line in a thread (so the test can wait for a line); its
    stderr goes to a file (`spawn`), so that nothing else reads the pipe."""

    @staticmethod
    def spawn(cmd: list[str], err_file, **kwargs) -> tuple[subprocess.Popen, Lines]:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=err_file, text=True,
            start_new_session=True, **kwargs,
        )  # fmt: skip
        return proc, Lines(proc)

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, proc: subprocess.Popen, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines:
                if text in line:
                    return line
            assert proc.poll() is None or self.thread.is_alive(), f"exited before {text!r}"
            time.sleep(0.05)
        raise AssertionError(f"no {text!r} within {timeout}s: {self.lines[-5:]}")

    @property
    def text(self) -> str:
        self.thread.join(timeout=30)
        return "\n".join(self.lines)


def _ended(proc: subprocess.Popen, out: Lines, err_file) -> tuple[str, str]:
    """The spawned command's stdout lines and stderr, once it has ended (killed if it has not)."""
    if proc.poll() is None:
        kill_group(proc)
    text = out.text
    err_file.close()
    return text, Path(err_file.name).read_text()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One real MLflow server for this module; each test kills it and starts it again."""
    server = MlflowServer(tmp_path_factory.mktemp("mlflow"))
    server.start()
    yield server
    server.kill()


def test_server_killed_mid_training_loses_no_metric(tmp_path, server):
    err_file = open(tmp_path / "stderr.txt", "w+")  # noqa: SIM115 - closed by the test's end
    proc, out = Lines.spawn(
        [sys.executable, str(HERE / "train_phase.py"), str(tmp_path / "work"), str(STEPS)],
        err_file,
        env=env(MLFLOW_TRACKING_URI=server.uri, SPARRING_MLFLOW_WAIT_SECONDS="120"),
    )
    try:
        out.wait_for("PARENT ", proc, timeout=300)
        stepped = (
            "SELECT COUNT(*) FROM metrics m JOIN runs r ON m.run_uuid = r.run_uuid "
            "JOIN experiments e ON r.experiment_id = e.experiment_id "
            "WHERE e.name = 'faults-train' AND r.name = 'r1-train-answerer' AND m.step >= 1"
        )
        deadline = time.monotonic() + 300
        while server.query(stepped)[0][0] == 0:
            assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()[-3000:]
            assert time.monotonic() < deadline, "no training step reached MLflow"
            time.sleep(0.05)
        server.kill()
        TALLY.inject("mlflow_outage")
        # every value the phase had sent before the outage (the database is still; read it)
        stored_at_kill = server.query(stepped.replace(" AND m.step >= 1", ""))[0][0]
        time.sleep(3)
        server.start()
        proc.wait(timeout=600)
    finally:
        text, err = _ended(proc, out, err_file)
    assert proc.returncode == 0, err[-3000:]
    assert "unreachable" in text and "metrics wait in memory" in text, text[-3000:]
    assert "MLflow answers again" in text, text[-3000:]
    result = json.loads(text.strip().splitlines()[-1])
    assert result["unlogged"] == "", result
    assert "sparring_model.json" in result["saved"]
    child_status, parent_status = server.status(result["run_id"]), server.status(result["parent"])
    rows = server.query(
        "SELECT key, step, timestamp FROM metrics WHERE run_uuid = ?", result["run_id"]
    )
    steps = {k: {s for kk, s, _ in rows if kk == k} for k in ("loss", "reward")}
    lost = abs(result["logged"] - len(set(rows)))
    lost += sum(len(set(range(1, STEPS + 1)) - s) for s in steps.values())
    if lost:
        TALLY.lose("mlflow_outage", lost)
    assert (child_status, parent_status) == ("FINISHED", "FINISHED")
    # values logged while the server was down (never a clock): the buffer's first send after
    # the outage had sent more than the database held when the server was killed; the rest of
    # the values went out after it; every one of them is in the database (lost == 0)
    back = re.search(
        r"MLflow answers again after \d+s; buffered values sent \((\d+) so far\)", text
    )
    assert back and int(back[1]) > stored_at_kill, (stored_at_kill, text[-3000:])
    assert text.index("metrics wait in memory") < back.start()
    assert lost == 0, (result, steps)
    TALLY.survive("mlflow_outage")


def _run_cmd(root, *extra: str) -> list[str]:
    cmd = [sys.executable, "-m", "sparring.cli.main", "run", "--config", str(SMOKE)]
    sets = ["dry_run=true", "name=faults-pipe", "rounds=1", "data.max_problems=6"]
    sets += ["data.humaneval_limit=1", "tracking.experiment=faults-pipe"]
    return cmd + [f"--set={s}" for s in sets] + ["--pipeline-root", str(root), *extra]


def test_server_down_until_the_end_fails_select_cleanly_and_resume_finishes(tmp_path, server):
    root = tmp_path / "out"
    err_file = open(tmp_path / "stderr.txt", "w+")  # noqa: SIM115 - closed below
    proc, out = Lines.spawn(
        _run_cmd(root), err_file,
        env=env(MLFLOW_TRACKING_URI=server.uri, SPARRING_MLFLOW_WAIT_SECONDS="3"),
    )  # fmt: skip
    try:
        out.wait_for("r1 train-generator: done", proc, timeout=300)
        server.kill()
        TALLY.inject("mlflow_outage")
        proc.wait(timeout=600)
    finally:
        text, err = _ended(proc, out, err_file)
    assert proc.returncode == 2, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"error: task select failed: MLflow at {server.uri} unreachable"), last
    assert "stays RUNNING until --resume" in last, last
    # training was not lost: every phase after the outage ran to its end
    for phase in ("r1 train-answerer: done", "r2 evaluate: done"):
        assert phase in text, text[-3000:]
    assert "r1 train-answerer: MLflow at" in text and "not logged:" in text, text[-3000:]

    server.start()
    again = subprocess.run(
        _run_cmd(root, "--resume"), cwd=ROOT,
        env=env(MLFLOW_TRACKING_URI=server.uri, SPARRING_MLFLOW_WAIT_SECONDS="60"),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert "train-answerer: start" not in again.stdout  # finished tasks were not rerun
    assert "r2 select: done" in again.stdout, again.stdout[-3000:]
    state = json.loads((root / ".sparring" / "faults-pipe" / "state.json").read_text())
    parent_status = server.status(state["parent_run_id"])
    running = server.query("SELECT name FROM runs WHERE status = 'RUNNING'")
    if parent_status != "FINISHED" or running:
        TALLY.lose("mlflow_outage", 1 + len(running))
    assert parent_status == "FINISHED" and running == [], (parent_status, running)
    _abandoned_parent_is_ended(server, root)
    TALLY.survive("mlflow_outage")


def _abandoned_parent_is_ended(server: MlflowServer, root) -> None:
    """A run killed before its exit task leaves its parent RUNNING; the next run (without
    --resume) ends it as FAILED."""
    import os

    from sparring import local_run, tracking
    from sparring.config import load_config

    cfg = load_config(SMOKE, ["name=faults-abandon", "tracking.experiment=faults-pipe"])
    saved = os.environ.get("MLFLOW_TRACKING_URI")
    os.environ["MLFLOW_TRACKING_URI"] = server.uri
    try:
        first = local_run.prepare_local_run(cfg, root, resume=False)
        second = local_run.prepare_local_run(cfg, root, resume=False)
        tracking.finish_parent_run(cfg, second["parent_run_id"])
    finally:
        if saved is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = saved
    assert server.status(first["parent_run_id"]) == "FAILED"

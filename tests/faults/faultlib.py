"""What the fault tests share: the tally behind the `FAULTS injected=… survived=… lost=…` line,
the `sparring` command line of a small dry run, a restartable S3 front door (proxy.py) and a
restartable MLflow server, and readers of a run's checkpoints and bank.

A fault counts as injected when it happened to a real process or server (a SIGKILL sent, an
endpoint taken down, a disk filled), as survived when everything the guarantee promises was
then checked and held, and `lost` counts what was not: bank entries missing or duplicated,
metric values missing, a torn file, an incomplete checkpoint or upload read as complete, a
latest checkpoint that went backwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the fault scripts run as subprocesses import this module too
    sys.path.insert(0, str(ROOT))
from tests.conftest import free_port, kill_group, wait_for  # noqa: E402  (needs ROOT on sys.path)

HERE = Path(__file__).resolve().parent
SMOKE = ROOT / "configs" / "smoke.yaml"
# A small dry run: materialize, 2 rounds of generator / validate / answerer, 7 checkpoints.
SMALL = ["data.max_problems=6", "data.humaneval_limit=1", "sandbox.workers=1"]


class Tally:
    def __init__(self) -> None:
        self.injected: Counter[str] = Counter()
        self.survived: Counter[str] = Counter()
        self.lost: Counter[str] = Counter()

    def inject(self, kind: str, n: int = 1) -> None:
        self.injected[kind] += n

    def survive(self, kind: str, n: int = 1) -> None:
        self.survived[kind] += n

    def lose(self, kind: str, n: int) -> None:
        self.lost[kind] += n

    def line(self) -> str:
        kinds = " ".join(
            f"{k}={self.injected[k]}/{self.survived[k]}" for k in sorted(self.injected)
        )
        return (
            f"FAULTS injected={sum(self.injected.values())} "
            f"survived={sum(self.survived.values())} lost={sum(self.lost.values())}"
            + (f"  (injected/survived: {kinds})" if kinds else "")
        )


TALLY = Tally()


def env(**extra: str) -> dict[str, str]:
    out = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    out["PYTHONPATH"] = os.pathsep.join(
        p for p in [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")] if p
    )
    out.update(extra)
    return out


def train_cmd(workdir: Path, *args: str) -> list[str]:
    """`sparring train --dry-run` on the small smoke config."""
    cmd = [sys.executable, "-m", "sparring.cli.main", "train", "--config", str(SMOKE)]
    cmd += ["--dry-run", "--workdir", str(workdir)]
    for s in SMALL:
        cmd += ["--set", s]
    return cmd + list(args)


# ---------------------------------------------------------------------------- runs and banks


def read_rows(path: Path) -> list[dict]:
    """Every row of a JSONL file; a torn line raises (json.JSONDecodeError)."""
    text = path.read_text()
    assert not text or text.endswith("\n"), f"{path}: ends mid-line"
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def checkpoint_state(ck_root: Path) -> dict[str, dict]:
    """Per visible checkpoint folder: complete?, phase index, bank rows, models recorded."""
    from sparring.plain_runner import checkpoints as ck

    out: dict[str, dict] = {}
    if not ck_root.is_dir():
        return out
    for p in sorted(ck_root.iterdir()):
        if p.name.startswith("."):
            continue  # a writer's temporary folder: never read
        entry = {"complete": ck.is_complete(p)}
        if entry["complete"]:
            c = ck.load_checkpoint(p)
            entry["index"] = c.index
            entry["bank"] = read_rows(c.bank)
            entry["models_ok"] = all(
                (Path(c.model(role)) / "sparring_model.json").is_file()
                for role in ("answerer", "generator")
                if c.model(role)
            )
        out[p.name] = entry
    return out


def bank_loss(got: list[dict], want: list[dict]) -> int:
    """Entries missing from `got` plus entries it holds twice or that `want` lacks."""
    key = lambda r: (r["problem_id"], r["test"], r["round"])  # noqa: E731
    got_keys = [key(r) for r in got]
    want_keys = [key(r) for r in want]
    missing = len(set(want_keys) - set(got_keys))
    extra = len(got_keys) - len(set(got_keys)) + len(set(got_keys) - set(want_keys))
    return missing + extra


def reference_run(workdir: Path) -> dict:
    """An uninterrupted dry run: per checkpoint its index and bank, and the final bank."""
    done = subprocess.run(
        train_cmd(workdir), cwd=ROOT, env=env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    state = checkpoint_state(workdir / "checkpoints")
    assert len(state) == 7 and all(s["complete"] for s in state.values()), state.keys()
    final = max(state.values(), key=lambda s: s["index"])["bank"]
    assert len(final) >= 5, "the reference run banked too few tests to check a lineage"
    return {"checkpoints": state, "final": final, "workdir": workdir}


def check_against_reference(state: dict[str, dict], ref: dict, kind: str) -> int:
    """Lost items in a run's checkpoints compared with the reference run (and counted)."""
    lost = 0
    for name, entry in state.items():
        if not entry["complete"]:
            lost += 1  # a visible folder without its marker: a torn checkpoint
            continue
        want = ref["checkpoints"][name]
        lost += bank_loss(entry["bank"], want["bank"])
        lost += entry["bank"] != want["bank"]  # order and content: the bank's lineage
        lost += entry["index"] != want["index"]
        lost += not entry["models_ok"]
    if lost:
        TALLY.lose(kind, lost)
    return lost


# ---------------------------------------------------------------------------- servers


class Proxy:
    """The S3 endpoint the code under test sees: proxy.py in front of the moto server."""

    def __init__(self, upstream: str) -> None:
        self.upstream_port = int(upstream.rsplit(":", 1)[1])
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, die_on_put: int = 0, match: str = "") -> None:
        cmd = [sys.executable, str(HERE / "proxy.py"), str(self.port), str(self.upstream_port)]
        if die_on_put:
            cmd += ["--die-on-put", str(die_on_put), "--match", match]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def wait_down(self, timeout: float) -> str:
        """Wait until the proxy took itself down; returns the PUT it died on."""
        assert self.proc is not None
        self.proc.wait(timeout)
        return self.proc.stdout.read().strip()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class MlflowServer:
    """A real `mlflow server` (sqlite on disk, artifacts served by it) that can be SIGKILLed
    and started again on the same port with the same database."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.db = folder / "mlflow.db"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180) -> float:
        """Start it; returns the time it became healthy (time.monotonic())."""
        cmd = [
            str(Path(sys.executable).with_name("mlflow")), "server",
            "--backend-store-uri", f"sqlite:///{self.db}",
            "--artifacts-destination", str(self.folder / "artifacts"),
            "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1",
        ]  # fmt: skip
        log = open(self.folder / "server.log", "a")  # noqa: SIM115 - the server holds it
        self.proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, cwd=self.folder, start_new_session=True
        )
        wait_for(f"{self.uri}/health", timeout, self.proc)
        return time.monotonic()

    def kill(self) -> float:
        """SIGKILL the server and its workers; returns when (time.monotonic())."""
        assert self.proc is not None
        kill_group(self.proc)
        return time.monotonic()

    def query(self, sql: str, *args) -> list[tuple]:
        """Read the server's database directly (works while the server is down)."""
        import sqlite3

        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=10)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()

    def status(self, run_id: str) -> str:
        """The status of a run, from the database."""
        rows = self.query("SELECT status FROM runs WHERE run_uuid = ?", run_id)
        return rows[0][0] if rows else "missing"

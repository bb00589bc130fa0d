"""Issue 16, point 3: processes SIGKILLed while they write checkpoints, the bank or a report.

- The runner: `sparring train --dry-run` (7 phases, a checkpoint after each) is killed over and
  over, half the time at a random one of its file-system changes under the workdir
  (killpoint.py: inside the steps of a write), half the time after a random delay, and resumed
  with `--resume` until it finishes. After every kill: each visible checkpoint folder is
  complete and equals the reference run's (index, models, bank byte for byte), the latest one
  never goes backwards, and a phase's bank output is never torn. At the end the bank equals the
  reference's: no entry lost or duplicated.
- The persisted bank (`select.save_bank`) and the report (`report.write_json` +
  `write_report`), written version after version by writers.py and killed at random moments:
  the bank file is always exactly versions 1..k of the lineage, k never decreasing; report.json,
  report.md and the PNGs are always whole, the Markdown from a version whose report.json was
  already written (each file is replaced atomically; the set of files is not).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faultlib import (
    HERE,
    ROOT,
    SMALL,
    SMOKE,
    TALLY,
    bank_loss,
    check_against_reference,
    checkpoint_state,
    env,
    kill_group,
    read_rows,
)

pytestmark = pytest.mark.faults
SEED = int(os.environ.get("SPARRING_FAULTS_SEED", "16"))
RUNNER_KILLS = int(os.environ.get("SPARRING_FAULTS_KILLS", "20"))
SPREAD = 40  # an event kill strikes within the next 1..SPREAD file-system changes
WRITER_KILLS = {"bank": 16, "report": 6}


def _runner_cmd(n: int, work: Path, count: Path, resume: bool) -> list[str]:
    cmd = [sys.executable, str(HERE / "killpoint.py"), str(n), str(work), str(count), "--"]
    cmd += ["train", "--config", str(SMOKE), "--dry-run", "--workdir", str(work)]
    for s in SMALL:
        cmd += ["--set", s]
    return cmd + (["--resume"] if resume else [])


def _phase_banks_whole(work: Path) -> int:
    """Torn phase outputs (validate's bank.jsonl, metrics.json, summary.json): count."""
    torn = 0
    for path in [*work.glob("r*/bank.jsonl"), *work.glob("r*/metrics.json"), work / "summary.json"]:
        if not path.is_file():
            continue
        try:
            read_rows(path) if path.suffix == ".jsonl" else json.loads(path.read_text())
        except (ValueError, AssertionError):
            torn += 1
    return torn


def test_runner_killed_at_random_points_resumes_to_the_same_bank(tmp_path, reference):
    rng = random.Random(SEED)
    count = tmp_path / "events"
    kills = lost = attempts = mid_write = cycles = 0
    started = time.monotonic()
    while kills < RUNNER_KILLS:  # a cycle: a fresh run, killed and resumed until it finishes
        cycles += 1
        work = tmp_path / f"run{cycles}"
        latest = -1
        while True:
            attempts += 1
            assert attempts < 300, "the runs never finished"
            resume = (work / "checkpoints").is_dir()
            by_event = rng.random() < 0.7
            n = rng.randint(1, SPREAD) if by_event and kills < RUNNER_KILLS else 0
            proc = subprocess.Popen(
                _runner_cmd(n, work, count, resume), cwd=ROOT, env=env(),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                start_new_session=True,
            )  # fmt: skip
            if not by_event and kills < RUNNER_KILLS:
                try:  # a kill after a random delay: anywhere, imports and sandbox included
                    proc.wait(timeout=rng.uniform(0.5, 3.0))
                except subprocess.TimeoutExpired:
                    kill_group(proc)
            err = proc.communicate(timeout=300)[1]
            if proc.returncode == 0:
                break
            assert proc.returncode == -9, err[-2000:]  # killed, never a failure of its own
            kill_group(proc)  # and whatever it had started
            kills += 1
            TALLY.inject("sigkill_runner")
            mid_write += any(p.name.startswith(".") for p in work.rglob(".*"))
            state = checkpoint_state(work / "checkpoints")
            found = check_against_reference(state, reference, "sigkill_runner")
            found += _phase_banks_whole(work)
            indices = sorted(s["index"] for s in state.values() if s["complete"])
            newest = indices[-1] if indices else -1
            found += newest < latest  # the last complete checkpoint never goes backwards
            found += indices != list(range(newest + 1))  # and none before it is missing
            latest = max(latest, newest)
            lost += found
            if not found:
                TALLY.survive("sigkill_runner")
        state = checkpoint_state(work / "checkpoints")
        lost += check_against_reference(state, reference, "sigkill_runner")
        final = max(state.values(), key=lambda s: s["index"])["bank"]
        lost += bank_loss(final, reference["final"])
        summary = json.loads((work / "summary.json").read_text())
        assert len(state) == 7 and summary["n_phases"] == 7
    print(
        f"runner: {kills} kills in {attempts} attempts over {cycles} runs ({mid_write} left a "
        f"writer's temporary file behind), {time.monotonic() - started:.0f}s"
    )
    assert lost == 0


def _writer(mode: str, folder: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "writers.py"), mode, str(folder)], cwd=ROOT, env=env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    line = proc.stdout.readline().strip()
    assert line == "ready", proc.stderr.read()[-2000:]
    return proc


def _png_whole(path: Path) -> bool:
    data = path.read_bytes()
    return data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")


@pytest.mark.parametrize("mode", ["bank", "report"])
def test_bank_and_report_writers_killed_mid_write(tmp_path, mode):
    sys.path.insert(0, str(HERE))
    import writers

    from sparring.evaluation.report import render_markdown

    rng = random.Random(SEED + len(mode))
    last = 0
    lost = 0
    for _ in range(WRITER_KILLS[mode]):
        proc = _writer(mode, tmp_path)
        time.sleep(rng.uniform(0.0, 0.4 if mode == "bank" else 1.5))
        kill_group(proc)
        kind = f"sigkill_{mode}"
        TALLY.inject(kind)
        found = 0
        if mode == "bank":
            path = tmp_path / "persisted" / "bank.jsonl"
            rows = read_rows(path) if path.is_file() else []
            found += rows != writers.bank_version(len(rows))  # lineage: exactly rows 1..k
            found += bank_loss(rows, writers.bank_version(max(last, len(rows))))
            version = len(rows)
        else:
            out = tmp_path / "report"
            saved = out / "report.json"
            version = json.loads(saved.read_text())["version"] if saved.is_file() else 0
            md = out / "report.md"
            if md.is_file():  # whole, and from a version whose report.json was written
                text = md.read_text()
                k = writers.md_version(text) or 0
                found += not 1 <= k <= version
                found += text != render_markdown(writers.report_version(k), writers.IMAGES)
            found += sum(not _png_whole(p) for p in out.glob("*.png"))
        found += version < last  # a version that was complete is never lost
        last = max(last, version)
        if found:
            TALLY.lose(kind, found)
            lost += found
        else:
            TALLY.survive(kind)
    print(f"{mode}: {WRITER_KILLS[mode]} kills, reached version {last}")
    assert last >= 2, "the writer never got going"
    assert lost == 0

"""Recurring training: where a run starts, what it added, and a schedule played on this machine.

A scheduled run (`sparring schedule`, configs/recur.yaml) starts from the champion the run before
registered (init-models) and inherits the bank it persisted (materialize:
sparring.rewards.bank.carry).
This module says so and measures it:

- `start_line`: the run's first line, `START answerer=... bank=...`: the configured base model,
  or champion version k of which registered name and trained from which base, and the banked
  tests waiting at `storage.bank_uri`, by the run that validated them.
- `bank_line`: `LEARN bank size=N inherited=K new=M retired=R` from the phases' MLflow runs.
- `champion_line`: `LEARN champion promoted=yes version=K (NAME)` or `promoted=no (why)`:
  whether the next run starts from this one.
- `vs_start_line`: `LEARN heldout_new_tasks_vs_start base=X final=Y ci95_delta=LO,HI n=TASKS`,
  the final answerer against the run's own start (the evaluate phase measures it).
- `chains` and `gate_line`: whether a schedule's runs continue from the champion, and what the
  start gate (selection.refuse_below_start) does with a run that falls below its start:
  `sparring schedule` and `sparring recur` print it.
- `play`: `sparring recur` / `make recur RUNS=N`: N runs of one config in one MLflow store and
  one bank folder, each continuing from the one before, the way a Kubeflow schedule runs them,
  run k with training_seed + k - 1; then the table of the chain (`chain_table`) that
  docs/cluster-guide.md shows.

Does not cover: the champion's download and refusal (sparring.tracking.registry), the bank's
carry rules (sparring.rewards.bank), the measures (sparring.phases.evaluate.versus_start).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sparring.config import Config
from sparring.errors import SparringError
from sparring.evaluation.learning import VS_START
from sparring.tracking.registry import WRITER_SUFFIX


def _bank_rows(cfg: Config) -> list[dict[str, Any]]:
    from sparring import storage
    from sparring.rewards.bank import keep_tests, parse_rows

    uri = cfg.storage.bank_uri
    if not uri or not storage.exists(uri):
        return []
    return keep_tests(parse_rows(storage.read_text(uri)))


def bank_summary(rows: Sequence[Mapping[str, Any]]) -> str:
    """'N tests (run: n, ...)' or 'none'.

    >>> bank_summary([{"run": "a"}, {"run": "b"}, {"run": "a"}, {}])
    '4 tests (a: 2, b: 1, unrecorded: 1)'
    """
    from sparring.rewards.bank import runs_of

    if not rows:
        return "none"
    return f"{len(rows)} tests (" + ", ".join(f"{k}: {n}" for k, n in runs_of(rows).items()) + ")"


def chains(cfg: Config) -> bool:
    """Whether each scheduled run of `cfg` continues from the champion the run before
    registered: storage.start_fresh off, and the code duel (a game's run starts from its base
    model every time, and promotes by its own rule). Every shipped config that chains has the
    start gate on (tests/unit/test_recurring.py)."""
    return not cfg.storage.start_fresh and not cfg.game.name


def gate_line(cfg: Config) -> str:
    """What the start gate does in a schedule of `cfg`, in one line.

    >>> from sparring.config import from_dict
    >>> gate_line(from_dict({"storage": {"start_fresh": True}}))
    'start gate: n/a, every run starts from the base model (storage.start_fresh: true)'
    """
    s = cfg.selection
    if not chains(cfg):
        why = "a game" if cfg.game.name else "storage.start_fresh: true"
        return f"start gate: n/a, every run starts from the base model ({why})"
    if not s.refuse_below_start:
        return (
            "start gate: off (selection.refuse_below_start: false): a run below its start is "
            "promoted all the same, and the next run starts from it"
        )
    return (
        "start gate: on: a run whose held-out new tasks, sampled again for the gate, fall below "
        f"its start's by more than selection.start_margin ({s.start_margin:.3f}) is not "
        "promoted, and the next run starts from the champion that stands"
    )


def start_line(cfg: Config) -> str:
    """What this run will start from, before it starts (one registry lookup, no download)."""
    base = cfg.model_for("answerer").name
    if cfg.storage.start_fresh:
        return f"START answerer={base} (storage.start_fresh: the base model) bank=none"
    bank = bank_summary(_bank_rows(cfg))
    try:
        from sparring import tracking

        version = tracking.champion_version(cfg)
    except Exception as exc:  # init-models decides; this line only reports
        return f"START answerer=unknown (registry not read: {exc}) bank={bank}"
    if version is None:
        return (
            f"START answerer={base} (no {cfg.selection.registered_model}@"
            f"{cfg.selection.alias} yet: the base model) bank={bank}"
        )
    return (
        f"START answerer={cfg.selection.registered_model}@{cfg.selection.alias} version "
        f"{version['version']} (registered by run {version['run_id']}, trained from "
        f"{version['base'] or 'an unrecorded base'}) bank={bank}"
    )


def bank_line(runs: Sequence[tuple[str, Mapping[str, float]]]) -> str:
    """`LEARN bank size=N inherited=K new=M retired=R` from the phases' MLflow runs (name,
    metrics): materialize's inherited, retired and kept tests, the last validation's bank.

    >>> bank_line([("r00-materialize", {"bank_inherited": 9, "bank_retired": 2, "bank_size": 7}),
    ...            ("r01-validate-tests", {"bank_size": 12})])
    'LEARN bank size=12 inherited=9 new=5 retired=2'
    """
    kept = inherited = retired = None
    size: tuple[int, float] | None = None
    for name, metrics in runs:
        match = re.fullmatch(r"r(\d+)-(.+)", name)
        if not match:
            continue
        round_index, phase = int(match.group(1)), match.group(2)
        if phase == "materialize":
            kept = metrics.get("bank_size")
            inherited = metrics.get("bank_inherited")
            retired = metrics.get("bank_retired")
        elif (
            phase == "validate-tests"
            and "bank_size" in metrics
            and (size is None or round_index >= size[0])
        ):
            size = (round_index, float(metrics["bank_size"]))
    final = size[1] if size else kept
    new = final - kept if final is not None and kept is not None else None

    def text(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.0f}"

    return (
        f"LEARN bank size={text(final)} inherited={text(inherited)} new={text(new)} "
        f"retired={text(retired)}"
    )


def champion_line(
    runs: Sequence[tuple[str, Mapping[str, float]]], registered: str, reason: str = ""
) -> str:
    """`LEARN champion promoted=yes version=K (NAME)`, or `promoted=no` with the selection's
    reason: whether the next scheduled run starts from this one. A writer-only run's select
    (its `writer` metric) registered NAME + WRITER_SUFFIX.

    >>> champion_line([("r2-select", {"promoted": 1.0, "registered_version": 2.0})], "m")
    'LEARN champion promoted=yes version=2 (m)'
    >>> champion_line([("r2-select", {"promoted": 1.0, "registered_version": 1.0,
    ...                               "writer": 1.0})], "m")
    'LEARN champion promoted=yes version=1 (m-writer)'
    >>> champion_line([("r2-select", {"promoted": 0.0})], "m", "no promotable snapshot: gated")
    'LEARN champion promoted=no (no promotable snapshot: gated)'
    """
    select = next((m for name, m in runs if name.endswith("-select")), None)
    if select is None:
        return "LEARN champion promoted=n/a (no select phase ran)"
    if select.get("promoted"):
        version = select.get("registered_version")
        shown = "n/a" if version is None else f"{version:.0f}"
        name = registered + WRITER_SUFFIX if select.get("writer") else registered
        return f"LEARN champion promoted=yes version={shown} ({name})"
    return f"LEARN champion promoted=no ({reason or 'no reason recorded'})"


def vs_start_line(summary: Mapping[str, Any]) -> str:
    """The final answerer against its own start on the held-out new tasks."""
    from sparring.evaluation.learning import gain_line

    return gain_line(VS_START, ((summary.get("gains") or {}).get(VS_START) or {}).get(
        "discriminating"
    ))  # fmt: skip


# ---------------------------------------------------------------- the local schedule
LINE_KEYS = {  # what the table takes from a run's output
    "start": re.compile(r"^START (.*)$"),
    "base": re.compile(r"^LEARN heldout_new_tasks (base=.*)$"),
    "start_gain": re.compile(r"^LEARN heldout_new_tasks_vs_start (base=.*)$"),
    "bank": re.compile(r"^LEARN bank (size=.*)$"),
    "champion": re.compile(r"^LEARN champion (promoted=.*)$"),
}


def parse_run(lines: Sequence[str]) -> dict[str, str]:
    """The table's cells from one run's printed lines (the last of each kind wins)."""
    out: dict[str, str] = {}
    for line in lines:
        for key, pattern in LINE_KEYS.items():
            match = pattern.match(line.strip())
            if match:
                out[key] = match.group(1)
    return out


def _short_start(text: str) -> str:
    """'base smollm2-135m' or 'champion v2 (from smollm2-135m)' from a START line's text.

    >>> _short_start("answerer=sparring-recur@champion version 2 (registered by run ab, trained "
    ...              "from smollm2-135m) bank=3 tests (ab: 3)")
    'champion v2 of smollm2-135m'
    >>> _short_start("answerer=smollm2-135m (no sparring-recur@champion yet) bank=none")
    'base smollm2-135m'
    """
    match = re.search(r"version (\S+) .*trained from ([^)]+)\)", text)
    if match:
        return f"champion v{match.group(1)} of {match.group(2)}"
    model = re.match(r"answerer=(\S+)", text)
    return f"base {model.group(1)}" if model else "n/a"


def _gain_cell(text: str | None) -> str:
    """A table cell from a LEARN line's 'base=B final=F ci95_delta=LO,HI n=N'."""
    if not text:
        return "n/a"
    fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
    before, after = fields.get("base", "n/a"), fields.get("final", "n/a")
    ci = fields.get("ci95_delta", "n/a")
    return f"{before} -> {after}, 95% CI of the gain [{ci}], n={fields.get('n', 'n/a')}"


def _promoted_cell(text: str | None) -> str:
    """'yes, v2' or 'no' from a LEARN champion line's text.

    >>> _promoted_cell("promoted=yes version=2 (sparring-recur)"), _promoted_cell("promoted=no (x)")
    ('yes, v2', 'no')
    """
    if not text:
        return "n/a"
    version = re.search(r"version=(\S+)", text)
    if text.startswith("promoted=yes"):
        return f"yes, v{version.group(1)}" if version else "yes"
    return text.split()[0].split("=", 1)[1]


def chain_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The chain as a markdown table: run, training seed, start, held-out new tasks vs base and
    vs start, whether it registered a champion, bank, minutes."""
    head = (
        "| run | seed | start | held-out new tasks vs base | vs its start | champion | bank "
        "| min |\n|---|---|---|---|---|---|---|---|\n"
    )

    def minutes(r: Mapping[str, Any]) -> str:
        return f"{r['seconds'] / 60:.1f}" if isinstance(r.get("seconds"), (int, float)) else "n/a"

    body = "".join(
        f"| {r.get('name', '?')} | {r.get('training_seed', 'n/a')} | "
        f"{_short_start(r.get('start', ''))} | {_gain_cell(r.get('base'))} | "
        f"{_gain_cell(r.get('start_gain'))} | {_promoted_cell(r.get('champion'))} | "
        f"{r.get('bank', 'n/a')} | {minutes(r)} |\n"
        for r in rows
    )
    return head + body


def play(config: str, runs: int, chain: str | None, sets: Sequence[str]) -> Path:
    """Run `config` `runs` times as one schedule: one MLflow store and one bank under the chain
    folder (new unless `chain` names one to continue), each run a `sparring run` of its own
    process named `<name>-<k>`. Writes chain.md and chain.json there; returns the folder."""
    from sparring.config import load_config

    cfg = load_config(config, list(sets))
    if cfg.storage.start_fresh:
        raise SparringError(
            f"{config}: storage.start_fresh is true, so no run would continue from the one "
            "before; a schedule needs storage.start_fresh: false"
        )
    print(gate_line(cfg), flush=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    folder = Path(chain or Path(cfg.storage.pipeline_root) / "recur" / stamp).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / "chain.json"
    done = json.loads(record.read_text()) if record.is_file() else []
    chained = [
        f"tracking.mlflow_uri=sqlite:///{folder / 'mlflow.db'}",
        f"storage.bank_uri={folder / 'bank.jsonl'}",
        f"storage.pipeline_root={folder / 'outputs'}",
    ]
    for k in range(len(done) + 1, len(done) + runs + 1):
        name = f"{cfg.name}-{k}"
        # a seed of its own: a run after one that was not promoted starts from the same
        # champion, and would otherwise replay it sample for sample
        seed = cfg.training_seed + k - 1
        print(f"\n== recurring run {k} ({name}, training_seed {seed}) in {folder}", flush=True)
        cmd = [sys.executable, "-c", "from sparring.cli.main import main; raise SystemExit(main())"]
        cmd += ["run", "--config", config]
        for item in [*sets, *chained, f"name={name}", f"training_seed={seed}"]:
            cmd += ["--set", item]
        began = time.monotonic()
        lines: list[str] = []
        with subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        ) as proc:  # fmt: skip
            assert proc.stdout is not None
            for line in proc.stdout:
                sys.stdout.write(line)
                lines.append(line)
        if proc.returncode:
            raise SparringError(f"recurring run {k} ({name}) failed (exit {proc.returncode})")
        seconds = round(time.monotonic() - began, 1)
        done.append({"name": name, "training_seed": seed, "seconds": seconds, **parse_run(lines)})
        record.write_text(json.dumps(done, indent=1))
    table = chain_table(done)
    (folder / "chain.md").write_text(table)
    print(f"\n== the chain ({folder}):\n{table}", flush=True)
    return folder

"""A process that writes the persisted test bank or a run report, version after version, until
it is killed: the writes the select and evaluate phases make, through their own functions.

    python writers.py bank FOLDER     # select.save_bank: FOLDER/persisted/bank.jsonl
    python writers.py report FOLDER   # report.write_json + write_report: FOLDER/report/

It prints `ready` once its imports are done, then writes versions 1, 2, 3, ... (starting after
the version it finds, as a resumed phase would). Version v of the bank holds rows 1..v, each
naming the version that added it; version v of the report names itself in its snapshots'
model field. `bank_version`, `report_version` and `IMAGES` let the test recompute any version.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

IMAGES = {
    "Reward and pass rate per round": "curves.png",
    "HumanEval before and after": "humaneval.png",
}


def bank_row(i: int) -> dict:
    return {"problem_id": f"p{i % 7}", "test": f"assert f({i}) == {i * i}", "round": i, "breaks": 1}


def bank_version(v: int) -> list[dict]:
    return [bank_row(i) for i in range(1, v + 1)]


def report_version(v: int) -> dict:
    snap = {
        "round": 1, "humaneval_pass@1": 0.1, "answerer_reward": round(0.001 * v, 6),
        "test_validity": 0.5, "model": f"v{v}",
    }  # fmt: skip
    base = {"round": 0, "base": True, "humaneval_pass@1": 0.05, "model": "base"}
    return {"baseline": base, "snapshots": [snap], "version": v}


def md_version(text: str) -> int | None:
    found = re.search(r"`v(\d+)`", text)
    return int(found.group(1)) if found else None


def main() -> None:
    mode, folder = sys.argv[1], Path(sys.argv[2])
    if mode == "bank":
        from sparring.config import load_config
        from sparring.phases.select import save_bank

        persisted = folder / "persisted" / "bank.jsonl"
        root = Path(__file__).resolve().parents[2]
        cfg = load_config(root / "configs" / "smoke.yaml", [f"storage.bank_uri={persisted}"])
        v = len(persisted.read_text().splitlines()) if persisted.is_file() else 0
        staged = folder / "staged.jsonl"
        print("ready", flush=True)
        while True:
            v += 1
            staged.write_text("".join(json.dumps(r) + "\n" for r in bank_version(v)))
            save_bank(cfg, str(staged))
    elif mode == "report":
        from sparring.evaluation import report

        report.pyplot()  # matplotlib imported before `ready`: kills land in the writes
        out = folder / "report"
        saved = out / "report.json"
        v = json.loads(saved.read_text())["version"] if saved.is_file() else 0
        print("ready", flush=True)
        while True:
            v += 1
            rep = report_version(v)
            report.write_json(rep, out)
            report.write_report(rep, out)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()

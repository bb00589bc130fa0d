"""One real training phase, the way the train-answerer component runs it: GRPO of the answerer on
the tiny random model for STEPS steps, inside `tracking.phase_run`, logging to the MLflow server
named by MLFLOW_TRACKING_URI (TRL's per-step logs arrive through tracking.trainer_callbacks).

    python train_phase.py WORKDIR STEPS

Prints `PARENT <id>` once the parent run exists (the test then watches the server's database),
and at the end one JSON line: the phase's metrics, how many values it handed to tracking
(`logged`), sent, and what it said was not logged; then ends the parent run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from faultlib import SMALL, SMOKE

from sparring import tracking
from sparring.config import load_config
from sparring.phases.answerer import train_answerer
from sparring.phases.materialize import materialize


def main() -> None:
    work, steps = Path(sys.argv[1]), int(sys.argv[2])
    sets = [*SMALL, f"steps.answerer={steps}", "steps.problems_per_phase=2"]
    sets += ["name=faults-train", "tracking.experiment=faults-train"]
    cfg = load_config(SMOKE, sets)
    materialize(cfg, str(work / "data"))
    parent = tracking.start_parent_run(cfg, "faults-train")
    print(f"PARENT {parent}", flush=True)
    with tracking.phase_run(cfg, parent, "train-answerer", 1) as run:
        run.log(
            train_answerer(
                cfg, 1, str(work / "data"), str(work / "data" / "bank.jsonl"), None,
                str(work / "model"),
            )
        )  # fmt: skip
    tracking.finish_parent_run(cfg, parent)
    saved = sorted(p.name for p in (work / "model").iterdir())
    record = {"logged": run.logged, "sent": run.sent, "unlogged": run.unlogged, "saved": saved}
    print(json.dumps({"parent": parent, "run_id": run.run_id, **record}), flush=True)


if __name__ == "__main__":
    main()

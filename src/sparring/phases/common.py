"""What the phases share: seeds, datasets on disk, problem draws.

Covers: `derived_seed` (per round and phase, stable across processes), a phase's planned step
count (`planned_steps`), JSONL lines read (sparring.storage.write_records writes them), the
training problems of a materialized dataset, seeded problem draws and their digest
(`drawn_digest`, recorded with the model so runners can be compared).
Does not cover: any phase (one module each beside this one), the adversarial bank
(sparring.rewards.bank).
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from sparring.config import Config
from sparring.errors import SparringError
from sparring.phases.schedule import planned_phase
from sparring.problems import Problem, read_jsonl


def derived_seed(cfg: Config, round_index: int, phase: str) -> int:
    """A seed for one phase of one round, stable across processes. Runners pass the phase's
    identity (`Phase.name`, e.g. `r01-p03-answerer`) as `phase`, the same in every runner."""
    text = f"{cfg.seed}:{round_index}:{phase}"
    if cfg.training_seed:  # 0 keeps the seeds runs had before training_seed existed
        text += f":t{cfg.training_seed}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def planned_steps(cfg: Config, phase: str, kind: str, round_index: int) -> int:
    """GRPO steps of the `kind` phase labelled `phase`: its count in the plan (1 for an
    alternating pair's), or `steps.<kind>` for a free label (a phase run by hand)."""
    planned = planned_phase(cfg, phase, kind, round_index)
    return planned.steps if planned is not None else int(getattr(cfg.steps, kind))


def drawn_digest(problems: list[Problem]) -> str:
    """A short digest of the problems a phase drew, in draw order (kept in the model's record:
    two runners of one config must draw the same problems in every phase)."""
    text = "\n".join(p.id for p in problems)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_lines(path: str | Path | None) -> list[dict[str, Any]]:
    if not path or not Path(path).is_file():
        return []
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def train_problems(data_dir: str) -> list[Problem]:
    path = Path(data_dir) / "train.jsonl"
    if not path.is_file():
        raise SparringError(f"{path}: missing; run the materialize phase first")
    problems = read_jsonl(path)
    if not problems:
        raise SparringError(f"{path}: no training problems")
    return problems


def draw_problems(cfg: Config, problems: list[Problem], round_index: int, phase: str) -> list:
    """`steps.problems_per_phase` problems drawn with a seed derived from cfg.seed and round."""
    n = cfg.steps.problems_per_phase
    if not n or n >= len(problems):
        return list(problems)
    rng = random.Random(derived_seed(cfg, round_index, phase))
    return rng.sample(problems, n)


def check_shared_beta(cfg: Config) -> None:
    if cfg.topology == "shared" and cfg.grpo.beta != 0.0:
        raise SparringError(
            "grpo.beta: the shared topology trains named adapters and needs beta 0 "
            "(TRL's reference adapter assumes a single 'default' adapter)"
        )

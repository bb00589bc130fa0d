"""The curriculum coach in real answerer phases (tiny-random, real sandbox, real GRPO steps):
the phase draws a family at its coach level, the coach counts the rewards as training goes and
moves the family down after `last_k` zero rewards, the next step trains on the new level (the
sampled group is swapped for one at it), the levels come back in the phase's metrics and in
TRL's per-step metrics, and the next phase continues from the state the model's record keeps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparring.backends.torch import models
from sparring.config import load_config
from sparring.phases.answerer import train_answerer
from sparring.problems import write_jsonl
from sparring.problems.families import generate
from sparring.rewards import code_duel

pytestmark = pytest.mark.integration
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[2]
FAMILY = "digit_ops"
SETS = [
    "coach.enabled=true",
    "coach.start_level=2",
    "coach.last_k=2",  # one group of two completions decides
    "steps.problems_per_phase=0",
    "sandbox.workers=2",
    "grpo.refill_flat_batches=0",  # one reward call per step
]


@pytest.fixture
def seen_levels(monkeypatch):
    """Per reward call (one per step here), the `level` column of the rows scored."""
    calls: list[list[int]] = []
    scored = code_duel.AnswererRewardFn.__call__

    def recording(self, *args, **kwargs):
        calls.append(list(kwargs.get("level", [])))
        return scored(self, *args, **kwargs)

    monkeypatch.setattr(code_duel.AnswererRewardFn, "__call__", recording)
    return calls


def test_coach_moves_a_family_mid_phase_and_the_next_phase_continues(tmp_path, seen_levels):
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(generate(0, 2, [FAMILY], [1, 2]), data / "train.jsonl")
    (data / "bank.jsonl").write_text("")
    cfg = load_config(ROOT / "configs/smoke.yaml", [*SETS, "steps.answerer=2"])
    # tiny-random writes no code: every reward is 0, below coach.failure_threshold
    m = train_answerer(cfg, 1, str(data), str(data / "bank.jsonl"), None, str(tmp_path / "a"))
    assert m["problems"] == 2.0  # the two level-2 instances, drawn at the start level
    assert seen_levels == [[2, 2], [1, 1]]  # step 2 trained on level 1, where the coach moved
    assert m[f"coach_level/{FAMILY}"] == 1.0
    assert m["coach_moves"] == 1.0 and m["coach_swapped_groups"] == 1.0
    assert m[f"trl/coach_level_{FAMILY}"] == 1.0  # logged with every step's metrics
    state = models.read_meta(tmp_path / "a")["coach"]
    assert state["levels"] == {FAMILY: 1} and state["scores"] == {FAMILY: [0.0, 0.0]}

    seen_levels.clear()
    again = load_config(ROOT / "configs/smoke.yaml", [*SETS, "steps.answerer=1"])
    m2 = train_answerer(again, 2, str(data), "", str(tmp_path / "a"), str(tmp_path / "a2"))
    assert m2["problems"] == 2.0 and seen_levels == [[1, 1]]  # drawn at level 1 this time
    assert m2[f"coach_level/{FAMILY}"] == 1.0 and m2["coach_moves"] == 0.0  # the lowest level
    assert models.read_meta(tmp_path / "a2")["coach"]["moves"] == 1

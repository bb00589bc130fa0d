"""Which snapshot of a run is the champion: the promotable one with the best checkpoint score.

Covers: `choose_best` (rewards.checkpoint_score with cfg.selection's weights over the
snapshots the hacking gate did not refuse, and the reason in words). Does not cover: measuring
the snapshots (sparring.evaluation.snapshots), the gate itself (sparring.evaluation.hacking),
registering the champion (sparring.phases.select). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparring import rewards


def choose_best(cfg: Any, report: Mapping[str, Any]) -> tuple[int | None, float, str]:
    """(index of the best promotable snapshot, its score, why) by rewards.checkpoint_score with
    cfg.selection weights; (None, 0.0, reason) when no snapshot is promotable. A missing test
    validity counts as 0."""
    weights = {
        "answerer_reward": cfg.selection.answerer_reward,
        "test_validity": cfg.selection.test_validity,
    }
    snapshots = list(report.get("snapshots", []))
    if not snapshots:
        return None, 0.0, "no snapshots were evaluated"
    best: tuple[int, float] | None = None
    refused = []
    for i, snap in enumerate(snapshots):
        if not snap.get("promotable"):
            why = "; ".join(snap.get("hacking", {}).get("reasons", [])) or "no answerer reward"
            refused.append(f"round {snap.get('round', i)} ({why})")
            continue
        score = rewards.checkpoint_score(
            float(snap.get("answerer_reward") or 0.0),
            float(snap.get("test_validity") or 0.0),
            weights,
        )
        if best is None or score > best[1]:
            best = (i, score)
    if best is None:
        return None, 0.0, "no promotable snapshot: " + ", ".join(refused)
    i, score = best
    reason = (
        f"round {snapshots[i].get('round', i)} scores {score:.4f} = "
        f"{weights['answerer_reward']} * answerer reward + {weights['test_validity']} * validity"
    )
    if refused:
        reason += "; refused: " + ", ".join(refused)
    return i, score, reason

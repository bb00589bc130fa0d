"""Which snapshot of a run is the champion: the promotable one with the best checkpoint score.

Covers: `choose_best` (rewards.checkpoint_score with cfg.selection's weights over the
snapshots the hacking gate did not refuse, and the reason in words) and, with
`selection.refuse_below_start`, the start gate: only the final round's snapshot, the one
measured against the model the run started from, and only when it did not score below that
start on the held-out new tasks (`start_gate`). Does not cover: measuring the snapshots
(sparring.evaluation.snapshots), the gain over the start (sparring.phases.evaluate), the hacking
gate (sparring.evaluation.hacking), registering the champion (sparring.phases.select). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparring import rewards
from sparring.evaluation.learning import VS_START


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
    gated = start_gate(report) if cfg.selection.refuse_below_start else {}
    best: tuple[int, float] | None = None
    refused = []
    for i, snap in enumerate(snapshots):
        if not snap.get("promotable"):
            why = "; ".join(snap.get("hacking", {}).get("reasons", [])) or "no answerer reward"
            refused.append(f"round {snap.get('round', i)} ({why})")
            continue
        if i in gated:
            refused.append(f"round {snap.get('round', i)} ({gated[i]})")
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


def start_gate(report: Mapping[str, Any]) -> dict[int, str]:
    """{snapshot index: why it may not be promoted} under `selection.refuse_below_start`: every
    snapshot but the final round's (only it is measured against the run's start), and the final
    one too when its gain over the start on the held-out new tasks (the LEARN line
    heldout_new_tasks_vs_start, paired over tasks) was not measured or is below 0.

    >>> gain = {"discriminating": {"before": 0.30, "after": 0.25, "delta": -0.05, "n": 40}}
    >>> learning = {"gains": {"heldout_new_tasks_vs_start": gain}}
    >>> start_gate({"snapshots": [{"round": 1}, {"round": 2}], "learning": learning})
    {0: 'not the final round: only it is measured against its start', \
1: 'held-out new tasks 0.300 -> 0.250 (n=40) against its start: below it, and \
selection.refuse_below_start is on'}
    """
    snapshots = list(report.get("snapshots") or [])
    rounds = [i for i, snap in enumerate(snapshots) if not snap.get("label")]
    final = rounds[-1] if rounds else None
    why = {
        i: "not the final round: only it is measured against its start"
        for i in range(len(snapshots))
        if i != final
    }
    if final is None:
        return why
    gain = ((report.get("learning") or {}).get("gains") or {}).get(VS_START) or {}
    measured = gain.get("discriminating") or {}
    if not measured.get("n"):
        why[final] = (
            "its gain over its start on the held-out new tasks was not measured (it needs "
            "data.val_samples > 0), and selection.refuse_below_start is on"
        )
    elif measured["delta"] < 0:
        why[final] = (
            f"held-out new tasks {measured['before']:.3f} -> {measured['after']:.3f} "
            f"(n={measured['n']}) against its start: below it, and "
            "selection.refuse_below_start is on"
        )
    return why

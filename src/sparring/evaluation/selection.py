"""Which snapshot of a run is the champion: the promotable one with the best checkpoint score.

Covers: `choose_best` (rewards.checkpoint_score with cfg.selection's weights over the
snapshots the hacking gate did not refuse, and the reason in words) and, with
`selection.refuse_below_start`, the start gate (`start_gate`): only the final round's
snapshot, the one measured against the model the run started from, and only when its gain over
that start on the held-out new tasks, in the gate's own sample (report["learning"]["gate"]),
is not below -`selection.start_margin`. Does not cover: measuring the snapshots
(sparring.evaluation.snapshots), the gate's sample and the gain over the start
(sparring.phases.evaluate), the hacking gate (sparring.evaluation.hacking), registering the
champion (sparring.phases.select). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparring import rewards
from sparring.evaluation.learning import GATE


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
    selection = cfg.selection
    gated = start_gate(report, selection.start_margin) if selection.refuse_below_start else {}
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


def start_gate(report: Mapping[str, Any], margin: float = 0.0) -> dict[int, str]:
    """{snapshot index: why it may not be promoted} under `selection.refuse_below_start`: every
    snapshot but the final round's (only it is measured against the run's start), and the final
    one too when its gain over its start on the held-out new tasks in the gate's own sample
    (report["learning"]["gate"]["discriminating"], paired over tasks) was not measured or is
    below -`margin` (a tie with -margin passes).

    >>> gain = {"before": 0.30, "after": 0.25, "delta": -0.05, "n": 40}
    >>> report = {"snapshots": [{"round": 1}, {"round": 2}],
    ...           "learning": {"gate": {"discriminating": gain}}}
    >>> start_gate(report)
    {0: 'not the final round: only it is measured against its start', \
1: 'held-out new tasks 0.300 -> 0.250 (n=40, sampled for the gate) against its start: -0.050, \
below -selection.start_margin (0.000)'}
    >>> start_gate(report, margin=0.05)
    {0: 'not the final round: only it is measured against its start'}
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
    gate = (report.get("learning") or {}).get(GATE) or {}
    measured = gate.get("discriminating") or {}
    if not measured.get("n"):
        why[final] = (
            "its gain over its start on the held-out new tasks was not measured ("
            + (gate.get("why") or "it needs data.val_samples > 0 and held-out new tasks")
            + "), and selection.refuse_below_start is on"
        )
    # a tolerance of rounding: a gain of exactly -margin, computed from means, passes
    elif measured["delta"] < -margin - 1e-12:
        why[final] = (
            f"held-out new tasks {measured['before']:.3f} -> {measured['after']:.3f} "
            f"(n={measured['n']}, sampled for the gate) against its start: "
            f"{measured['delta']:+.3f}, below -selection.start_margin ({margin:.3f})"
        )
    return why

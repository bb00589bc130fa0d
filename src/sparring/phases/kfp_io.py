"""What every component does at its edges: its config, its parent run, its KFP metrics.

Covers: `config_from_yaml` (the config a component receives as a YAML string; storage set up
from it), `ensure_parent_run`, the round numbers setup and final phases log under, and
`to_kfp_metrics`. The MLflow child run of a phase is `sparring.tracking.phase_run`.
Does not cover: any phase's work (the modules beside this one).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from sparring import storage, tracking
from sparring.config import Config, from_dict


def config_from_yaml(text: str) -> Config:
    """The Config a component receives as a YAML string parameter."""
    cfg = from_dict(yaml.safe_load(text))
    storage.configure(cfg)
    return cfg


def ensure_parent_run(cfg: Config, parent_run_id: str, kfp_run_id: str) -> str:
    """The given parent run id, or a new parent run tagged with the KFP run id (cluster runs)."""
    if parent_run_id:
        return parent_run_id
    return tracking.start_parent_run(cfg, kfp_run_id or "unknown")


SETUP_ROUND = 0


def final_round(cfg: Config) -> int:
    """The round number under which evaluate and select log (after the last round)."""
    return cfg.rounds + 1


def to_kfp_metrics(artifact, result: dict) -> None:
    """Numeric entries -> a KFP Metrics artifact (metadata) and a JSON file at its path.

    The file matters for kfp.local: its cache treats an entry whose output artifact path does not
    exist as a miss, and `log_metric` alone writes nothing to disk."""
    numeric = {
        str(k): float(v)
        for k, v in (result or {}).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    for key, value in numeric.items():
        artifact.log_metric(key, value)
    Path(artifact.path).parent.mkdir(parents=True, exist_ok=True)
    Path(artifact.path).write_text(json.dumps(numeric, indent=1, sort_keys=True))

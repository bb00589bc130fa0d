"""The init-models phase: the folders the first round starts from.

Covers: pointer folders ("start from this base model") for both roles, or the registered
champion for recurring training. Does not cover: the registry itself (sparring.tracking).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from sparring import backends, progress, tracking
from sparring.backends import lineage
from sparring.config import Config

log = logging.getLogger(__name__)


POINTER_FILE = "sparring_model.json"


def write_pointer(cfg: Config, role: str, out_dir: str) -> dict[str, Any]:
    """A model folder holding only `sparring_model.json`: "start from this base model"."""
    # tuning_mode "base" is what the backends read as "load the base model named here" (a
    # "lora"/"full" value would make them look for adapter or weight files); the run's own
    # mode is kept as `run_tuning_mode`.
    info = {
        "base": cfg.model_for(role).name,
        "pointer": True,
        "role": role,
        "tuning_mode": "base",
        "run_tuning_mode": cfg.tuning_mode,
    }
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / POINTER_FILE).write_text(json.dumps(info, indent=1, sort_keys=True))
    return info


def init_models(cfg: Config, out_answerer: str, out_generator: str, champion: bool) -> dict:
    """Initial model folders. With `champion` (recurring training) the answerer starts from the
    registered champion when there is one; otherwise both are pointers to the base models. The
    answerer's folder records its start (sparring.backends.lineage): every model trained from it
    carries
    the record on to the run's heldout.json."""
    write_pointer(cfg, "generator", out_generator)
    configured = cfg.model_for("answerer").name
    got = None
    if champion and not cfg.storage.start_fresh:
        try:
            base = backends.base_name(cfg, "answerer", None)
            got = tracking.download_champion(cfg, out_answerer, base)
        except tracking.ChampionRefused:
            raise  # another base model's champion: never a silent start over
        except Exception as exc:  # an unreachable registry must not block a fresh start
            log.warning("could not download the champion (%s); starting from the base model", exc)
            got = None
    if got:
        # the run's measures of "base" are the configured model's, not this start's
        progress.say(
            f"init-models: the answerer starts from {got['name']}@{got['alias']} (version "
            f"{got['version']}), registered by an earlier run, not from {configured} "
            "(storage.start_fresh=true starts from the base)"
        )
        loaded = f"models:/{got['name']}@{got['alias']}"
    else:
        write_pointer(cfg, "answerer", out_answerer)
        loaded = configured
    start = lineage.start_record(
        configured, loaded, champion=got, seed=cfg.seed, training_seed=cfg.training_seed,
        folder=out_answerer if got else None,
    )  # fmt: skip
    meta_file = Path(out_answerer) / POINTER_FILE
    meta = json.loads(meta_file.read_text())
    meta_file.write_text(json.dumps({**meta, "start": start}, indent=1, sort_keys=True))
    return {"answerer_from_champion": 1.0 if got else 0.0}

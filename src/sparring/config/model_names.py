"""Whether a config's model names can load here: the door's check, before any phase runs.

Covers: `model_name_problem` (what is wrong with one name, or None) and `check_model_names` (every
model field of a Config: `models.answerer.name`, `models.generator.name`, and `shared_model` and
`game.model` when set). A name loads when it is a built-in (sparring.backends.builtins), an
existing folder, `models:/NAME...` (the MLflow registry), `s3://...`, or a hub id `org/name`
(fetched by the backend, from the hub or its cache); an empty name, a path that does not exist
and a bare word that is none of these are refused.

Does not cover: loading (sparring.backends), or whether a hub id, a registry name or an S3 key
exists: that needs the network and is the loading phase's to say. `load_config` runs it (the
files and `--set`s a user hands in), `from_dict` does not: a task in a pod reads a config the
door has already checked, on a machine whose folders may differ.
"""

from __future__ import annotations

import re
from pathlib import Path

from sparring.config.fields import ConfigError
from sparring.config.schema import Config

# the built-in models (sparring.backends.builtins builds their folders)
BUILTINS = ("tiny-random", "smollm2-135m")
URI_PREFIXES = ("models:/", "s3://")
# a Hugging Face hub id: one organisation (or user) and one repository name
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
LOCAL = (".", "/", "~")  # what the backends read as a path, never as a hub id


def model_name_problem(name: str) -> str | None:
    """What keeps `name` from loading here (one phrase), or None when it can load."""
    kinds = (
        f"a built-in ({', '.join(BUILTINS)}), a model folder, a hub id org/name, "
        "models:/NAME@ALIAS or s3://..."
    )
    if not name.strip():
        return f"empty; name {kinds}"
    if name != name.strip() or any(c.isspace() for c in name):
        return f"{name!r} holds spaces; name {kinds}"
    if name in BUILTINS:
        return None
    for prefix in URI_PREFIXES:
        if name.startswith(prefix):
            return None if name[len(prefix) :].strip("/") else f"{name!r} names no model"
    if Path(name).expanduser().is_dir():
        return None
    if name.startswith(LOCAL):
        return f"{name!r}: no such folder"
    if HUB_ID.fullmatch(name):
        return None
    return f"{name!r} is not {kinds} (no such folder here)"


def check_model_names(cfg: Config) -> None:
    """ConfigError naming the first model field whose name cannot load here."""
    fields = {
        "models.answerer.name": cfg.models.answerer.name,
        "models.generator.name": cfg.models.generator.name,
        "shared_model": cfg.shared_model,
        "game.model": cfg.game.model,
    }
    for field, name in fields.items():
        if field in ("shared_model", "game.model") and not name:
            continue  # empty: the other fields' model (checked above)
        problem = model_name_problem(name)
        if problem:
            raise ConfigError(f"{field}: {problem}")

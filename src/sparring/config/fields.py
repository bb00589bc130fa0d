"""The field helper and the config's error: what every section module builds its fields with.

Covers: `ConfigError` (a user mistake, one line naming the field and the fix) and `doc_field`, a
dataclass field carrying its one-line doc and numeric bounds (`ge`, `le`, `gt`), which the
validator (sparring.config.validate) and the reference (sparring.config.reference) read.

Does not cover: the sections themselves (sparring.config.training, .problems, .infra, .schema),
checking values against the bounds (sparring.config.validate).
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

from sparring.errors import SparringError


class ConfigError(SparringError, ValueError):
    """A user mistake in a config: the message is one line naming the field and the fix."""


def doc_field(default: Any, doc: str, *, ge: float | None = None, le: float | None = None, gt=None):
    """A dataclass field with a doc string and numeric bounds, read by the validator."""
    meta = {"doc": doc, "ge": ge, "le": le, "gt": gt}
    if isinstance(default, (list, dict)) or dataclasses.is_dataclass(default):
        factory = (lambda d=default: _copy(d)) if not isinstance(default, type) else default
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def _copy(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return dataclasses.replace(value)

"""Validation of raw config data against the schema: each value converted to its field's type
(Literal choices, lists, mappings, nested sections, bool, int, float, str) and checked against
its bounds, unknown keys refused with the closest known one.

Covers: `build_section` (a mapping into a section dataclass, recursively) and the one-line
errors that name the field's key path and what is allowed.

Does not cover: checks that involve more than one field (sparring.config.checks), reading files
and `--set` (sparring.config.load).
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
import typing
from typing import Any, Literal

from sparring.config.fields import ConfigError


def _convert(value: Any, tp: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            shown = ", ".join(repr(a) for a in allowed)
            raise ConfigError(f"{path}: {value!r} is not allowed; use one of {shown}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{path}: expected a list, got {type(value).__name__} {value!r}")
        (item_tp,) = typing.get_args(tp)
        return [_convert(v, item_tp, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping, got {type(value).__name__}")
        key_tp, val_tp = typing.get_args(tp)
        return {
            _convert(k, key_tp, f"{path}"): _convert(v, val_tp, f"{path}.{k}")
            for k, v in value.items()
        }
    if origin in (types.UnionType, typing.Union):
        raise TypeError(f"unions are not supported in the schema ({path})")
    if dataclasses.is_dataclass(tp):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping of fields, got {value!r}")
        return build_section(tp, value, path)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, str):  # PyYAML reads 1e-3 (no dot) as a string
            with contextlib.suppress(ValueError):
                value = float(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if value is None:
            return ""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(f"{path}: expected a string, got {value!r}")
        return str(value)
    raise TypeError(f"unsupported schema type {tp!r} at {path}")


def _check_bounds(value: Any, meta: typing.Mapping[str, Any], path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    ge, le, gt = meta.get("ge"), meta.get("le"), meta.get("gt")
    if ge is not None and value < ge:
        raise ConfigError(f"{path}: {value!r} is too small; must be >= {ge}")
    if gt is not None and value <= gt:
        raise ConfigError(f"{path}: {value!r} is too small; must be > {gt}")
    if le is not None and value > le:
        raise ConfigError(f"{path}: {value!r} is too large; must be <= {le}")


def build_section(cls: type, data: dict[str, Any], prefix: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        name = str(key) if str(key).isprintable() else repr(str(key))  # one line, always
        path = f"{prefix}.{name}" if prefix else name
        if key not in fields:
            import difflib

            close = difflib.get_close_matches(str(key), fields, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(fields)}"
            where = f"in '{prefix}'" if prefix else "at the top level"
            raise ConfigError(f"{path}: unknown key {where}{hint}")
        converted = _convert(value, hints[key], path)
        _check_bounds(converted, fields[key].metadata, path)
        kwargs[key] = converted
    return cls(**kwargs)

"""From a YAML file and `--set key.path=value` overrides to a validated Config, and back to YAML.

Covers: `read_yaml` (errors name the file and, for syntax, the line; an empty file is refused),
`parse_override` and `apply_overrides` (values read as YAML, applied before validation),
`from_dict` (schema, then cross-field checks), `load_config` (all of it, and the door's check
that each model name can load here; an error names the `--set` that set the field it is about,
else the file), `dump_yaml` (the resolved config, keys in schema order).

Does not cover: the schema (sparring.config.schema and its sections), the checks themselves
(sparring.config.validate, .checks), the CLI around it (sparring.cli.config).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sparring.config.checks import check_cross_fields
from sparring.config.fields import ConfigError
from sparring.config.model_names import check_model_names
from sparring.config.schema import Config, to_dict
from sparring.config.validate import build_section
from sparring.errors import read_user_text


def from_dict(data: dict[str, Any] | None) -> Config:
    """Validate a plain mapping into a Config; raises ConfigError with a one-line message."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("config: the top level must be a mapping of keys to values")
    cfg = build_section(Config, data, "")
    check_cross_fields(cfg)
    return cfg


def parse_override(text: str) -> tuple[list[str], Any]:
    """Parse `key.path=value`; the value is read as YAML (so 3, true, [a, b] keep their type)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r}: expected key.path=value, e.g. --set rounds=3")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key.strip().split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply `key.path=value` overrides to raw config data (before validation)."""
    for text in overrides:
        path, value = parse_override(text)
        node = data
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"--set {_shown(text)}: '{part}' is not a section")
            node = child
        node[path[-1]] = value
    return data


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a config file into raw data; errors name the file and, for syntax, the line."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{path}: no such config file")
    try:
        data = yaml.safe_load(read_user_text(p, ConfigError))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown line"
        raise ConfigError(f"{path}: YAML syntax error at {line}: {exc.problem}") from None
    except yaml.YAMLError as exc:  # e.g. a control character: one line, not PyYAML's three
        raise ConfigError(f"{path}: YAML error: {' '.join(str(exc).split())}") from None
    if data is None:  # empty, or comments only: almost surely not the file meant
        raise ConfigError(
            f"{path}: empty config file; give at least one key (e.g. name: my-run), or leave "
            "out --config for the embedded defaults"
        )
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    return data


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """Load, override and validate a config file (no file: the embedded defaults), and check
    that its model names can load here. An error about a field a `--set` gave names that
    `--set`; any other names the file."""
    data = read_yaml(path) if path else {}
    data = apply_overrides(data, overrides or [])
    try:
        cfg = from_dict(data)
        check_model_names(cfg)
    except ConfigError as exc:
        raise ConfigError(f"{_blamed(str(exc), overrides or [], path)}{exc}") from None
    return cfg


def _blamed(message: str, overrides: list[str], path: str | Path | None) -> str:
    """The prefix naming where the field of `message` (`key.path: ...`) came from: the last
    `--set` whose key path it lies on (either within the other), else the file."""
    field = message.split(":", 1)[0].split("[", 1)[0].split(".")
    for text in reversed(overrides):
        key = text.partition("=")[0].strip().split(".")
        if field[: len(key)] == key or key[: len(field)] == field:
            return f"--set {_shown(text)}: "
    return f"{path}: " if path else ""


def _shown(text: str) -> str:
    """An override as an error quotes it: as typed, or quoted with its escapes where it holds a
    newline or another unprintable character (an error stays one line)."""
    return text if text.isprintable() else repr(text)


def dump_yaml(cfg: Config) -> str:
    """The resolved config as YAML, keys in schema order."""
    return yaml.safe_dump(to_dict(cfg), sort_keys=False, default_flow_style=False)

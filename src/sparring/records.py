"""Records from JSON or JSON Lines, read one way by every command and loader (problems files,
`sparring reward`'s solutions, `sparring infer`'s problems, HumanEval samples): whichever the
file holds, whatever its name ends in.

Covers: `parse_records` (text to (label, record) pairs: a JSON list, an object holding the list
under `key`, a single object, or one JSON value per line; labels `FILE[i]` or `FILE:LINE` for
error messages) and `read_records` (the same from a file a user named, refusing a missing one).

Does not cover: what a record must hold (each caller checks its own and names the label).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparring.errors import SparringError, read_user_text


def parse_records(
    text: str, where: str, key: str = "", error: type[SparringError] = SparringError
) -> list[tuple[str, Any]]:
    """The records of `text` with a label each. The whole text is read as one JSON document
    first: a list gives its items, an object holding a list under `key` that list, any other
    object one record (labelled FILE:LINE, as a JSON Lines record is). When the first value is
    followed by more (JSON Lines), each non-blank line is one record. Blank text: no records.
    Not JSON: `error` naming `where` and the line."""
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if not exc.msg.startswith("Extra data"):
            raise error(f"{where}:{exc.lineno}: invalid JSON: {exc.msg}") from None
        return _lines(text, where, error)
    if isinstance(data, dict) and key and key in data:
        data = data[key]
        if not isinstance(data, list):
            raise error(f"{where}: '{key}' must be a list")
    if isinstance(data, list):
        return [(f"{where}[{i}]", record) for i, record in enumerate(data)]
    # one object: one JSON Lines record (or a one-record file), named by the line it starts on
    first = next(n for n, line in enumerate(text.splitlines(), 1) if line.strip())
    return [(f"{where}:{first}", data)]


def _lines(text: str, where: str, error: type[SparringError]) -> list[tuple[str, Any]]:
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((f"{where}:{n}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise error(f"{where}:{n}: invalid JSON: {exc.msg}") from None
    return records


def read_records(
    path: str | Path, key: str = "", error: type[SparringError] = SparringError, what: str = "file"
) -> list[tuple[str, Any]]:
    """`parse_records` of a file a user named; a missing or unreadable one is `error` naming it
    (`what` says what it should have been, e.g. "problems file")."""
    if not Path(path).is_file():
        raise error(f"{path}: no such {what}")
    return parse_records(read_user_text(path, error), str(path), key, error)

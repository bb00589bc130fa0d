"""Joining the parts of one `precheck select` split by families (issue 84): the sampling runs on
one core a process, so a study samples its tasks in two processes, each with `--families` a
part and the same `--per-family`, and joins their files into the one rows file every later
step reads (`--reuse` adds each writer seed to it; `select-report` scores it).

A part is what `select --out DIR` wrote: its select.json record ({"settings", "timing"}) and
its rows. The parts must be one command apart from their families: the same settings (seed,
levels, answerer, N, K, k, completions, instances a family, sources, held-out filter and its
training set), disjoint families and disjoint instances. The joined settings name every
family (the parts' in order), the held-out filter's counts summed per level (its tasks counted
from the joined rows), and the joined record keeps each part's timing and what it joined.

Covers: `join_parts`. Does not cover: reading and writing the files (sparring.cli.precheck),
the sampling (sparring.experiments.selection_rows). Imports no framework.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# settings that name the part, not the command: the families and what the filter kept of them
PART_SETTINGS = ("families", "heldout")


def join_parts(
    records: Sequence[Mapping[str, Any]],
    rows: Sequence[Sequence[Mapping[str, Any]]],
    labels: Sequence[str],
) -> tuple[dict[str, Any], list[Mapping[str, Any]]]:
    """(the joined select.json record, the joined rows) of parts `records[i]` with `rows[i]`,
    named `labels[i]` in errors and in the record; a ValueError in one line when they are not
    parts of one command."""
    if len(records) < 2:
        raise ValueError("join needs two or more parts (one --part each)")
    first = records[0]["settings"]
    for label, record in zip(labels[1:], records[1:], strict=True):
        settings = record["settings"]
        for key in sorted(set(first) | set(settings)):
            if key in PART_SETTINGS:
                continue
            if (theirs := settings.get(key)) != (ours := first.get(key)):
                raise _not_a_part(label, f"its {key} is {theirs!r}, not {ours!r}")
        if _filter_setup(settings) != _filter_setup(first):
            raise _not_a_part(label, "its held-out filter (or its training set) differs")
    families: list[str] = []
    for label, record in zip(labels, records, strict=True):
        if shared := set(families) & set(record["settings"]["families"]):
            raise _not_a_part(label, f"its families {sorted(shared)} are in an earlier part")
        families += record["settings"]["families"]
    joined_rows: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    for label, part in zip(labels, rows, strict=True):
        ids = [str(r["meta"].get("id")) for r in part]
        if shared_ids := sorted(seen & set(ids)):
            raise _not_a_part(label, f"its instances {shared_ids[:2]} are in an earlier part")
        seen |= set(ids)
        joined_rows += part
    settings = {**first, "families": families}
    if first.get("heldout", {}).get("filter"):
        settings["heldout"] = {**first["heldout"], "levels": _levels(records, joined_rows)}
    record = {
        "settings": settings,
        "timing": {"parts": [dict(r.get("timing", {})) for r in records]},
        "joined": list(labels),
    }
    return record, joined_rows


def _not_a_part(label: str, why: str) -> ValueError:
    return ValueError(f"{label}: not a part of the same select command as the first ({why})")


def _filter_setup(settings: Mapping[str, Any]) -> tuple[Any, Any]:
    heldout = settings.get("heldout", {})
    return heldout.get("filter"), heldout.get("training")


def _levels(
    records: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """The filter's counts per level summed over the parts; its tasks counted from `rows`."""
    levels: dict[str, dict[str, int]] = {}
    for record in records:
        for level, counts in record["settings"]["heldout"]["levels"].items():
            into = levels.setdefault(level, {"drawn": 0, "dropped": 0, "kept": 0})
            for key in ("drawn", "dropped", "kept"):
                into[key] += int(counts[key])
    for level, into in levels.items():
        into["tasks"] = len({r["task"] for r in rows if str(r["meta"].get("level")) == level})
    return levels

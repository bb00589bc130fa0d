"""Where a rerun differs from a filed run: its LEARN lines, line by line.

Covers: `learn_lines` (the LEARN lines of a text, keyed by their measure: the first word after
`LEARN`), `differences` (every measure of either side, same or not, in the filed run's order,
then the rerun's new ones) and `report_lines` (what `sparring rerun` prints). A model registry's
version number (`version=N`, the champion line) is not compared: it counts the registrations
its store saw before, so a rerun into the same store gets another whatever it computed; the
report shows both. Pure: plain strings in and out.
Does not cover: running the rerun (sparring.cli.rerun) or what a difference means.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

_REGISTRY_VERSION = re.compile(r"\bversion=\d+")


def _measured(values: str | None) -> str | None:
    """`values` with a registry version number blanked: what a rerun must repeat."""
    return None if values is None else _REGISTRY_VERSION.sub("version=*", values)


class Difference(NamedTuple):
    measure: str
    filed: str | None  # the filed line's values; None: the filed run has no such line
    rerun: str | None

    @property
    def same(self) -> bool:
        if self.measure != "champion":  # the one line that names a registry version
            return self.filed == self.rerun
        return _measured(self.filed) == _measured(self.rerun)


def learn_lines(text: Iterable[str] | str) -> dict[str, str]:
    """{measure: the rest of its line} of every `LEARN <measure> ...` line, in order; a measure
    printed twice keeps its last line, as the last is the run's final word.

    >>> learn_lines("x\\nLEARN bank size=3 new=3\\nLEARN task_overlap 0\\n")
    {'bank': 'size=3 new=3', 'task_overlap': '0'}
    """
    rows = text.splitlines() if isinstance(text, str) else list(text)
    out: dict[str, str] = {}
    for row in rows:
        words = row.strip().split(None, 2)
        if len(words) >= 2 and words[0] == "LEARN":
            out[words[1]] = words[2] if len(words) > 2 else ""
    return out


def differences(filed: dict[str, str], rerun: dict[str, str]) -> list[Difference]:
    """One Difference per measure of either side: the filed run's order, then the rerun's new."""
    names = [*filed, *(m for m in rerun if m not in filed)]
    return [Difference(m, filed.get(m), rerun.get(m)) for m in names]


def report_lines(diffs: list[Difference]) -> list[str]:
    """`RERUN same <measure>` or `RERUN differs <measure>` with both sides, then a summary.

    >>> report_lines(differences({"a": "1", "b": "2"}, {"a": "1", "b": "3"}))[1:]
    ['RERUN differs b: filed 2 | rerun 3', 'RERUN 1 of 2 LEARN lines differ']
    >>> r = report_lines(differences({"champion": "version=3"}, {"champion": "version=5"}))
    >>> r[0]
    'RERUN same champion: version=3 (rerun: version=5, a registry counter, not compared)'
    >>> r[1]
    'RERUN 0 of 1 LEARN lines differ'
    """
    out = []
    for d in diffs:
        if d.same and d.filed != d.rerun:
            counter = ", ".join(_REGISTRY_VERSION.findall(d.rerun or ""))
            out.append(f"RERUN same {d.measure}: {d.filed} (rerun: {counter}, a registry counter, "
                       "not compared)")  # fmt: skip
        elif d.same:
            out.append(f"RERUN same {d.measure}: {d.filed}")
        else:
            filed = "(no line)" if d.filed is None else d.filed
            rerun = "(no line)" if d.rerun is None else d.rerun
            out.append(f"RERUN differs {d.measure}: filed {filed} | rerun {rerun}")
    changed = sum(not d.same for d in diffs)
    out.append(f"RERUN {changed} of {len(diffs)} LEARN lines differ")
    return out

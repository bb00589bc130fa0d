"""heldout.json, the per-problem held-out file every run's evaluate phase writes, as one typed
record that its writer and every reader share.

Covers: `Heldout` (the record: per held-out set, per problem, [base, final] of the run's own
measure and of the other stored measures, each problem's task key, the answerer reward, the
seed, the config digest, the run's arm fields, its start record and code version), its `load`,
`save`, `from_dict` (checked: a ValueError naming the file and the field) and `to_dict` (what
the file holds, key for key: every heldout.json filed in docs/results, formats 1 to 3, comes back
as it was read), `set_pairs` (one set in one measure), `heldout_record` (what the evaluate phase
writes) and `merged_tasks` (the task keys of several files, which must agree).
Does not cover: pairing and pooling two runs' files (sparring.evaluation.learning), where a run
started (sparring.backends.lineage), the study (sparring.experiments.study). Pure: json and
dataclasses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from sparring.atomic import write_file

HELDOUT_FILE = "heldout.json"  # per set, per problem, base and final: logged by evaluate
HELDOUT_FORMAT = 3  # 3: with start and code; 2: config_digest, seed and tasks; 1: reward, sets
# the measures heldout.json keeps besides its own: every test passed, the share among answers
# that define the asked-for function (a problem without such an answer before and after is left
# out) and the definition rate: what a study reads beyond format
STORED_MEASURES = ("strict", "defining", "defines")
OWN_MEASURE = "discriminating"  # a file that names no `measure` holds this one

Pairs = dict[str, list[float]]  # {problem id: [base, final]}


def _pairs(name: str, where: str, value: Any) -> Pairs:
    """One held-out set's {problem id: [base, final]}, checked."""
    if not isinstance(value, Mapping):
        raise ValueError(
            f"{name}: {where} is {type(value).__name__}, not {{problem: [base, final]}}"
        )
    out: Pairs = {}
    for pid, pair in value.items():
        numbers = isinstance(pair, Sequence) and not isinstance(pair, str) and len(pair) == 2
        if not numbers or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair
        ):
            raise ValueError(f"{name}: problem {pid!r} has {pair!r}, not [base, final]")
        out[str(pid)] = [float(pair[0]), float(pair[1])]
    return out


def _sets(name: str, where: str, value: Any) -> dict[str, Pairs]:
    """{set: {problem id: [base, final]}}, checked."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{name}: {where} is {type(value).__name__}, not {{set: pairs}}")
    return {str(s): _pairs(name, f"set {s!r}", p) for s, p in value.items()}


def _strings(name: str, key: str, value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"{name}: '{key}' is {type(value).__name__}, not a mapping of strings")
    return {str(k): str(v) for k, v in value.items()}


@dataclass(frozen=True)
class Heldout:
    """One run's heldout.json. `sets`: {set: {problem id: [base, final]}} in `measure` (None in
    a file of format 1: the discriminating share); `measures`: the same for STORED_MEASURES;
    `tasks`: {problem id: task key}; `arm`: {config field: value} of the arm fields
    (sparring.evaluation.arms.ARM_FIELDS); `start`: where its answerer started
    (sparring.backends.lineage.start_record); `code`: the code version that evaluated it. A field an
    older format lacks is None."""

    sets: dict[str, Pairs]
    reward: str | None = None
    format: int | None = None
    config_digest: str | None = None
    seed: int | None = None
    measure: str | None = None
    tasks: dict[str, str] | None = None
    arm: dict[str, str] | None = None
    measures: dict[str, dict[str, Pairs]] | None = None
    start: dict[str, Any] | None = None
    code: str | None = None

    @classmethod
    def from_dict(cls, data: Any, name: str = HELDOUT_FILE) -> Heldout:
        """The record of a parsed heldout.json; ValueError naming `name` and the field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{name}: not a JSON object; is it a run's heldout.json?")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"{name}: unknown field {unknown[0]!r} (a heldout.json holds "
                f"{', '.join(sorted(known))})"
            )
        sets = data.get("sets")
        if not isinstance(sets, Mapping):
            raise ValueError(f"{name}: no 'sets' in it; is it a run's heldout.json?")
        version = data.get("format")
        if version is not None and (not isinstance(version, int) or version > HELDOUT_FORMAT):
            raise ValueError(
                f"{name}: format {version!r}: this code reads formats 1 to {HELDOUT_FORMAT}; "
                "update sparring"
            )
        measures = data.get("measures")
        if measures is not None and not isinstance(measures, Mapping):
            raise ValueError(f"{name}: 'measures' is {type(measures).__name__}, not a mapping")
        start = data.get("start")
        if start is not None and not isinstance(start, Mapping):
            raise ValueError(f"{name}: 'start' is {type(start).__name__}, not a start record")
        seed = data.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ValueError(f"{name}: 'seed' is {seed!r}, not an integer")
        text = {}
        for key in ("reward", "config_digest", "measure", "code"):
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name}: '{key}' is {value!r}, not a string")
            text[key] = value
        return cls(
            sets=_sets(name, "sets", sets),
            format=version,
            seed=seed,
            tasks=_strings(name, "tasks", data.get("tasks")),
            arm=_strings(name, "arm", data.get("arm")),
            measures=None if measures is None else {
                str(m): _sets(name, f"measure {m!r}", by_set) for m, by_set in measures.items()
            },
            start=None if start is None else dict(start),
            **text,
        )  # fmt: skip

    @classmethod
    def load(cls, path: str | Path) -> Heldout:
        """Read a heldout.json; ValueError naming the file when it cannot be read, is not JSON
        or is not a heldout.json."""
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ValueError(f"{path}: {exc.strerror or exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def of(cls, data: Heldout | Mapping[str, Any], name: str = HELDOUT_FILE) -> Heldout:
        """`data` as a record: itself when it is one, else `from_dict`."""
        return data if isinstance(data, Heldout) else cls.from_dict(data, name)

    def to_dict(self) -> dict[str, Any]:
        """What the file holds: every field it has (None: the format lacks it; a format-3 file
        names its start even when none is known)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        keep_start = (self.format or 0) >= 3
        return {
            k: v for k, v in sorted(out.items()) if v is not None or (k == "start" and keep_start)
        }

    def save(self, path: str | Path, indent: int | None = None) -> None:
        """Write the file whole or not at all (sparring.atomic), keys sorted."""
        text = json.dumps(self.to_dict(), sort_keys=True, indent=indent)
        write_file(Path(path), (text + ("\n" if indent is not None else "")).encode())

    @property
    def own_measure(self) -> str:
        """The measure `sets` holds."""
        return self.measure or OWN_MEASURE

    def reward_sets(self, name: str) -> dict[str, Pairs]:
        """`sets`, checked to come from a file that names its answerer reward (what every pairing
        and pooling line needs)."""
        if not self.reward:
            raise ValueError(
                f"{name}: no 'reward' field, so which answerer reward it trained is unknown; "
                "evaluate the run again to rewrite its heldout.json"
            )
        return self.sets

    def holds(self, set_name: str, measure: str = OWN_MEASURE) -> bool:
        """Whether it holds `set_name` per problem in `measure`."""
        if measure == self.own_measure:
            return bool(self.sets.get(set_name))
        return bool((self.measures or {}).get(measure, {}).get(set_name))

    def set_pairs(self, name: str, set_name: str, measure: str = OWN_MEASURE) -> Pairs:
        """{problem id: [base, final]} of one held-out set in `measure` (its `sets`' own, or one
        of its `measures`), a copy; ValueError names what is missing."""
        sets = self.reward_sets(name)
        if measure != self.own_measure:
            sets = (self.measures or {}).get(measure)
            if sets is None:
                raise ValueError(f"{name}: no {measure} measure in it (a run of older code)")
        chosen = sets.get(set_name)
        if not chosen:
            raise ValueError(f"{name}: no held-out set {set_name!r} (it has: {sorted(sets)})")
        return {pid: list(pair) for pid, pair in chosen.items()}


def merged_tasks(files: Sequence[tuple[str, Heldout]]) -> dict[str, str]:
    """{problem id: task key} of several records, which must agree (ValueError naming two)."""
    merged: dict[str, str] = {}
    where: dict[str, str] = {}
    for name, record in files:
        for pid, key in (record.tasks or {}).items():
            if merged.setdefault(pid, key) != key:
                raise ValueError(
                    f"{name} and {where[pid]} give problem {pid!r} different tasks "
                    f"({key!r} against {merged[pid]!r}): were they run on the same config?"
                )
            where.setdefault(pid, name)
    return merged


def new_heldout(
    per_problem: Mapping[str, Mapping[str, Sequence[float]]], tasks: Mapping[str, str], *,
    reward: str, seed: int, config_digest: str, measure: str = OWN_MEASURE,
    arm: Mapping[str, str] | None = None,
    measures: Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]] | None = None,
    start: Mapping[str, Any] | None = None, code: str = "",
) -> Heldout:  # fmt: skip
    """The record the evaluate phase writes: per held-out set, per problem, [base, final] of
    `measure`, each of those problems' task key (its own id when it has none), and what a
    reader must check before pairing or pooling two files: the answerer reward trained, the
    seed, the config digest and the run's `arm` ({field: value} of the arm fields).
    `measures`: other measures' per-problem pairs, {measure: {set: pairs}}. `start`: where the
    run's answerer started (sparring.backends.lineage.start_record; None when its model folder
    records
    none: such a file is refused by every pairing and pooling line), and `code` the code
    version that evaluated it."""
    ids = sorted({pid for pairs in per_problem.values() for pid in pairs})
    return Heldout(
        format=HELDOUT_FORMAT,
        config_digest=config_digest,
        seed=seed,
        reward=reward,
        measure=measure,
        sets=_as_lists(per_problem),
        tasks={pid: tasks.get(pid, pid) for pid in ids},
        arm={"rewards.answerer": reward, **(arm or {})},
        measures={m: _as_lists(by) for m, by in (measures or {}).items()},
        start=dict(start) if start else None,
        code=code,
    )


def heldout_record(
    per_problem: Mapping[str, Mapping[str, Sequence[float]]], tasks: Mapping[str, str],
    **kwargs: Any,
) -> dict[str, Any]:  # fmt: skip
    """`new_heldout(...)` as the file's mapping.

    >>> r = heldout_record({"new_tasks": {"a": [0.1, 0.5]}}, {"a": "k1"}, reward="honest",
    ...                    seed=0, config_digest="abc")
    >>> r["sets"], r["tasks"], r["reward"], r["seed"]
    ({'new_tasks': {'a': [0.1, 0.5]}}, {'a': 'k1'}, 'honest', 0)
    """
    return new_heldout(per_problem, tasks, **kwargs).to_dict()


def _as_lists(per_problem: Mapping[str, Mapping[str, Sequence[float]]]) -> dict[str, Pairs]:
    return {
        name: {pid: list(pair) for pid, pair in pairs.items()}
        for name, pairs in per_problem.items()
    }

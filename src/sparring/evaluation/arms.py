"""Runs of two arms, paired and pooled: which run is another arm's control, and the `LEARN`
lines that compare them on the held-out problems both measured.

Covers: the arms a run is paired against, one config field apart (`ARMS`, `is_treatment`,
`control_differences`), two runs' heldout.json files paired (`heldout_pair`,
`reward_vs_control`: `sparring eval control`) and several seeds pooled (`pool_lines`,
`pooled_arm_line`, `pooled_by_start_line`: `sparring eval pool`), and the refusals: files that
did not evaluate alike or did not start from their configured base model
(sparring.backends.lineage).
Does not cover: one run's own LEARN lines (sparring.evaluation.learning), the intervals
(sparring.evaluation.intervals), which pairs a study planned (sparring.evaluation.study_pairs).
Pure: plain Python data in and out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sparring.backends.lineage import check_same_starts
from sparring.evaluation.heldout import Heldout, merged_tasks
from sparring.evaluation.intervals import (
    Pairs,
    check_comparable,
    control_gain,
    control_gain_by_start,
    interval_text,
    task_gain,
)
from sparring.evaluation.learning import HELDOUT_LINES, gain_line

# What a control may differ in from its treatment: the reward under test, and where the run is
# named, stored and tracked. Anything else (LoRA layers, learning rate, seeds, data) changes what
# the model learns, so a gain difference would not be the reward's alone. Library versions
# (`version.*` params) are the caller's to drop or keep.
CONTROL_MAY_DIFFER = ("name", "tracking.", "storage.")
# ... except whether the run starts from the base model or from a registered champion
CONTROL_MUST_MATCH = ("storage.start_fresh",)
# The arms a run is paired against, each one config field apart: (LEARN line, field). The
# treatment of a pair: the honest reward, the run with a generator phase, the sparser tests,
# the bank in the answerer's reward (against the generator phase screening the draw alone).
ARMS = (
    ("reward_vs_control", "rewards.answerer"),
    ("selfplay_vs_given", "phase_schedule"),
    ("selfplay_vs_dense", "data.given_tests"),
    ("bank_vs_screening", "rewards.answerer_bank"),
)
ARM_FIELDS = tuple(field for _, field in ARMS)


def is_treatment(field: str, mine: str, theirs: str) -> bool:
    """Whether the run with `field` = `mine` is the treatment against one with `theirs`.

    >>> is_treatment("rewards.answerer", "honest", "format_only")
    True
    >>> is_treatment("rewards.answerer", "all_tests", "format_only")
    True
    >>> is_treatment("rewards.answerer", "all_tests", "honest")
    False
    >>> is_treatment("phase_schedule", "answerer", "generator_answerer")
    False
    >>> is_treatment("data.given_tests", "3", "100"), is_treatment("data.given_tests", "0", "3")
    (True, False)
    >>> is_treatment("rewards.answerer_bank", "True", "False")
    True
    """
    if field == "rewards.answerer":  # honest over the binary baseline over format alone
        order = ("format_only", "all_tests", "honest")
        return order.index(mine) > order.index(theirs)
    if field == "phase_schedule":
        return mine != "answerer"  # the self-play arm: it has a generator phase
    if field == "data.given_tests":  # 0 gives every test: the densest
        return (int(mine) or 10**9) < (int(theirs) or 10**9)
    if field == "rewards.answerer_bank":
        return mine.lower() == "true"
    raise ValueError(f"{field}: not an arm field ({', '.join(ARM_FIELDS)})")


def control_differences(
    mine: Mapping[str, str],
    theirs: Mapping[str, str],
    defaults: Mapping[str, str] | None = None,
    arm_field: str = "rewards.answerer",
) -> list[str]:
    """The config params (flattened, as the parent run logs them) in which a candidate run of
    the other arm differs from this one, beyond the arm's field and what no arm cares about
    (name, tracking, storage, but not storage.start_fresh: a run that may start from a
    champion is no partner of one that starts from the base); [] for a fair pair. A param one
    side did not log (a run of older code, before the field existed) counts as its value in
    `defaults`.

    >>> a = {"name": "learn", "rewards.answerer": "honest", "lora.top_layers": "0"}
    >>> control_differences(a, {**a, "name": "learn-control", "rewards.answerer": "format_only"})
    []
    >>> control_differences(a, {**a, "lora.top_layers": "8"})
    ['lora.top_layers']
    >>> control_differences({**a, "data.given_tests": "0"}, a, {"data.given_tests": "0"})
    []
    >>> control_differences({**a, "storage.start_fresh": "True"}, a, {"storage.start_fresh": "0"})
    ['storage.start_fresh']
    """
    d = defaults or {}
    keys = set(mine) | set(theirs)
    return sorted(
        k
        for k in keys
        if (not k.startswith(CONTROL_MAY_DIFFER) or k in CONTROL_MUST_MATCH)
        and k != arm_field
        and mine.get(k, d.get(k)) != theirs.get(k, d.get(k))
    )


# The measures an arm's line pairs, and its name's suffix: the per-test share, and every test
# passed, which is where a one-test clause shows (a missed empty-input case costs 1 of 4 tests
# of the share, and the whole answer here)
ARM_MEASURES = (("discriminating", ""), ("strict", "_strict"))


def _records(files: Sequence[tuple[str, Heldout | Mapping[str, Any]]]) -> list[tuple[str, Heldout]]:
    """(name, typed record) of (name, heldout.json as a record or parsed): ValueError naming
    the file that is no heldout.json."""
    return [(name, Heldout.of(data, name)) for name, data in files]


def _same_start(files: Sequence[tuple[str, Heldout]]) -> None:
    check_same_starts([(name, record.start) for name, record in files])


def heldout_pair(
    treatment: Heldout | Mapping[str, Any],
    control: Heldout | Mapping[str, Any],
    set_name: str = "new_tasks",
    arm_field: str = "rewards.answerer",
    measure: str = "discriminating",
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, str]]:
    """The {problem id: [base, final]} of one held-out set in two runs' `heldout.json` files,
    and their {problem id: task key}, checked for a fair pair: each holds the set and names its
    answerer reward, the two differ in `arm_field` (both files name it), both started from
    their configured base model, the same one (sparring.backends.lineage.check_same_starts), and
    they
    measured the same problems with the same base scores (one base model, sampled with one
    seed), in `measure` (ARM_MEASURES). ValueError names what is wrong.

    >>> s = {"configured": "m", "model": "m", "champion": None}  # started from its base
    >>> t = {"reward": "honest", "sets": {"new_tasks": {"a": [0.1, 0.5]}}, "start": s}
    >>> c = {"reward": "format_only", "sets": {"new_tasks": {"a": [0.1, 0.2]}}, "start": s}
    >>> heldout_pair(t, c)
    ({'a': [0.1, 0.5]}, {'a': [0.1, 0.2]}, {})
    >>> heldout_pair(t, t)
    Traceback (most recent call last):
    ...
    ValueError: both runs trained with the answerer reward 'honest': a control trains with another
    """
    files = _records([("treatment", treatment), ("control", control)])
    pairs = [record.set_pairs(name, set_name, measure) for name, record in files]
    rewards = [record.reward for _, record in files]
    if arm_field == "rewards.answerer" and rewards[0] == rewards[1]:
        raise ValueError(
            f"both runs trained with the answerer reward {rewards[0]!r}: "
            "a control trains with another"
        )
    if arm_field != "rewards.answerer":
        values = [(record.arm or {}).get(arm_field) for _, record in files]
        if None in values:
            raise ValueError(
                f"a heldout.json without {arm_field} in its 'arm': evaluate the run again"
            )
        if values[0] == values[1]:
            raise ValueError(f"both runs have {arm_field}={values[0]}: not two arms")
    _same_start(files)
    check_comparable([("treatment", pairs[0]), ("control", pairs[1])])
    return pairs[0], pairs[1], merged_tasks(files)


def _control_text(d: Mapping[str, float], name: str = "reward_vs_control") -> str:
    if not d.get("n"):
        return f"LEARN {name} delta=n/a {interval_text(None)}"
    controls = int(d.get("control_seeds", 1))
    more = f" control_seeds={controls}" if controls > 1 else ""
    return f"LEARN {name} delta={d['delta']:.3f} {interval_text(d)}{more}"


def reward_vs_control(
    treatment: Pairs,
    control: Pairs,
    tasks: Mapping[str, str] | None = None,
    seed: int = 0,
    name: str = "reward_vs_control",
) -> str:
    """`LEARN reward_vs_control delta=X ci95_delta=LO,HI n=N`: the treatment's held-out gain
    (final - base) minus the control's ({problem id: [base, final]} each, the same problems
    with the same base scores: ValueError otherwise), with a bootstrap interval over tasks
    (`tasks`: {problem id: task key}); N counts tasks. `name` names another arm's line
    (ARMS: selfplay_vs_given, selfplay_vs_dense, bank_vs_screening).

    >>> t = {str(i): [0.1, 0.5] for i in range(6)}
    >>> c = {str(i): [0.1, 0.2] for i in range(6)}
    >>> reward_vs_control(t, c)
    'LEARN reward_vs_control delta=0.300 ci95_delta=0.300,0.300 n=6'
    """
    return _control_text(control_gain([treatment], [control], tasks, seed=seed), name)


def pool_lines(
    runs: Sequence[tuple[str, Heldout | Mapping[str, Any]]],
    controls: Sequence[tuple[str, Heldout | Mapping[str, Any]]] = (),
    control_set: str = "new_tasks",
    seed: int = 0,
) -> list[str]:
    """The held-out `LEARN heldout_<set>` lines pooled over several training runs (seeds) of one
    config, given as (name, heldout.json as a record or parsed), with `seeds=K`; given control
    runs' files, `LEARN reward_vs_control` on `control_set` pooled over both sides' runs and tasks.
    ValueError (naming the files) unless every file names its reward, the runs share one reward
    and the controls another, no file is given twice, all started from one configured base
    model (no champion) and hold the same sets of the same problems with the same base scores
    and task keys."""
    if not runs:
        raise ValueError("no run to pool: give one heldout.json per training seed")
    runs, controls = _records(runs), _records(controls)
    files = [*runs, *controls]
    first_sets = sorted(runs[0][1].reward_sets(runs[0][0]))
    for i, (name, record) in enumerate(files):
        sets = sorted(record.reward_sets(name))
        for other, earlier in files[:i]:
            if record == earlier:
                raise ValueError(f"{name} is {other} again: pool each run once")
        if i < len(runs) and sets != first_sets:
            raise ValueError(
                f"{name} holds the held-out sets {sets}, {runs[0][0]} {first_sets}: "
                "were they run on the same config?"
            )
    for group, role in ((runs, "run"), (controls, "control")):
        rewards = {record.reward for _, record in group}
        if len(rewards) > 1:
            raise ValueError(
                f"the {role}s trained with different answerer rewards {sorted(rewards)}"
            )
    if controls and runs[0][1].reward == controls[0][1].reward:
        raise ValueError(
            f"runs and controls all trained with the answerer reward {runs[0][1].reward!r}: "
            "a control trains with another"
        )
    _same_start(files)
    tasks = merged_tasks(files)
    lines = []
    for set_name in HELDOUT_LINES:
        if set_name not in first_sets:
            lines.append(gain_line(f"heldout_{set_name}", None))
            continue
        pairs = [(name, record.set_pairs(name, set_name)) for name, record in runs]
        check_comparable(pairs)
        gain = task_gain([p for _, p in pairs], tasks, seed=seed)
        lines.append(gain_line(f"heldout_{set_name}", gain))
    if controls:
        lines.append(
            pooled_arm_line(
                "reward_vs_control", "rewards.answerer", runs, str(runs[0][1].reward),
                controls, str(controls[0][1].reward), control_set, seed,
            )
        )  # fmt: skip
    return lines


def pooled_arm_line(
    name: str,
    field: str,
    mine: Sequence[tuple[str, Heldout | Mapping[str, Any]]],
    mine_value: str,
    others: Sequence[tuple[str, Heldout | Mapping[str, Any]]],
    other_value: str,
    set_name: str = "new_tasks",
    seed: int = 0,
    measure: str = "discriminating",
) -> str:
    """`LEARN <name>` (ARMS) pooled over training seeds: the treatment arm's mean gain on
    `set_name` minus the other arm's, the interval resampling tasks and each arm's runs
    (`seeds=` treatment runs, `control_seeds=` the other arm's). `mine` and `others` are
    (name, heldout.json as a record or parsed) of the two arms, one config field (`field`:
    `mine_value` against `other_value`) apart; which one is the treatment is `is_treatment`'s
    call; paired in `measure` (ARM_MEASURES). ValueError (naming the files) when they did not
    start from one base model or did not measure the same problems alike.

    >>> s = {"configured": "m", "model": "m", "champion": None}
    >>> def run(final):
    ...     return {"reward": "honest", "sets": {"new_tasks": {"p": [0.2, final]}}, "start": s}
    >>> selfplay, given = [("s1", run(0.6)), ("s2", run(0.4))], [("g1", run(0.3))]
    >>> pooled_arm_line("selfplay_vs_given", "phase_schedule", given, "answerer",
    ...                 selfplay, "generator_answerer")
    'LEARN selfplay_vs_given delta=0.200 ci95_delta=n/a (n=1) seeds=2'
    """
    mine_first = is_treatment(field, mine_value, other_value)
    treated, control = _records(mine), _records(others)
    if not mine_first:
        treated, control = control, treated
    _same_start([*treated, *control])
    tasks = merged_tasks([*treated, *control])
    gain = control_gain(
        [r.set_pairs(n, set_name, measure) for n, r in treated],
        [r.set_pairs(n, set_name, measure) for n, r in control],
        tasks,
        seed=seed,
    )
    return _control_text(gain, name)


def pooled_by_start_line(
    name: str,
    starts: Sequence[
        tuple[
            Sequence[tuple[str, Heldout | Mapping[str, Any]]],
            Sequence[tuple[str, Heldout | Mapping[str, Any]]],
        ]
    ],
    set_name: str = "new_tasks",
    seed: int = 0,
    measure: str = "discriminating",
) -> str:
    """`LEARN <name>` over arms run from several starting models (`control_gain_by_start`):
    `starts` holds, per start, (treatment files, control files) as (name, heldout.json as a
    record or parsed); ` starts=S` ends the line. ValueError (naming the files) when a start's
    runs did not start from one model (each from its configured one, no champion), did not
    measure alike, or the starts measured other problems."""
    typed = [(_records(treated), _records(control)) for treated, control in starts]
    for treated, control in typed:  # the starts differ by design; within one, none may
        _same_start([*treated, *control])
    grouped = [
        (
            [r.set_pairs(n, set_name, measure) for n, r in treated],
            [r.set_pairs(n, set_name, measure) for n, r in control],
        )
        for treated, control in typed
    ]
    tasks = merged_tasks([f for treated, control in typed for f in (*treated, *control)])
    gain = control_gain_by_start(grouped, tasks, seed=seed)
    return f"{_control_text(gain, name)} starts={gain['starts']}"

"""How many answers a task (N) a study must sample for the oracle to reach a target, from a
pre-check's per-answer rows (answers.jsonl, sparring.experiments.precheck's module docstring;
docs/results/selection-2026-12-06-plan.md: N sized so that the oracle is at least 0.25 at
each level, at most 64).

The oracle at N: some of a task's N sampled answers passes every test (the held-out ones, the
stated case included). Per task t the estimate is 1 - (1 - p_t)^N, where p_t is the task's
every-test pass rate as the pre-check measured it: N answers drawn WITH replacement from a task
whose answers pass with probability p_t (no hypergeometric draw from the s_t answers filed: N
may exceed s_t). p_t averages the task's instances first (each instance's share of its answers
that pass; instances of one task share its task key and are one unit, not independent tasks);
with equal samples an instance, p_t = c_t / s_t. The level's estimate is the mean over its
tasks, with a 95% percentile interval that resamples tasks (`BOOTSTRAP` resamples, seeded).
Beside it, `pick`: the expected score of a uniform pick among the N answers that pass the given
tests (0 where none does): (1 - (1 - g_t)^N) x p_t / g_t, g_t the task's given-test pass rate
(an answer that passes every test passes the given ones, so "passes the given tests and is
right" is the oracle's own flag; the pick is what choosing by the given tests alone reaches).
And `room`: the chance that the N answers hold both a right answer and a wrong one among those
passing the given tests, 1 - (1 - p_t)^N - (1 - (g_t - p_t))^N + (1 - g_t)^N (the plan's room
check at N, addendum 1): only on such a task can a test source change the choice, so no rule's
contrast with another exceeds the level's room.

Covers: reading and checking the rows (`read_rows`, `check_rows`), the per-task rates
(`task_rates`), what the rows show as sampled (`counted`), the estimates (`oracle_at`,
`pick_at`, `room_at`), the curves with intervals and the smallest N reaching the target
(`size_n`), and the printed lines (`format_lines`). Does not
cover: the judging that makes the rows (sparring.experiments.precheck), the command
(`sparring precheck size-n`, sparring.cli.precheck), how the study uses N, and the
uncertainty of p_t itself beyond resampling tasks (a task with 8 answers of which 1 passes is
taken at p_t = 0.125: 1 - 0.875^64 is near 1; with few samples a task the curve's upper N
leans on such single passes).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

TARGET = 0.25  # the oracle the study wants at each level (the selection study's plan)
MAX_N = 64  # the most answers a task the study samples
SHOWN_N = (1, 8, 16, 32, 64)  # the N the printout shows
BOOTSTRAP = 2000  # task resamples per interval
FIELDS: dict[str, tuple[type, ...]] = {
    "task": (str,),
    "id": (str,),
    "family": (str,),
    "level": (int,),
    "sample": (int,),
    "given": (bool,),
    "stated": (bool, type(None)),
    "every": (bool,),
}


# --------------------------------------------------------------------------- rows


def check_rows(rows: Sequence[Any], where: str = "rows") -> list[dict[str, Any]]:
    """`rows` as per-answer rows, or ValueError naming the first bad one (1-based, as a file's
    line) and what is wrong: each a JSON object with every field of `FIELDS` of its type.

    >>> check_rows([{"task": "t", "id": "i", "family": "f", "level": 2, "sample": 0,
    ...              "given": True, "stated": None, "every": 1}])
    Traceback (most recent call last):
    ...
    ValueError: rows line 1: 'every' is 1, not true/false
    """
    out = []
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise ValueError(f"{where} line {n}: not a JSON object (a pre-check answer row)")
        for name, types in FIELDS.items():
            if name not in row:
                raise ValueError(f"{where} line {n}: no {name!r} (a pre-check answer row)")
            value = row[name]
            if type(value) not in types:  # exact: true is no integer, 1 no flag
                kind = {str: "a string", int: "an integer", bool: "true/false"}[types[0]]
                kind += " or null" if type(None) in types else ""
                raise ValueError(f"{where} line {n}: {name!r} is {value!r}, not {kind}")
        out.append(row)
    return out


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The per-answer rows of a pre-check's answers.jsonl (blank lines skipped), checked
    (`check_rows`); ValueError naming the file and line on a malformed one or an empty file."""
    rows = []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} line {n}: not JSON ({exc.msg})") from None
        try:
            check_rows([row])
        except ValueError as exc:
            raise ValueError(str(exc).replace("rows line 1", f"{path} line {n}", 1)) from None
        rows.append(row)
    if not rows:
        raise ValueError(f"{path}: holds no answer rows")
    return rows


def task_rates(rows: Sequence[Mapping[str, Any]]) -> dict[int, dict[str, dict[str, float]]]:
    """Per level, {task key: {"every": p_t, "given": g_t, "instances": m, "answers": s}}: each
    rate the mean over the task's instances of the share of that instance's answers with the
    flag set (instances first, then tasks).

    >>> rows = [{"task": "a", "id": i, "level": 2, "given": g, "every": e}
    ...         for i, g, e in [("a1", True, True), ("a1", True, False), ("a2", False, False)]]
    >>> task_rates(rows)[2]["a"]
    {'every': 0.25, 'given': 0.5, 'instances': 2, 'answers': 3}
    """
    counts: dict[tuple[int, str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in rows:
        c = counts[(row["level"], row["task"], row["id"])]
        c[0] += 1
        c[1] += int(row["every"])
        c[2] += int(row["given"])
    instances: dict[tuple[int, str], list[list[int]]] = defaultdict(list)
    for (level, task, _), c in counts.items():
        instances[(level, task)].append(c)
    out: dict[int, dict[str, dict[str, float]]] = defaultdict(dict)
    for (level, task), members in sorted(instances.items()):
        out[level][task] = {
            "every": sum(c[1] / c[0] for c in members) / len(members),
            "given": sum(c[2] / c[0] for c in members) / len(members),
            "instances": len(members),
            "answers": sum(c[0] for c in members),
        }
    return dict(out)


def counted(rows: Sequence[Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per level, what the answers sampled show without extrapolating: `tasks`, the fewest and
    most answers a task (`answers_min`, `answers_max`: a task's instances pooled), and the
    number of tasks with a right answer (`oracle`) and with both a right answer and a wrong
    one among those passing the given tests (`room`), and `pick`: the mean over tasks of the
    share of a task's given-test passers that are right (0 where none passes), a uniform pick
    among them. With as many answers a task as the study samples, these are the oracle, the
    room and the given-tests-only rule at its N, counted.

    >>> rows = [{"task": "a", "id": "a1", "level": 2, "given": g, "every": e}
    ...         for g, e in [(True, True), (True, False), (False, False)]]
    >>> counted(rows)[2]
    {'tasks': 1, 'answers_min': 3, 'answers_max': 3, 'oracle': 1, 'room': 1, 'pick': 0.5}
    """
    per_task: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in rows:
        c = per_task[(row["level"], row["task"])]
        c[0] += 1
        c[1] += int(row["every"])
        c[2] += int(row["given"] and not row["every"])
    out: dict[int, dict[str, Any]] = {}
    for level in sorted({level for level, _ in per_task}):
        tasks = [c for (lv, _), c in per_task.items() if lv == level]
        out[level] = {
            "tasks": len(tasks),
            "answers_min": min(c[0] for c in tasks),
            "answers_max": max(c[0] for c in tasks),
            "oracle": sum(c[1] > 0 for c in tasks),
            "room": sum(c[1] > 0 and c[2] > 0 for c in tasks),
            "pick": sum(c[1] / (c[1] + c[2]) for c in tasks if c[1] + c[2]) / len(tasks),
        }
    return out


# --------------------------------------------------------------------------- estimates


def oracle_at(every: float, n: int) -> float:
    """The chance that n answers drawn with replacement at pass rate `every` hold a pass.

    >>> oracle_at(0.5, 1), oracle_at(0.5, 2), oracle_at(0.0, 64)
    (0.5, 0.75, 0.0)
    """
    return 1.0 - (1.0 - every) ** n


def pick_at(given: float, every: float, n: int) -> float:
    """The expected score of a uniform pick among the n answers (drawn with replacement) that
    pass the given tests, 0 where none does: P(one passes them) x P(right | passes them).

    >>> pick_at(0.5, 0.25, 1), pick_at(0.5, 0.25, 2), pick_at(0.0, 0.0, 8)
    (0.25, 0.375, 0.0)
    """
    return oracle_at(given, n) * every / given if given > 0 else 0.0


def room_at(given: float, every: float, n: int) -> float:
    """The chance that n answers drawn with replacement hold an answer passing every test and
    one passing the given tests but not every test (inclusion-exclusion over "no right one" and
    "no wrong given-passer"). An answer passing every test passes the given ones (every <= given).

    >>> room_at(0.5, 0.25, 1), room_at(0.5, 0.25, 2), room_at(0.5, 0.5, 8), room_at(0.3, 0.0, 8)
    (0.0, 0.125, 0.0, 0.0)
    """
    wrong = given - every
    return 1.0 - (1.0 - every) ** n - (1.0 - wrong) ** n + (1.0 - given) ** n


def _curve(values: Any, n_boot: int, seed: int) -> dict[str, list[float]]:
    """Mean over tasks (the rows of `values`, tasks x N) and its 95% interval over task
    resamples, per N."""
    import numpy as np

    tasks = values.shape[0]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, tasks, size=(n_boot, tasks))
    weights = np.zeros((n_boot, tasks))
    np.add.at(weights, (np.repeat(np.arange(n_boot), tasks), picks.ravel()), 1.0)
    draws = np.sort(weights @ values / tasks, axis=0)
    lo, hi = int(0.025 * (n_boot - 1)), int(0.975 * (n_boot - 1))
    return {
        "value": [float(v) for v in values.mean(axis=0)],
        "lo": [float(v) for v in draws[lo]],
        "hi": [float(v) for v in draws[hi]],
    }


def _first_reaching(curve: Sequence[float], target: float) -> int | None:
    """The smallest N (1-based) whose estimate reaches `target`, None when none does."""
    return next((n for n, v in enumerate(curve, 1) if v >= target - 1e-12), None)


def size_n(
    rows: Sequence[Mapping[str, Any]],
    target: float = TARGET,
    max_n: int = MAX_N,
    n_boot: int = BOOTSTRAP,
    seed: int = 0,
) -> dict[int, dict[str, Any]]:
    """Per level: `tasks`, `instances`, `answers`, `every_rate` and `given_rate` (the means of
    the per-task rates), `oracle` and `pick` ({"value", "lo", "hi"}: lists over N = 1..max_n,
    the mean over tasks and its task-resampled 95% interval), `n_needed` (the smallest N whose
    oracle estimate reaches `target`, None when max_n does not), `room` (as `oracle`),
    `n_needed_lo` (the same for
    the interval's lower end), `at_max` (the estimate at max_n), `target`, `max_n`.

    Two tasks with every-test pass rates 0 and 0.5: the oracle is 0.25 at N=1, 0.375 at N=2.

    >>> rows = [{"task": t, "id": t, "level": 2, "given": e, "every": e}
    ...         for t, e in [("a", False), ("a", False), ("b", True), ("b", False)]]
    >>> s = size_n(rows, max_n=3, n_boot=50)[2]
    >>> s["oracle"]["value"], s["n_needed"], s["tasks"]
    ([0.25, 0.375, 0.4375], 1, 2)
    >>> size_n(rows, target=0.5, max_n=3, n_boot=50)[2]["n_needed"] is None
    True
    """
    import numpy as np

    if max_n < 1:
        raise ValueError(f"max N {max_n}: use N >= 1")
    if not 0 < target <= 1:
        raise ValueError(f"target {target}: use a share in (0, 1]")
    out: dict[int, dict[str, Any]] = {}
    ns = range(1, max_n + 1)
    as_sampled = counted(rows)
    for level, tasks in sorted(task_rates(rows).items()):
        rates = list(tasks.values())
        oracle = np.array([[oracle_at(r["every"], n) for n in ns] for r in rates])
        pick = np.array([[pick_at(r["given"], r["every"], n) for n in ns] for r in rates])
        room = np.array([[room_at(r["given"], r["every"], n) for n in ns] for r in rates])
        curve = _curve(oracle, n_boot, seed)
        out[level] = {
            "tasks": len(rates),
            "instances": sum(int(r["instances"]) for r in rates),
            "answers": sum(int(r["answers"]) for r in rates),
            "every_rate": sum(r["every"] for r in rates) / len(rates),
            "given_rate": sum(r["given"] for r in rates) / len(rates),
            "oracle": curve,
            "pick": _curve(pick, n_boot, seed),
            "room": _curve(room, n_boot, seed),
            "n_needed": _first_reaching(curve["value"], target),
            "n_needed_lo": _first_reaching(curve["lo"], target),
            "at_max": curve["value"][-1],
            "target": target,
            "max_n": max_n,
            "counted": as_sampled[level],
        }
    return out


# --------------------------------------------------------------------------- printout


def _at(curve: Mapping[str, list[float]], n: int) -> str:
    return f"{curve['value'][n - 1]:.3f} ({curve['lo'][n - 1]:.3f}..{curve['hi'][n - 1]:.3f})"


def format_lines(sized: Mapping[int, Mapping[str, Any]]) -> list[str]:
    """Per level: a SIZEN line of its counts, rates and the oracle, pick and room at the shown N
    (and max N), and one saying the smallest N reaching the target or that max N does not."""
    lines = []
    for level, s in sized.items():
        max_n = s["max_n"]
        shown = sorted({n for n in SHOWN_N if n <= max_n} | {max_n})
        lines.append(
            f"SIZEN level={level} tasks={s['tasks']} instances={s['instances']} "
            f"answers={s['answers']} every_rate={s['every_rate']:.4f} "
            f"given_rate={s['given_rate']:.4f} "
            + " ".join(f"oracle@{n}={_at(s['oracle'], n)}" for n in shown)
            + " "
            + " ".join(f"pick@{n}={_at(s['pick'], n)}" for n in shown)
            + " "
            + " ".join(f"room@{n}={_at(s['room'], n)}" for n in shown)
        )
        c = s["counted"]
        lines.append(
            f"SIZEN level={level} counted at the answers sampled ({c['answers_min']}.."
            f"{c['answers_max']} a task): oracle={c['oracle'] / c['tasks']:.3f} ({c['oracle']} "
            f"of {c['tasks']} tasks) room={c['room'] / c['tasks']:.3f} ({c['room']} of "
            f"{c['tasks']} tasks) pick={c['pick']:.3f}"
        )
        if s["n_needed"] is None:
            lines.append(
                f"SIZEN level={level} N: {max_n} does not reach the oracle {s['target']:.3f}: "
                f"the estimate at {max_n} is {_at(s['oracle'], max_n)}"
            )
        else:
            low = s["n_needed_lo"]
            lower = f"N={low}" if low is not None else f"no N up to {max_n}"
            lines.append(
                f"SIZEN level={level} N={s['n_needed']}: the smallest N whose oracle estimate "
                f"reaches {s['target']:.3f} ({_at(s['oracle'], s['n_needed'])}; the interval's "
                f"lower end reaches it at {lower})"
            )
    return lines

"""The selection study's report (docs/results/selection-2026-12-06-plan.md), rebuilt from filed
rows files alone (sparring.experiments.selection_rows writes them; one file a writer seed).

`select_report` returns the whole report as plain JSON and `format_report` prints it from that
JSON alone, so `sparring precheck select-report --out FILE.json` files what it printed. Per
group (each level, then `all` pooled):

- tasks and rows, the oracle (some answer passes every held-out test), the room check (the
  share of rows whose candidates, the answers passing the given tests, include a right and a
  wrong answer: only there can a source change the choice; under `ROOM_MIN` the group's
  contrasts cannot see a difference, which is not a null) and the fallback (no answer passes
  the given tests);
- every rule (`choose.score_rows`, exact) with a 95% percentile bootstrap interval;
- every contrast A - B (`--contrast`, rules such as `writer`, `fuzz+writer`, `none`): the exact
  value, the 95% percentile bootstrap interval, each file's own value, a 95% Student t-interval
  on those per-file values (n - 1 degrees of freedom; none under 2 files), the smallest
  difference the design could see (`MDD_Z` x sqrt(q / n): q the mean over rows of the squared
  per-task difference of the two rules, which is the share of tasks separating them when each
  choice is right or wrong, n the group's tasks; the plan's 2.8 x sqrt(0.2 / 200); it leaves
  out the spread between writer seeds) and the plan's verdict: "helps" when both intervals lie
  above 0, "hurts" when both lie below, else "no difference seen" ("cannot see a difference"
  where the room check fails).

A bootstrap resample draws whole files (writer seeds) with replacement, then tasks (a task key
with all its rows in each drawn file); one resample serves every rule, so contrasts are paired.

Covers: `parse_contrast`, `t_quantile`, `t_interval`, `verdict`, `select_report`,
`format_report`. Does not cover: building rows or choosing (sparring.experiments.selection_rows,
sparring.evaluation.choose), the command's arguments (sparring.cli.precheck). Pure: the
standard library and choose; no ML framework.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from sparring.evaluation import choose

BOOTSTRAP = 10_000  # resamples per interval (the study's plan)
ROOM_MIN = 0.05  # the plan's room check: under it a group's contrasts cannot see a difference
MDD_Z = 2.8  # 1.96 + 0.84: a two-sided 5% test with 80% power (the plan's decision rule)
HELPS, HURTS = "helps", "hurts"
NO_DIFFERENCE, CANNOT_SEE = "no difference seen", "cannot see a difference"


def parse_contrast(text: str, sources: Sequence[str]) -> tuple[str, str]:
    """(A, B) of `A-B`, each `none` or sources of the rows joined by "+"; a ValueError saying
    what to write otherwise (a name, not a split, decides where the "-" is).

    >>> parse_contrast("fuzz+writer-fuzz", ["fuzz", "writer"])
    ('fuzz+writer', 'fuzz')
    """

    def rule(side: str) -> bool:
        return side == choose.NONE or all(part in sources for part in side.split(choose.UNION))

    splits = [
        (text[:i].strip(), text[i + 1 :].strip())
        for i, c in enumerate(text)
        if c == "-" and rule(text[:i].strip()) and rule(text[i + 1 :].strip())
    ]
    known = ", ".join([choose.NONE, *sources])
    if len(splits) != 1:
        why = "two readings" if splits else "use A-B"
        raise ValueError(
            f"contrast {text!r}: {why}, A and B rules among {known} or unions like a+b"
        )
    a, b = splits[0]
    if a == b:
        raise ValueError(f"contrast {text!r}: a rule against itself is 0; name two rules")
    return a, b


def _t_two_sided(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with `df` (an integer) degrees of freedom, in closed form
    (Abramowitz and Stegun 26.7.3 and 26.7.4)."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:
        term = total = 1.0
        for j in range(1, (df - 1) // 2):
            term *= 2 * j / (2 * j + 1) * c2
            total += term
        series = s * math.cos(theta) * total if df > 1 else 0.0
        return 2 / math.pi * (theta + series)
    term = total = 1.0
    for j in range(1, df // 2):
        term *= (2 * j - 1) / (2 * j) * c2
        total += term
    return s * total


def t_quantile(p: float, df: int) -> float:
    """The `p` quantile (p > 0.5) of Student's t with `df` degrees of freedom, by bisection.

    >>> round(t_quantile(0.975, 1), 3), round(t_quantile(0.975, 3), 3)
    (12.706, 3.182)
    """
    if not 0.5 < p < 1 or df < 1:
        raise ValueError(f"t quantile {p} with {df} degrees of freedom: use 0.5 < p < 1, df >= 1")
    lo, hi, goal = 0.0, 1.0, 2 * p - 1
    while _t_two_sided(hi, df) < goal:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_two_sided(mid, df) < goal else (lo, mid)
    return (lo + hi) / 2


def t_interval(values: Sequence[float]) -> dict[str, Any] | None:
    """{"mean", "lo", "hi", "df"}: the 95% Student t-interval on `values` (the per-file
    contrasts), n - 1 degrees of freedom; None under two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "df": n - 1}


def verdict(lo: float | None, hi: float | None, t: Mapping[str, Any] | None, room: bool) -> str:
    """The plan's rule on a contrast's bootstrap interval (lo, hi) and t-interval `t`: helps
    when both lie above 0, hurts when both lie below, else no difference seen, or cannot see a
    difference where the group failed the room check (`room` False)."""
    if t is not None and lo is not None and hi is not None:
        if lo > 0 and t["lo"] > 0:
            return HELPS
        if hi < 0 and t["hi"] < 0:
            return HURTS
    return NO_DIFFERENCE if room else CANNOT_SEE


def _interval(draws: list[float]) -> tuple[float | None, float | None]:
    if not draws:
        return None, None
    draws.sort()
    return draws[int(0.025 * (len(draws) - 1))], draws[int(0.975 * (len(draws) - 1))]


def _bootstrap(
    per_file: list[dict[str, list[float]]], width: int, n_boot: int, rng: random.Random
) -> list[list[float]]:
    """Per rule (the first `width` entries of each task's vector; the last is its rows), the
    score of each resample: whole files drawn with replacement, then tasks. A resample whose
    drawn files hold no row of the group is left out."""
    keys = sorted({t for f in per_file for t in f})
    zero = [0.0] * (width + 1)
    vectors = [[f.get(t, zero) for t in keys] for f in per_file]
    combined: dict[tuple[int, ...], list[tuple[float, ...]]] = {}
    draws: list[list[float]] = [[] for _ in range(width)]
    files = range(len(per_file))
    for _ in range(n_boot):
        picked = tuple(sorted(rng.choices(files, k=len(per_file))))
        if picked not in combined:  # the drawn files' sums per task, once per multiset
            combined[picked] = [
                tuple(map(sum, zip(*(vectors[f][t] for f in picked), strict=True)))
                for t in range(len(keys))
            ]
        tasks = combined[picked]
        drawn = (tasks[i] for i in rng.choices(range(len(keys)), k=len(keys)))
        sums = [sum(col) for col in zip(*drawn, strict=True)]
        if sums[-1]:
            for i in range(width):
                draws[i].append(sums[i] / sums[-1])
    return draws


def _answers_shared(files: Sequence[Sequence[Mapping[str, Any]]]) -> bool:
    """Whether every file holds the same answers (flags and code) for the same task rows: the
    writer seeds' files of one answerer, made with `select --reuse`."""

    def answers(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Any]:
        return {
            (r["task"], str(r["meta"].get("id"))): [
                (a["given"], a["right"], a.get("code")) for a in r["answers"]
            ]
            for r in rows
        }

    first = answers(files[0])
    return all(answers(rows) == first for rows in files[1:])


def select_report(
    files: Sequence[Sequence[Mapping[str, Any]]],
    rules: Sequence[str],
    contrasts: Sequence[str] = (),
    n_boot: int = BOOTSTRAP,
    seed: int = 0,
    labels: Sequence[str] = (),
) -> dict[str, Any]:
    """The report (module docstring) as plain JSON: {"settings", "groups": {group: {"tasks",
    "rows", "oracle", "room", "room_rows", "can_see", "fallback", "fallback_rows", "rules":
    {rule: {"score", "score_exact", "lo", "hi", "per_file", "tests_kept", "tests_dropped",
    "right", "right_rejected", "right_rejected_share", "pool", "pool_caught",
    "pool_caught_share", "fallback_tasks", "tied_tasks"}},
    "contrasts": {"A-B": {"a", "b", "value", "value_exact", "lo", "hi", "per_file", "t",
    "separation", "mdd", "verdict"}}}}}. `rules` are scored (none always); `contrasts` ("A-B",
    default every rule minus none) add the rules they name; `labels` name the files."""
    sources = sorted({s for rows in files for row in rows for s in row["tests"]})
    pairs = [parse_contrast(c, sources) for c in contrasts]
    names = [choose.NONE, *(r for r in rules if r != choose.NONE)]
    if not contrasts:
        pairs = [(r, choose.NONE) for r in names[1:]]
    names += [r for pair in pairs for r in pair if r not in names]
    names = list(dict.fromkeys(names))
    every = [row for rows in files for row in rows]
    scored = choose.score_rows(every, names, by="level")
    # per group: per file, per task key the summed exact value of each rule, then its rows;
    # per row the values (for q of the smallest difference seen) and the room check
    units: dict[str, list[dict[str, list[float]]]] = {}
    per_row: dict[str, list[list[Fraction]]] = {}
    rooms: dict[str, list[bool]] = {}
    at = 0
    for f, rows in enumerate(files):
        for row in rows:
            chosen = scored["tasks"][at]["choices"]
            at += 1
            values = [Fraction(chosen[s]["expected_exact"]) for s in names]
            for group in (str(row["meta"].get("level")), choose.POOLED):
                per_file = units.setdefault(group, [{} for _ in files])
                got = per_file[f].get(row["task"], [0.0] * (len(names) + 1))
                add = [*map(float, values), 1.0]
                per_file[f][row["task"]] = [a + b for a, b in zip(got, add, strict=True)]
                per_row.setdefault(group, []).append(values)
                rooms.setdefault(group, []).append(choose.room(row))
    rng = random.Random(seed)
    groups = {}
    for group, per_file in units.items():  # the resamples in the rows' order of groups
        draws = _bootstrap(per_file, len(names), n_boot, rng)
        s = scored["groups"][group]
        groups[group] = _group(per_file, s, names, pairs, draws, per_row[group], rooms[group])
    order = [*sorted((g for g in units if g != choose.POOLED), key=_level_key), choose.POOLED]
    settings = {
        "files": list(labels) or [f"file {i + 1}" for i in range(len(files))],
        "rows_per_file": [len(rows) for rows in files],
        "rules": names,
        "contrasts": [f"{a}-{b}" for a, b in pairs],
        "bootstrap": n_boot,
        "bootstrap_seed": seed,
        "room_min": ROOM_MIN,
        "mdd_z": MDD_Z,
        "answers_shared": _answers_shared(files),
    }
    return {"settings": settings, "groups": {g: groups[g] for g in order}}


def _group(
    per_file: list[dict[str, list[float]]],
    s: Mapping[str, Any],
    names: list[str],
    pairs: list[tuple[str, str]],
    draws: list[list[float]],
    values: list[list[Fraction]],
    rooms: list[bool],
) -> dict[str, Any]:
    """One group's part of the report from its units, score_rows' summary `s` and draws."""
    index = {name: i for i, name in enumerate(names)}
    sizes = [sum(v[-1] for v in f.values()) for f in per_file]

    def file_scores(i: int) -> list[float | None]:
        return [
            sum(v[i] for v in f.values()) / n if n else None
            for f, n in zip(per_file, sizes, strict=True)
        ]

    tasks = len({t for f in per_file for t in f})
    room = sum(rooms) / len(rooms)
    can_see = room >= ROOM_MIN
    rules = {}
    for name in names:
        r, (lo, hi) = s["rules"][name], _interval(list(draws[index[name]]))
        rules[name] = {
            "score": r["score"], "score_exact": r["score_exact"], "lo": lo, "hi": hi,
            "per_file": file_scores(index[name]), "tests_kept": r["tests_kept"],
            "tests_dropped": r["tests_dropped"], "right": r["right"],
            "right_rejected": r["right_rejected"],
            "right_rejected_share": r["right_rejected_share"], "pool": r["pool"],
            "pool_caught": r["pool_caught"], "pool_caught_share": r["pool_caught_share"],
            "fallback_tasks": r["fallback_tasks"], "tied_tasks": r["tied_tasks"],
        }  # fmt: skip
    contrasts = {}
    for a, b in pairs:
        i, j = index[a], index[b]
        lo, hi = _interval([x - y for x, y in zip(draws[i], draws[j], strict=True)])
        per = [
            None if x is None or y is None else x - y
            for x, y in zip(file_scores(i), file_scores(j), strict=True)
        ]
        t = t_interval([v for v in per if v is not None])
        exact = Fraction(s["rules"][a]["score_exact"]) - Fraction(s["rules"][b]["score_exact"])
        q = sum((v[i] - v[j]) ** 2 for v in values) / len(values)
        contrasts[f"{a}-{b}"] = {
            "a": a, "b": b, "value": float(exact), "value_exact": _fraction(exact),
            "lo": lo, "hi": hi, "per_file": per, "t": t, "separation": float(q),
            # no task separates the rules: the formula's premise is missing, so no number
            "mdd": MDD_Z * math.sqrt(float(q) / tasks) if q else None,
            "verdict": verdict(lo, hi, t, can_see),
        }  # fmt: skip
    none = s["rules"][choose.NONE]
    return {
        "tasks": tasks,
        "rows": len(rooms),
        "oracle": s["oracle"],
        "room": room,
        "room_rows": sum(rooms),
        "can_see": can_see,
        "fallback": none["fallback_tasks"] / len(rooms),
        "fallback_rows": none["fallback_tasks"],
        "rules": rules,
        "contrasts": contrasts,
    }


def _fraction(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def _level_key(group: str) -> tuple[int, str]:
    return (int(group), "") if group.lstrip("-").isdigit() else (10**9, group)


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def format_report(report: Mapping[str, Any]) -> list[str]:
    """The report's lines, from its JSON alone: a SELECT report line (files, rules, contrasts,
    resamples); per group (levels, then `all`) a line with tasks, rows, the oracle, the room
    check and the fallback (and one saying the group's contrasts cannot see a difference when
    the room is under the plan's 0.05); one per rule (score, exact, interval, tests kept and
    dropped per row, right answers rejected, fallback and tied rows); one per contrast (value,
    bootstrap interval, t-interval, each file's value, the smallest difference seen, verdict)."""
    st = report["settings"]
    shared = "yes" if st["answers_shared"] else "NO (not one answerer's files: see --reuse)"
    lines = [
        f"SELECT report: {len(st['files'])} rows file(s) (writer seeds: "
        f"{', '.join(st['files'])}), {sum(st['rows_per_file'])} rows; rules "
        f"{', '.join(st['rules'])}; contrasts {', '.join(st['contrasts']) or '(none)'}; "
        f"{st['bootstrap']} resamples drawing whole files, then tasks (seed "
        f"{st['bootstrap_seed']}); answers shared by the files: {shared}"
    ]
    for group, g in report["groups"].items():
        where = f"SELECT level={group}"
        lines.append(
            f"{where} tasks={g['tasks']} rows={g['rows']} oracle={_share(g['oracle'])} "
            f"room={g['room']:.3f} ({g['room_rows']}/{g['rows']} rows with a right and a wrong "
            f"candidate) fallback={g['fallback']:.3f} ({g['fallback_rows']}/{g['rows']} rows "
            "with no answer passing the given tests)"
        )
        if not g["can_see"]:
            lines.append(
                f"{where} room {g['room']:.3f} under {st['room_min']}: no source can move this "
                f"group's score by more than {g['room']:.3f}; its contrasts cannot see a "
                "difference (not a null)"
            )
        for name, r in g["rules"].items():
            lines.append(
                f"{where} rule={name} score={_share(r['score'])} ({r['score_exact']}) "
                f"({_share(r['lo'])}..{_share(r['hi'])}) "
                f"kept/task={r['tests_kept'] / g['rows']:.2f} "
                f"dropped/task={r['tests_dropped'] / g['rows']:.2f} "
                f"right_rejected={_share(r['right_rejected_share'])} "
                f"({r['right_rejected']}/{r['right']}) "
                f"pool_caught={_share(r['pool_caught_share'])} ({r['pool_caught']}/{r['pool']}) "
                f"fallback={r['fallback_tasks']} "
                f"tied={r['tied_tasks']}"
            )
        for name, c in g["contrasts"].items():
            per = ",".join(_signed(v) for v in c["per_file"])
            t = c["t"]
            t_text = "n/a" if t is None else f"({t['lo']:+.3f}..{t['hi']:+.3f}, df {t['df']})"
            mdd = "n/a (no task separates them)" if c["mdd"] is None else f"{c['mdd']:.3f}"
            lines.append(
                f"{where} contrast={name} diff={c['value']:+.3f} ({c['value_exact']}) "
                f"({_signed(c['lo'])}..{_signed(c['hi'])}) t={t_text} per_file={per} "
                f"mdd={mdd} verdict={c['verdict']}"
            )
    return lines

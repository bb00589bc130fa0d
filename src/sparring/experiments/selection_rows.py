"""The selection study's rows (docs/results/selection-2026-12-06-plan.md): N sampled answers a
task, each judged,
and each test source's tests with every answer's verdict on them, as
sparring.evaluation.choose's rows; and the report that re-scores every rule from filed rows.

For each problem (the instances the pre-check samples: sparring.evaluation.calibration's
`calibration_problems` at a seed and levels), the answerer's N answers are sampled as the
pre-check samples them (`sample_model` under `seed`) and judged by the pre-check's `judge` (one
run of every test on each answer): `given` (passes the K given tests) and `right` (passes every
one of the problem's tests, the stated case included). Each test source writes tests for the
problem as the reward sees it (`given_view`: the K given tests shown, the rest withheld):
- `fuzz`: the fuzzer's k drawn tests that validation would bank (sparring.phases.fuzz's
  `fuzz_tests` under `seed`, as the pre-check and pool-catch draw them);
- `base`: the config's generator model, `writer:PATH`: a generator model (a trained writer's
  folder, or any name `sparring pool-catch` takes), each sampled through the generator prompt
  under `seed` + 1 and its first k valid tests kept as validation keeps them (the pre-check's
  `generator_kept`). A source is named `fuzz`, `base` or `writer` (`NAME=SPEC` names it
  otherwise: two writers in one file need names).
A source's row holds its k kept tests (valid) and, after them, every test it proposed (the
generator: wrote; the fuzzer: drew and judged) that fails the reference or calls the function
off its declared types, with validation's reason (`judge_tests`, under the rule its kept tests
passed): choose drops those and counts them. Every answer runs every test of every source in one
sandbox request (`run_cached`, as the pre-check runs tests on answers), the dropped ones
included, so a rule that ignored validation could be scored too; an answer without code runs
nothing (its verdicts are null). The row's `task` is the instance's task key (instances of one
task share it: one unit when resampling), `meta` its level, family, instance `id` and `written`
(per source, how many tests it proposed), each answer keeps its extracted code (null: none).

The report (`select_report`, `format_report`; `sparring precheck select-report`): per level and
pooled, each rule's score (`choose.score_rows`, exact), the oracle, tests kept and dropped per
task, the share of right answers the kept tests reject, and 95% percentile bootstrap intervals
for each rule's score and each contrast X - none. Several rows files are several writer seeds
over the same answers: a resample draws whole files, then tasks (each with all its instances).

Covers: `parse_sources`, `source_tests`, `build_rows` (planted answers and completions welcome),
`run_selection` (sampling, then `build_rows` in one Sandbox), `select_report`, `format_report`.
Does not cover: the command's arguments (sparring.cli.precheck), choosing and scoring
(sparring.evaluation.choose), held-out new tasks (the overlap filter of
sparring.problems.families.sets: `build_rows` takes whatever problems it is given), the study's
t-interval on per-seed contrasts.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sparring import progress
from sparring.evaluation import choose
from sparring.evaluation.calibration import family_and_level
from sparring.experiments.precheck import generator_kept, judge
from sparring.problems import Problem
from sparring.problems.families import task_tag

FUZZ, BASE, WRITER = "fuzz", "base", "writer"
BOOTSTRAP = 10_000  # resamples per interval (the study's plan)
MIN_TASKS = 100  # tasks a level the study wants: --per-family is sized to it


@dataclass(frozen=True)
class Source:
    """A test source: its name in the rows, `fuzz` or a generator `model` (name or folder), and
    the spec it was given as."""

    name: str
    model: str  # "" for the fuzzer
    spec: str

    @property
    def fuzz(self) -> bool:
        return not self.model


def parse_sources(specs: Sequence[str], base_model: str) -> list[Source]:
    """`fuzz`, `base` (the config's generator, `base_model`), `writer:PATH`, each optionally
    `NAME=SPEC`; a ValueError saying what to write otherwise (unknown, repeated names, names
    choose reserves).

    >>> [(s.name, s.model) for s in parse_sources(["fuzz", "writer:runs/w1", "b=base"], "m")]
    [('fuzz', ''), ('writer', 'runs/w1'), ('b', 'm')]
    """
    sources: list[Source] = []
    for spec in specs:
        name, sep, what = spec.partition("=")
        if not sep:
            name, what = "", spec
        name, what = name.strip(), what.strip()
        kind, _, path = what.partition(":")
        if what == FUZZ:
            model = ""
        elif what == BASE:
            model = base_model
        elif kind == WRITER and path.strip():
            model = path.strip()
        else:
            raise ValueError(
                f"source {spec!r}: use fuzz, base or writer:PATH (a generator model or folder), "
                "optionally NAME=..."
            )
        name = name or (what if what in (FUZZ, BASE) else WRITER)
        if name == choose.NONE or any(c in name for c in (choose.UNION, ":", "=", ",")):
            raise ValueError(f"source {spec!r}: name {name!r} is reserved or has + : = ,")
        if name in {s.name for s in sources}:
            raise ValueError(f"source {spec!r}: a second source named {name!r}; use NAME={what}")
        sources.append(Source(name, model, spec))
    return sources


def source_tests(
    cfg: Any,
    views: Sequence[Problem],
    source: Source,
    completions: Mapping[str, Sequence[str]],
    k: int,
    seed: int,
    sandbox: Any,
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, int]]:
    """({problem id: its tests as a row keeps them: the k kept, valid, then the proposed ones
    that fail the reference, with validation's reason}, {problem id: tests proposed}) of one
    source for `views` (problems as the reward sees them); a generator's `completions[problem
    id]` are its sampled completions, the fuzzer draws under `seed`."""
    from sparring.phases.fuzz import fuzz_tests
    from sparring.rewards.bank import BankMerge
    from sparring.sandbox.validation import judge_tests

    if source.fuzz:
        bank = BankMerge(
            [], {p.id: p.baseline_tests for p in views}, cfg.rewards.duplicate_similarity
        )
        draw = fuzz_tests(list(views), k, seed, bank, sandbox)
        kept, proposed = draw.picked, {pid: sorted(ts) for pid, ts in draw.judged.items()}
        reference_expected = True  # the fuzzer's picks always take the reference's value
    else:
        kept, proposed = generator_kept(cfg, views, completions, k, sandbox)
        reference_expected = cfg.rewards.reference_expected
    tests: dict[str, list[dict[str, Any]]] = {}
    for p in views:
        entries = [{"test": t, "valid": True, "reason": "ok"} for t in kept[p.id]]
        if proposed[p.id]:
            report = judge_tests(
                p.reference_solution, list(proposed[p.id]), [], p.function_name,
                p.function_signature, sandbox, reference_expected,
            )  # fmt: skip
            entries += [
                {"test": v.test, "valid": False, "reason": v.reason}
                for v in report.verdicts
                if not v.valid and not v.duplicate
            ]
        tests[p.id] = entries
    return tests, {p.id: len(proposed[p.id]) for p in views}


def build_rows(
    cfg: Any,
    problems: Sequence[Problem],
    texts: Sequence[Sequence[str]],
    given_tests: int,
    k: int,
    sources: Sequence[Source],
    completions: Mapping[str, Mapping[str, Sequence[str]]],
    seed: int,
    sandbox: Any,
) -> list[dict[str, Any]]:
    """One choose row per problem (the module docstring) from `texts[i]`, problems[i]'s answers
    (sampled, or planted by a test), and `completions[source name][problem id]`, each
    generator source's completions; the problems carry their trivial passes."""
    from sparring.problems.given_tests import given_view
    from sparring.problems.programs import extract_code
    from sparring.sandbox.result_cache import ResultCache, run_cached

    _, _, flags = judge(problems, texts, given_tests, sandbox)
    views = [given_view(p, given_tests) for p in problems]
    tests, written = {}, {}
    for s in sources:
        progress.say(f"select: {s.name}'s tests for {len(views)} problems, kept and validated")
        tests[s.name], written[s.name] = source_tests(
            cfg, views, s, completions.get(s.name, {}), k, seed, sandbox
        )
    codes = [
        [extract_code(t, p.function_name) for t in outs]
        for p, outs in zip(problems, texts, strict=True)
    ]
    every = {p.id: [e["test"] for s in sources for e in tests[s.name][p.id]] for p in problems}
    jobs = [(c, every[p.id]) for p, cs in zip(problems, codes, strict=True) for c in cs if c]
    progress.say(f"select: {len(jobs)} answers run on every source's tests")
    ran = iter(run_cached(sandbox, jobs, ResultCache()) if jobs else [])
    rows, at = [], 0
    for p, cs in zip(problems, codes, strict=True):
        judged = flags[at : at + len(cs)]
        at += len(cs)
        verdicts: dict[str, list[list[bool | None]]] = {s.name: [] for s in sources}
        for c in cs:
            result = next(ran) if c else [None] * len(every[p.id])
            start = 0
            for s in sources:
                n = len(tests[s.name][p.id])
                verdicts[s.name].append(list(result[start : start + n]))
                start += n
        family, level = family_and_level(p.tags)
        meta = {"level": level, "family": family, "id": p.id,
                "written": {s.name: written[s.name][p.id] for s in sources}}  # fmt: skip
        rows.append(
            choose.task_row(
                task_tag(p),
                [a["given"] for a in judged],
                [a["every"] for a in judged],
                {s.name: tests[s.name][p.id] for s in sources},
                verdicts,
                meta=meta,
                codes=cs,
            )
        )
    return rows


def run_selection(
    cfg: Any,
    problems: Sequence[Problem],
    model: str,
    n: int,
    k: int,
    sources: Sequence[Source],
    seed: int,
    given_tests: int,
    generator_samples: int,
) -> dict[str, Any]:
    """Samples `n` answers a problem of `model` (default the config's answerer) and
    `generator_samples` completions a problem of each generator source, then `build_rows` in one
    Sandbox; {"rows", "timing"}."""
    from sparring.evaluation.calibration import answerer_for, sample_model
    from sparring.evaluation.generator_heldout import sample_tests
    from sparring.problems.given_tests import given_view
    from sparring.sandbox import Sandbox
    from sparring.sandbox.limits import untrusted_limits

    began = time.perf_counter()
    answerer = answerer_for(cfg, model)
    texts = sample_model(cfg, answerer, problems, n, seed, label="select")
    del answerer  # the writers load next: one model in memory at a time
    timing = {"sample_s": time.perf_counter() - began}
    progress.say(f"select: {n} answers x {len(problems)} problems in {timing['sample_s']:.0f}s")
    views = [given_view(p, given_tests) for p in problems]
    completions: dict[str, dict[str, list[str]]] = {}
    began = time.perf_counter()
    for s in (s for s in sources if not s.fuzz):
        progress.say(
            f"select: {s.name} writes tests for {len(views)} problems x {generator_samples}"
        )
        written = sample_tests(cfg, s.model, views, generator_samples, seed + 1)
        completions[s.name] = dict(zip([p.id for p in views], written, strict=True))
    timing["writers_s"] = time.perf_counter() - began
    began = time.perf_counter()
    with Sandbox(untrusted_limits(cfg)) as sb:
        rows = build_rows(cfg, problems, texts, given_tests, k, sources, completions, seed, sb)
    timing["judge_s"] = time.perf_counter() - began
    return {"rows": rows, "timing": timing}


# --------------------------------------------------------------------------- the report


def _interval(draws: list[float]) -> tuple[float, float]:
    draws.sort()
    return draws[int(0.025 * (len(draws) - 1))], draws[int(0.975 * (len(draws) - 1))]


def select_report(
    files: Sequence[Sequence[Mapping[str, Any]]],
    sources: Sequence[str],
    n_boot: int = BOOTSTRAP,
    seed: int = 0,
) -> dict[str, Any]:
    """Every rule scored on the rows of all `files` together (`choose.score_rows`, by level),
    with 95% percentile intervals from `n_boot` resamples drawing whole files, then tasks (a
    task key with all its rows in each drawn file); contrasts X - none likewise, paired (one
    resample for all), and each file's own contrast. {"scored": score_rows' result, "groups":
    {group: {"tasks", "rows", "rules": {source: {"score", "lo", "hi"}}, "contrasts": {source:
    {"value", "lo", "hi", "per_file"}}}}}."""
    names = [choose.NONE, *(s for s in sources if s != choose.NONE)]
    every = [row for rows in files for row in rows]
    scored = choose.score_rows(every, names, by="level")
    # per group, file and task key: the summed exact expectation per rule, then the rows
    units: dict[str, list[dict[str, list[Fraction]]]] = {}
    at = 0
    for f, rows in enumerate(files):
        for row in rows:
            chosen = scored["tasks"][at]["choices"]
            at += 1
            values = [Fraction(chosen[s]["expected_exact"]) for s in names] + [Fraction(1)]
            for group in (str(row["meta"].get("level")), choose.POOLED):
                per_file = units.setdefault(group, [{} for _ in files])
                got = per_file[f].get(row["task"], [Fraction(0)] * len(values))
                per_file[f][row["task"]] = [a + b for a, b in zip(got, values, strict=True)]
    rng = random.Random(seed)
    out: dict[str, Any] = {}
    for group, per_file in units.items():
        keys = sorted({t for f in per_file for t in f})
        zero = [0.0] * (len(names) + 1)
        vectors = [[[float(v) for v in f.get(t, zero)] for t in keys] for f in per_file]
        combined: dict[tuple[int, ...], list[tuple[float, ...]]] = {}
        draws: list[list[float]] = [[] for _ in names]
        for _ in range(n_boot):
            picked = tuple(sorted(rng.choices(range(len(files)), k=len(files))))
            if picked not in combined:  # the drawn files' sums per task, once per multiset
                combined[picked] = [
                    tuple(map(sum, zip(*(vectors[f][t] for f in picked), strict=True)))
                    for t in range(len(keys))
                ]
            tasks = combined[picked]
            drawn = (tasks[i] for i in rng.choices(range(len(keys)), k=len(keys)))
            sums = [sum(col) for col in zip(*drawn, strict=True)]
            for i in range(len(names)):
                draws[i].append(sums[i] / sums[-1] if sums[-1] else float("nan"))
        rules, contrasts = {}, {}
        for i, s in enumerate(names):
            lo, hi = _interval(list(draws[i]))
            rules[s] = {"score": scored["groups"][group]["rules"][s]["score"], "lo": lo, "hi": hi}
        exact = {s: Fraction(scored["groups"][group]["rules"][s]["score_exact"]) for s in names}
        for i, s in enumerate(names[1:], start=1):
            lo, hi = _interval([a - b for a, b in zip(draws[i], draws[0], strict=True)])
            per = [
                float((sum(v[i] for v in f.values()) - sum(v[0] for v in f.values())) / n)
                if (n := sum(v[-1] for v in f.values()))
                else None
                for f in per_file
            ]
            value = float(exact[s] - exact[choose.NONE])
            contrasts[s] = {"value": value, "lo": lo, "hi": hi, "per_file": per}
        out[group] = {
            "tasks": len(keys),
            "rows": int(sum(v[-1] for f in per_file for v in f.values())),
            "rules": rules,
            "contrasts": contrasts,
        }
    order = [*sorted((g for g in out if g != choose.POOLED), key=_level_key), choose.POOLED]
    return {"scored": scored, "groups": {g: out[g] for g in order}}


def _level_key(group: str) -> tuple[int, str]:
    return (int(group), "") if group.lstrip("-").isdigit() else (10**9, group)


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def format_report(report: Mapping[str, Any]) -> list[str]:
    """Per group (level, then `all`): a SELECT line with tasks, rows and the oracle; one per rule
    (score, exact, interval, tests kept and dropped per task: per row, a task in one file, as
    kept/task and dropped/task; right answers rejected; fallback and tied rows); one per
    contrast X - none (interval, each file's value)."""
    lines = []
    groups = report["scored"]["groups"]
    for group, g in report["groups"].items():
        s = groups[group]
        lines.append(
            f"SELECT level={group} tasks={g['tasks']} rows={g['rows']} oracle={_share(s['oracle'])}"
        )
        n = s["tasks"]
        for name, r in g["rules"].items():
            x = s["rules"][name]
            lines.append(
                f"SELECT level={group} rule={name} score={_share(r['score'])} "
                f"({x['score_exact']}) ({r['lo']:.3f}..{r['hi']:.3f}) "
                f"kept/task={x['tests_kept'] / n:.2f} dropped/task={x['tests_dropped'] / n:.2f} "
                f"right_rejected={_share(x['right_rejected_share'])} "
                f"({x['right_rejected']}/{x['right']}) fallback={x['fallback_tasks']} "
                f"tied={x['tied_tasks']}"
            )
        for name, c in g["contrasts"].items():
            per = ",".join("n/a" if v is None else f"{v:+.3f}" for v in c["per_file"])
            lines.append(
                f"SELECT level={group} contrast={name}-none diff={c['value']:+.3f} "
                f"({c['lo']:+.3f}..{c['hi']:+.3f}) per_file={per}"
            )
    return lines

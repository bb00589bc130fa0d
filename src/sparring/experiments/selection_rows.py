"""The selection study's rows (docs/results/selection-2026-12-06-plan.md): N sampled answers a
task, each judged, and each test source's tests with every answer's verdict on them, as
sparring.evaluation.choose's rows.

For each problem (the command's: held-out new tasks, sparring.experiments.selection_tasks), the
answerer's N answers are sampled as the pre-check samples them (`sample_model` under `seed`) and
judged by the pre-check's `judge` (one run of every test on each answer): `given` (passes the K
given tests) and `right` (passes every one of the problem's tests, the stated case included).
Each test source writes tests for the problem as the reward sees it (`given_view`: the K given
tests shown, the rest withheld):
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

Reuse (`reuse_error`, `extend_rows`): an earlier rows file's answers (code and flags) and every
source's tests and verdicts are kept as filed; only the sources it lacks write tests, and every
filed answer runs on those. So one answerer's answers are sampled once and each writer seed's
tests are added as that writer finishes (one rows file a writer seed).

Covers: `parse_sources`, `source_tests`, `build_rows` (planted answers and completions welcome),
`reuse_error`, `extend_rows`, `run_selection` (sampling, then `build_rows` or `extend_rows` in
one Sandbox). Does not cover: the command's arguments (sparring.cli.precheck), which problems
(sparring.experiments.selection_tasks), choosing and scoring (sparring.evaluation.choose), the
report (sparring.experiments.selection_report).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparring import progress
from sparring.evaluation import choose
from sparring.experiments.precheck import generator_kept, judge
from sparring.problems import Problem
from sparring.problems.families import family_and_level, task_tag

FUZZ, BASE, WRITER = "fuzz", "base", "writer"
# the settings a reused rows file must share with the command (its tasks are checked apart)
REUSE_SETTINGS = ("seed", "levels", "model", "n", "given_tests", "k", "generator_samples")


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
        # "-" joins the report's contrasts (writer-none): a name with one would read two ways
        if name == choose.NONE or any(c in name for c in (choose.UNION, "-", ":", "=", ",")):
            raise ValueError(f"source {spec!r}: name {name!r} is reserved or has + - : = ,")
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

    _, _, flags = judge(problems, texts, given_tests, sandbox)
    views = [given_view(p, given_tests) for p in problems]
    tests, written = _sources_tests(cfg, views, sources, completions, k, seed, sandbox)
    codes = [
        [extract_code(t, p.function_name) for t in outs]
        for p, outs in zip(problems, texts, strict=True)
    ]
    ran = _run_answers(problems, codes, tests, sandbox)
    rows, at = [], 0
    for p, cs, verdicts in zip(problems, codes, ran, strict=True):
        judged = flags[at : at + len(cs)]
        at += len(cs)
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


def _sources_tests(
    cfg: Any,
    views: Sequence[Problem],
    sources: Sequence[Source],
    completions: Mapping[str, Mapping[str, Sequence[str]]],
    k: int,
    seed: int,
    sandbox: Any,
) -> tuple[dict[str, dict[str, list[dict[str, Any]]]], dict[str, dict[str, int]]]:
    """`source_tests` of every source: ({source: {problem id: tests}}, {source: {problem id:
    tests proposed}})."""
    tests, written = {}, {}
    for s in sources:
        progress.say(f"select: {s.name}'s tests for {len(views)} problems, kept and validated")
        tests[s.name], written[s.name] = source_tests(
            cfg, views, s, completions.get(s.name, {}), k, seed, sandbox
        )
    return tests, written


def _run_answers(
    problems: Sequence[Problem],
    codes: Sequence[Sequence[str | None]],
    tests: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
    sandbox: Any,
) -> list[dict[str, list[list[bool | None]]]]:
    """Per problem, {source: per answer its verdict on each of the source's tests}: every
    answer with code runs every test of every source (`tests`) in one sandbox request; an
    answer without code runs nothing (None each)."""
    from sparring.sandbox.result_cache import ResultCache, run_cached

    names = list(tests)
    every = {p.id: [e["test"] for s in names for e in tests[s][p.id]] for p in problems}
    jobs = [(c, every[p.id]) for p, cs in zip(problems, codes, strict=True) for c in cs if c]
    progress.say(f"select: {len(jobs)} answers run on the tests of {', '.join(names)}")
    ran = iter(run_cached(sandbox, jobs, ResultCache()) if jobs else [])
    out = []
    for p, cs in zip(problems, codes, strict=True):
        verdicts: dict[str, list[list[bool | None]]] = {s: [] for s in names}
        for c in cs:
            result = next(ran) if c else [None] * len(every[p.id])
            start = 0
            for s in names:
                n = len(tests[s][p.id])
                verdicts[s].append(list(result[start : start + n]))
                start += n
        out.append(verdicts)
    return out


def reuse_error(
    filed: Mapping[str, Any],
    settings: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    problems: Sequence[Problem],
    sources: Sequence[Source],
) -> str:
    """Why a rows file (`rows`, its select.json settings `filed`) cannot be reused by a command
    with `settings` on `problems` with `sources`, in one line ("" when it can): its tasks (the
    same instances: ids and task keys), seed, levels, answerer, N, K, k and completions must be
    the command's, each answer must keep its code, and a source it holds under a --source name
    must be that source."""
    for key in REUSE_SETTINGS:
        if filed.get(key) != settings.get(key):
            return f"its {key} is {filed.get(key)!r}, this command's {settings.get(key)!r}"
    have = {(str(r["meta"].get("id")), r["task"]) for r in rows}
    want = {(p.id, task_tag(p)) for p in problems}
    if have != want:
        only = sorted(i for i, _ in have - want)[:2] + sorted(i for i, _ in want - have)[:2]
        return (
            f"its tasks are not this command's ({len(have - want)} only there, "
            f"{len(want - have)} only here, e.g. {', '.join(only)}): use the same --seed, "
            "--levels, --families, --per-family, config and held-out filter"
        )
    if any("code" not in a for r in rows for a in r["answers"]):
        return "its answers keep no code, so they cannot run new tests"
    specs = filed.get("sources", {})
    for s in sources:
        if s.name in rows[0]["tests"] and specs.get(s.name) != s.spec:
            return (
                f"its source {s.name!r} is {specs.get(s.name)!r}, not --source {s.spec!r}; "
                f"name the new one otherwise (NAME=...)"
            )
    return ""


def extend_rows(
    cfg: Any,
    problems: Sequence[Problem],
    rows: Sequence[Mapping[str, Any]],
    given_tests: int,
    k: int,
    sources: Sequence[Source],
    completions: Mapping[str, Mapping[str, Sequence[str]]],
    seed: int,
    sandbox: Any,
) -> list[dict[str, Any]]:
    """The filed `rows` (checked by `reuse_error`: one a problem) in `problems`' order, each
    with the tests of `sources` (sources the rows lack) added and every filed answer's
    verdicts on them; the answers, their flags and the filed sources are kept as they were."""
    import copy

    from sparring.problems.given_tests import given_view

    by_id = {str(r["meta"].get("id")): r for r in rows}
    old = [by_id[p.id] for p in problems]
    views = [given_view(p, given_tests) for p in problems]
    tests, written = _sources_tests(cfg, views, sources, completions, k, seed, sandbox)
    codes = [[a["code"] for a in r["answers"]] for r in old]
    ran = _run_answers(problems, codes, tests, sandbox)
    out = []
    for p, row, verdicts in zip(problems, old, ran, strict=True):
        new = copy.deepcopy(dict(row))
        for s in sources:
            new["tests"][s.name] = tests[s.name][p.id]
            for answer, got in zip(new["answers"], verdicts[s.name], strict=True):
                answer["verdicts"][s.name] = got
            new["meta"].setdefault("written", {})[s.name] = written[s.name][p.id]
        choose.check_row(new)
        out.append(new)
    return out


def writer_completions(
    cfg: Any, views: Sequence[Problem], sources: Sequence[Source], samples: int, seed: int
) -> dict[str, dict[str, list[str]]]:
    """{source name: {problem id: its completions}} of every generator source (not the fuzzer)
    on `views` (problems as the reward sees them): `samples` a problem under `seed` + 1."""
    from sparring.evaluation.generator_heldout import sample_tests

    completions: dict[str, dict[str, list[str]]] = {}
    for s in (s for s in sources if not s.fuzz):
        progress.say(f"select: {s.name} writes tests for {len(views)} problems x {samples}")
        written = sample_tests(cfg, s.model, views, samples, seed + 1)
        completions[s.name] = dict(zip([p.id for p in views], written, strict=True))
    return completions


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
    reuse: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Samples `n` answers a problem of `model` (default the config's answerer) and
    `generator_samples` completions a problem of each generator source, then `build_rows` in one
    Sandbox; with `reuse` (filed rows, checked by `reuse_error`) samples no answer and has only
    `sources` (the ones the rows lack) write tests: `extend_rows`. {"rows", "timing"}."""
    from sparring.evaluation.calibration import answerer_for, sample_model
    from sparring.problems.given_tests import given_view
    from sparring.sandbox import Sandbox
    from sparring.sandbox.limits import untrusted_limits

    began = time.perf_counter()
    texts: list[list[str]] = []
    if reuse is None:
        answerer = answerer_for(cfg, model)
        texts = sample_model(cfg, answerer, problems, n, seed, label="select")
        del answerer  # the writers load next: one model in memory at a time
    timing = {"sample_s": time.perf_counter() - began}
    progress.say(f"select: {n} answers x {len(problems)} problems in {timing['sample_s']:.0f}s")
    views = [given_view(p, given_tests) for p in problems]
    began = time.perf_counter()
    completions = writer_completions(cfg, views, sources, generator_samples, seed)
    timing["writers_s"] = time.perf_counter() - began
    began = time.perf_counter()
    args = (given_tests, k, sources, completions, seed)
    with Sandbox(untrusted_limits(cfg)) as sb:
        if reuse is None:
            rows = build_rows(cfg, problems, texts, *args, sb)
        else:
            rows = extend_rows(cfg, problems, reuse, *args, sb)
    timing["judge_s"] = time.perf_counter() - began
    return {"rows": rows, "timing": timing}

"""Choosing one of N sampled answers a problem by tests, for `sparring infer --answers N
--choose-by RULE`: the selection study's rule (sparring.evaluation.choose) put to use.

A rule is `none` (the answers that pass the problem's tests, picked among uniformly) or test
sources joined by "+": `fuzz`, `base` (the config's generator) and `writer:PATH` (a trained
writer), e.g. `fuzz+writer:runs/w1/model`. Each source writes up to k tests a problem and
validation keeps the ones the problem's reference passes (`selection_rows.source_tests`): a
source needs every problem's reference solution, and a test that fails it never chooses. Among
the answers passing the problem's own tests (all N when none does: `fallback`), the ones passing
the most kept tests are the tied set; the answer returned is the tied set's first (the lowest
sample index, so a rerun returns the same), and the whole set is reported with every answer's
verdicts, so any other rule can be scored from the output.

Covers: `parse_rule`, `without_reference`, `choose_answers`. Does not cover: sampling the answers
(sparring.serving.inference), the rows and the sources' tests (sparring.experiments.
selection_rows), the rule's exact score (sparring.evaluation.choose).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparring.evaluation import choose
from sparring.experiments.selection_rows import (
    Source,
    build_rows,
    parse_sources,
    writer_completions,
)
from sparring.problems import Problem


def parse_rule(rule: str, base_model: str) -> list[Source]:
    """The sources of `rule` (none: no source); ValueError saying what to write otherwise.

    >>> [(s.name, s.model) for s in parse_rule("fuzz+writer:runs/w1", "m")]
    [('fuzz', ''), ('writer', 'runs/w1')]
    >>> parse_rule("none", "m")
    []
    """
    if rule.strip() == choose.NONE:
        return []
    parts = [p.strip() for p in rule.split(choose.UNION)]
    if not all(parts):
        raise ValueError(f"rule {rule!r}: sources joined by '+', e.g. fuzz+writer:PATH, or none")
    return parse_sources(parts, base_model)


def without_reference(problems: Sequence[Problem]) -> list[Problem]:
    """The problems with no reference solution: no source's tests can be validated on them."""
    return [p for p in problems if not (p.reference_solution or "").strip()]


def choose_answers(
    cfg: Any,
    problems: Sequence[Problem],
    texts: Sequence[Sequence[str]],
    sources: Sequence[Source],
    k: int,
    seed: int,
    writer_samples: int,
) -> list[dict[str, Any]]:
    """Per problem, the rule's choice among `texts[i]` (problems[i]'s answers): {"rule",
    "chosen" (the answer index returned), "tied", "fallback", "passes" (per candidate, kept tests
    passed), "answers" (per answer: passes the problem's tests, its verdicts per source), "tests"
    (per source, the kept tests and how many were dropped)}. ValueError when a source is asked
    for and a problem has no reference solution to validate its tests against."""
    from sparring.sandbox import Sandbox
    from sparring.sandbox.limits import untrusted_limits

    missing = without_reference(problems) if sources else []
    if missing:
        raise ValueError(
            f"{len(missing)} of {len(problems)} problems have no reference solution (first: "
            f"{missing[0].id}): a source's tests are kept only where the reference passes them"
        )
    # every test the problem carries is given: `right` then says the same as `given`
    given = max([len(p.baseline_tests) for p in problems] + [1])
    completions = writer_completions(cfg, problems, sources, writer_samples, seed)
    with Sandbox(untrusted_limits(cfg)) as sandbox:
        rows = build_rows(cfg, problems, texts, given, k, sources, completions, seed, sandbox)
    rule = choose.UNION.join(s.name for s in sources) or choose.NONE
    return [_choice(row, rule) for row in rows]


def _choice(row: dict[str, Any], rule: str) -> dict[str, Any]:
    picked = choose.choose(row, rule)
    return {
        "rule": rule,
        "chosen": picked["tied"][0],
        "tied": picked["tied"],
        "fallback": picked["fallback"],
        "candidates": picked["candidates"],
        "passes": picked["passes"],
        "answers": [{"given": a["given"], "verdicts": a["verdicts"]} for a in row["answers"]],
        "tests": {
            s: {
                "kept": [t["test"] for t in ts if t["valid"]],
                "dropped": sum(not t["valid"] for t in ts),
            }
            for s, ts in row["tests"].items()
        },
    }

"""Problem sources: what a run trains on and what it is measured on, each source splitting its
own problems.

`problem_sets(data, seed)` asks each source a config's data section names and merges what
they answer, a `SourceSets` each: training problems, named held-out sets (each problem tagged
`heldout:<set>`), the held-out problems dropped per set, and whether part of the training
problems may become the untagged validation set. The source kinds, one function each:

- files (`file_sets`: bundled, humaneval, FILE, DIR or s3://... in data.train): every problem
  trains, and data.val_fraction of them may be held out as validation problems (materialize
  splits them after the sandbox check, `ProblemSets.split_val`);
- the problem families (`families` in data.train: sparring.problems.families.sets.configured_sets):
  generated training instances, all of them trained on, and the held-out sets split by task
  key (new_tasks, new_ops, trained_tasks, new_families);
- held-out sources (`heldout_source_sets`, each of data.heldout): the data.val_fraction part of
  the source, named after it, less the problems whose prompt (names taken out) is a training
  prompt;
- the evaluation set (`evaluation_set`: data.eval, HumanEval by default, cut to
  data.humaneval_limit), which every snapshot is scored on.

Covers: the dispatch and the merge. Does not cover: loading files (sparring.problems), the
family split (sparring.problems.families.sets), checking and writing the datasets
(sparring.phases.materialize).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sparring.problems import Problem, heldout_tagged, load_source, load_sources, split

FAMILIES_SOURCE = "families"  # the data.train entry that generates the problem families


@dataclass
class SourceSets:
    """What one source yields: training problems and named held-out sets (each problem tagged
    `heldout:<set>`), the held-out problems dropped per set for showing a training task or
    prompt, the held-out problems left computing a training task (must be 0), and whether
    data.val_fraction of the training problems may become validation problems."""

    train: list[Problem]
    heldout: dict[str, list[Problem]] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    task_overlap: int = 0
    val_split: bool = False


@dataclass
class ProblemSets:
    """What a run trains on and what it is measured on and never trains on (each held-out
    problem tagged `heldout:<set>`), with the held-out instances dropped per set for showing a
    training task or prompt, the overlap left after the drops (must be 0), and the ids of the
    training problems of which data.val_fraction may become validation problems."""

    train: list[Problem]
    heldout: list[Problem]
    dropped: dict[str, int] = field(default_factory=dict)
    task_overlap: int = 0
    val_pool: frozenset[str] = frozenset()

    def split_val(
        self, problems: Sequence[Problem], val_fraction: float, seed: int
    ) -> tuple[list[Problem], list[Problem]]:
        """(train, validation) of `problems` (the training problems left after a check): the
        ones of sources that allow it split by `sparring.problems.split`, the rest all train
        (generated instances: their held-out sets are fresh draws)."""
        train, val = split([p for p in problems if p.id in self.val_pool], val_fraction, seed)
        return [*train, *(p for p in problems if p.id not in self.val_pool)], val


def file_sets(sources: list[str]) -> SourceSets:
    """The problems of files, folders, s3:// URIs, `bundled` or `humaneval` (duplicate ids
    refused): all train, part of them may become validation problems."""
    return SourceSets(train=load_sources(sources), val_split=True)


def family_source_sets(data: Any) -> SourceSets:
    """The problem families as data.families asks for them, split by task."""
    from sparring.problems.families.sets import configured_sets

    sets = configured_sets(data.families)
    return SourceSets(sets.train, sets.heldout, sets.dropped, sets.overlap)


def heldout_source_sets(
    source: str, train_prompts: set[str], val_fraction: float, seed: int
) -> SourceSets:
    """The held-out part of `source` (its `split` validation part), named after it, less the
    problems whose prompt is a training prompt (counted)."""
    from sparring.problems.families.identity import prompt_key

    _, part = split(load_source(source), val_fraction, seed)
    kept = [p for p in part if prompt_key(p) not in train_prompts]
    return SourceSets(
        train=[],
        heldout={source: heldout_tagged(kept, source)},
        dropped={source: len(part) - len(kept)},
    )


def _training_sources(data: Any) -> list[SourceSets]:
    files = [s for s in data.train if s != FAMILIES_SOURCE]
    sets = [file_sets(files)] if files else []
    if FAMILIES_SOURCE in data.train:
        sets.append(family_source_sets(data))
    return sets


def problem_sets(data: Any, seed: int) -> ProblemSets:
    """For a config's data section (`data`) and seed: the training problems of every source of
    data.train (files first, then the families) and the held-out sets: each training source's
    own, then the held-out part of each data.heldout source (whose drops depend on the training
    prompts)."""
    from sparring.problems.families.identity import prompt_key

    parts = _training_sources(data)
    train = [p for part in parts for p in part.train]
    train_prompts = {prompt_key(p) for p in train}
    parts += [
        heldout_source_sets(source, train_prompts, data.val_fraction, seed)
        for source in data.heldout
    ]
    dropped: dict[str, int] = {}
    for part in parts:
        dropped.update(part.dropped)
    return ProblemSets(
        train=train,
        heldout=[p for part in parts for problems in part.heldout.values() for p in problems],
        dropped=dropped,
        task_overlap=sum(part.task_overlap for part in parts),
        val_pool=frozenset(p.id for part in parts if part.val_split for p in part.train),
    )


def evaluation_set(data: Any) -> list[Problem]:
    """For a config's data section: the problems of `data.eval` (HumanEval, its first
    `data.humaneval_limit`, or any other
    source), which evaluation scores every snapshot on; SparringError naming the field when it
    cannot be loaded or holds none."""
    from sparring.errors import SparringError
    from sparring.problems import load_humaneval

    source, limit = data.eval, data.humaneval_limit
    try:
        problems = load_humaneval(limit) if source == "humaneval" else load_source(source)
    except SparringError:
        raise
    except Exception as exc:
        raise SparringError(f"data.eval: cannot load {source!r}: {exc}") from None
    if not problems:
        raise SparringError(f"data.eval: {source!r} holds no problems")
    return problems[:limit] if limit and source == "humaneval" else problems


@dataclass
class CheckedSets:
    """A run's problems as materialize writes them: training (with the given view when
    data.given_tests is set), validation (the split's part and every held-out set) and
    evaluation, each with what trivial code passes; how many were loaded, passed the reference
    check and failed it; the sets they came from (drops, task overlap); and how much of their
    tests honest credit leaves (`discrimination_metrics`)."""

    train: list[Problem]
    val: list[Problem]
    eval: list[Problem]
    loaded: int
    checked: int
    failing: int
    sets: ProblemSets
    honest: dict[str, Any]


def checked_sets(data: Any, seed: int, untrusted: Any, trusted: Any) -> CheckedSets:
    """A config's data section (`data`) drawn (`problem_sets`), capped at data.max_problems,
    every reference solution run on its tests in the sandbox under `untrusted` limits (a problem
    whose reference fails is dropped, with a warning), split train/validation, the evaluation
    set added, what trivial code passes computed under `trusted` limits, and the given view
    applied last (after the trivial run over every test: only credited tests are withheld)."""
    import logging
    import random

    from sparring.errors import SparringError
    from sparring.problems import compute_trivial_passes
    from sparring.problems.given_tests import given_view
    from sparring.sandbox import Sandbox

    log = logging.getLogger(__name__)
    sets = problem_sets(data, seed)
    problems, heldout = sets.train, sets.heldout
    for name, n in sets.dropped.items():
        if n:
            log.warning("held-out set %s: dropped %d showing a training task or prompt", name, n)
    loaded = len(problems)
    if data.max_problems and len(problems) > data.max_problems:
        keep = set(p.id for p in random.Random(seed).sample(problems, data.max_problems))
        problems = [p for p in problems if p.id in keep]
    with Sandbox(untrusted) as sb:
        reports = sb.run_many([(p.reference_solution, p.baseline_tests) for p in problems])
        heldout_reports = sb.run_many([(p.reference_solution, p.baseline_tests) for p in heldout])
    infra = [p.id for p, r in zip(problems, reports, strict=True) if r.infra_error]
    if problems and len(infra) == len(problems):
        raise SparringError(
            "materialize: the sandbox failed on every reference solution "
            f"({reports[0].infra_error})"
        )
    checked = [p for p, r in zip(problems, reports, strict=True) if r.pass_rate == 1.0]
    for p, r in zip([*problems, *heldout], [*reports, *heldout_reports], strict=True):
        if r.pass_rate != 1.0:
            log.warning("dropping %s: reference solution fails its tests (%s)", p.id, r.pass_rate)
    heldout = [p for p, r in zip(heldout, heldout_reports, strict=True) if r.pass_rate == 1.0]
    if not checked:
        raise SparringError("materialize: no problem's reference solution passes its tests")
    train, val = sets.split_val(checked, data.val_fraction, seed)
    val = [*val, *heldout]
    eval_set = evaluation_set(data)
    with Sandbox(trusted) as sb:  # baseline and HumanEval tests are trusted
        train, val, eval_set = (
            compute_trivial_passes(group, sb) for group in (train, val, eval_set)
        )
    if data.given_tests:  # the reward sees K tests of a training problem; held-out all
        train = [given_view(p, data.given_tests) for p in train]
    honest = discrimination_metrics([*train, *val])
    for pid in honest.pop("ids_without"):
        log.warning("%s: every test is passed by some trivial solution: it earns no reward", pid)
    return CheckedSets(
        train, val, eval_set, loaded, len(checked), len(problems) - len(checked), sets, honest
    )


def discrimination_metrics(problems: list[Problem]) -> dict[str, Any]:
    """How much of the problems' tests trivial code passes (what honest credit leaves)."""
    from sparring.problems.trivial import discriminating_indices

    n_tests = sum(len(p.baseline_tests) for p in problems)
    n_disc = 0
    without: list[str] = []
    for p in problems:
        k = len(discriminating_indices(len(p.baseline_tests), p.trivial_passes))
        n_disc += k
        if k == 0:
            without.append(p.id)
    return {
        "tests_discriminating_share": n_disc / n_tests if n_tests else 0.0,
        "problems_without_discriminating_tests": len(without),
        "ids_without": without,
    }

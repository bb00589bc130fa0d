"""Config sections of what is trained and how: the models of each role, LoRA, GRPO, the step
counts of the staged schedule, the answerer's curriculum coach, the supervised warm start, the
answerer's filtered fine-tuning, and the self-play engine's game section.

Covers: each field with its default, bounds and one-line doc, and the one check a section makes
on itself (`grpo.max_completion_length`).

Does not cover: the problems, rewards and sandbox sections (sparring.config.problems), where a run
runs (sparring.config.infra), checks across sections (sparring.config.checks), or what the fields
do (each consumer reads its own section).
"""

# `doc_field(...)` returns a dataclasses.field carrying a field's doc and bounds
# ruff: noqa: RUF009

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sparring.config.fields import ConfigError, doc_field


@dataclass(frozen=True)
class ModelConfig:
    name: str = doc_field(
        "tiny-random", "HF id, local folder, or built-in: smollm2-135m, tiny-random"
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = doc_field(
        "auto", "weights dtype; auto = bf16 on CUDA when grpo.bf16, else float32"
    )
    device: Literal["auto", "cpu", "cuda", "mps"] = doc_field(
        "auto", "auto picks cuda, mps, then cpu"
    )


@dataclass(frozen=True)
class ModelsConfig:
    answerer: ModelConfig = doc_field(ModelConfig, "model of the answerer (solver) role")
    generator: ModelConfig = doc_field(ModelConfig, "model of the generator (test writer) role")


@dataclass(frozen=True)
class LoraConfig:
    r: int = doc_field(8, "LoRA rank", ge=1, le=1024)
    alpha: int = doc_field(16, "LoRA alpha (scaling = alpha / r)", ge=1)
    dropout: float = doc_field(0.05, "dropout on the LoRA branch", ge=0.0, le=0.9)
    target_modules: list[str] = doc_field(
        ["q_proj", "k_proj", "v_proj", "o_proj"], "module names that get adapters"
    )
    bias: Literal["none", "all", "lora_only"] = doc_field("none", "which biases are trained")
    task_type: Literal["CAUSAL_LM"] = doc_field("CAUSAL_LM", "PEFT task type")
    top_layers: int = doc_field(
        0,
        "adapt only the top N decoder layers (0 = all): the backward pass stops at the lowest "
        "adapted layer, so fewer layers train faster",
        ge=0,
    )


@dataclass(frozen=True)
class GrpoConfig:
    num_generations: int = doc_field(4, "completions per prompt (the GRPO group)", ge=2, le=64)
    epsilon: float = doc_field(0.2, "PPO-style clipping range", gt=0.0, le=1.0)
    beta: float = doc_field(
        0.0, "KL coefficient against the reference model (0 = no ref model)", ge=0.0
    )
    loss_type: Literal["grpo", "dapo", "dr_grpo", "bnpo"] = doc_field("dapo", "TRL GRPO loss type")
    learning_rate: float = doc_field(1e-5, "optimizer learning rate", gt=0.0, le=1.0)
    max_prompt_length: int = doc_field(512, "prompt tokens kept (left-truncated)", ge=16)
    max_completion_length: int = doc_field(
        128, "generated tokens per completion (0 = auto: sized from the reference solutions)", ge=0
    )
    stop_at_fence: bool = doc_field(
        True, "end a completion once its first python code block is closed"
    )
    mask_truncated_completions: bool = doc_field(
        True, "leave completions cut at max_completion_length out of the loss (TRL)"
    )
    drop_flat_groups: bool = doc_field(
        True, "drop groups whose rewards are all equal from the loss (DAPO dynamic sampling)"
    )
    refill_flat_batches: int = doc_field(
        1, "when every group of a step is flat, sample up to this many fresh batches", ge=0
    )
    skip_flat_problems: bool = doc_field(
        False,
        "within a phase, do not sample again a problem whose last group was flat (all passed or "
        "none did): its group goes to a problem not seen flat (torch backend, one process)",
    )
    skip_mastered_at: float = doc_field(
        1.0,
        "with skip_flat_problems, also skip a problem whose last group's mean reward reached "
        "this (in reward units; the answerer's honest reward lies in [0, 1]): its next group is "
        "likely all-pass and would train nothing. 0.875 = at most one of 8 short of a full "
        "pass; 1.0 = only groups that were flat",
        gt=0.0,
    )
    revisit_order: Literal["dataset", "lowest_reward"] = doc_field(
        "dataset",
        "with skip_flat_problems, where a group goes once its problem is marked flat: dataset = "
        "the next problem not marked, in dataset order; lowest_reward = a problem not yet "
        "sampled in the phase, else the one whose last group earned the least (problems learn "
        "between visits, and a nearly solved one comes back all-pass); a problem TRL draws "
        "again is re-pointed the same way",
    )
    temperature: float = doc_field(0.9, "sampling temperature during training", gt=0.0, le=5.0)
    top_p: float = doc_field(1.0, "nucleus sampling during training", gt=0.0, le=1.0)
    sampler: Literal["refill", "generate"] = doc_field(
        "refill",
        "how training completions are sampled (torch backend, no vLLM): refill = Sparring's "
        "decoder that gives a finished row's slot to the next one (needs stop_at_fence and a "
        "plain KV cache, else generate is used); generate = HF generate per batch",
    )
    rollout_batch_size: int = doc_field(
        16, "rows the refill sampler decodes at once (training and evaluation)", ge=1
    )
    overlap_scoring: bool = doc_field(
        True,
        "with the refill sampler, run the sandbox on finished completions while the rest of "
        "the batch still samples (rewards unchanged; a step costs about max(sampling, scoring))",
    )
    merge_lora_sampling: bool = doc_field(
        True,
        "sample training completions from the LoRA adapter merged into the base weights, which "
        "are restored exactly before the update (refill sampler, unsharded weights)",
    )
    share_prompt_forward: bool = doc_field(
        True,
        "in the loss, run each distinct prompt once per batch and share its KV cache with "
        "the group's rows (same log-probs as TRL's per-row forward, fewer tokens)",
    )
    per_device_batch_size: int = doc_field(4, "completions per device per step", ge=1)
    loss_micro_batch: int = doc_field(
        0,
        "rows per forward and backward pass of the loss, the step's gradients accumulated "
        "over them with the loss normalised over the whole step (the same update up to the "
        "order of float additions); a step's autograd graph holds this many rows, not all of "
        "them: the most memory a training phase takes. 0 = every row of the step at once",
        ge=0,
    )
    gradient_accumulation_steps: int = doc_field(1, "micro-batches per optimizer step", ge=1)
    use_vllm: bool = doc_field(
        False, "generate with vLLM through TRL (weight sync needs a CUDA GPU)"
    )
    bf16: bool = doc_field(False, "bf16 mixed precision (GPU only)")
    logging_steps: int = doc_field(1, "log metrics every N steps", ge=1)

    def __post_init__(self) -> None:
        if 0 < self.max_completion_length < 4:
            raise ConfigError(
                f"grpo.max_completion_length: {self.max_completion_length} is too small; "
                "use 0 (auto) or >= 4"
            )


@dataclass(frozen=True)
class StepsConfig:
    answerer: int = doc_field(2, "GRPO steps of each answerer phase", ge=0)
    generator: int = doc_field(2, "GRPO steps of each generator phase", ge=0)
    generator_tests: int = doc_field(
        3, "tests the generator's prompt asks for per completion (its reward reads up to 8)",
        ge=1, le=8,
    )  # fmt: skip
    generator_stated_cases: bool = doc_field(
        False, "the generator's prompt asks first for a test of each special case the problem "
        "statement names, then edge cases",
    )  # fmt: skip
    fuzz_tests: int = doc_field(
        3,
        "generator_mode fuzz: tests written per training problem (k), each kept only if the "
        "validate phase would bank it; fewer where fewer of the drawn inputs qualify",
        ge=1, le=16,
    )  # fmt: skip
    final_tests_all: bool = doc_field(
        False,
        "write the trained generator's final tests for every training problem (any of them may "
        "be drawn by the next answerer phase, which draws after validation), not only for its "
        "draw (with steps.screen_pool, only the draw's problems whose frozen answers differed)",
    )
    final_samples: int = doc_field(
        1,
        "completions the trained generator writes per problem for its final tests, their tests "
        "in order: with steps.final_tests_all and a bank cap, more of them leave fewer problems "
        "without a valid test",
        ge=1, le=16,
    )  # fmt: skip
    bank_per_problem: int = doc_field(
        0,
        "the most banked tests a training problem holds (k), for the learned generator's tests "
        "and generator_mode fuzz's alike: validation banks a problem's first valid tests in the "
        "order written until it holds k, and refuses the rest; with generator_mode fuzz, "
        "steps.fuzz_tests must equal it. 0 = no cap",
        ge=0,
    )
    alternating: int = doc_field(
        0, "extra alternating answerer/generator step pairs per round", ge=0
    )
    frozen_samples: int = doc_field(
        4,
        "solutions sampled once per problem from the frozen answerer (rewards.generator: catch "
        "pays only for sampled answers that pass the given tests, so it wants 8-16: a problem "
        "with none has nothing to catch; generator_catchable_share says how many had one)",
        ge=1,
    )
    frozen_rows: int = doc_field(
        0,
        "rows decoded at once where the generator phase samples without training (the frozen "
        "answerer's answers, the trained generator's final tests); 0: grpo.rollout_batch_size. "
        "Wider pays on training problems, whose prompts are alike in length; evaluation's mixed "
        "held-out prompts keep grpo.rollout_batch_size",
        ge=0,
    )
    problems_per_phase: int = doc_field(8, "training problems drawn per phase (0 = all)", ge=0)
    easy_first: bool = doc_field(
        False, "draw problems with no pass-rate estimate yet easy, then medium, then hard"
    )
    screen_pool: bool = doc_field(
        False,
        "in the generator phase, sample the frozen answerer on every training problem, not "
        "only the generator's draw: both phases then draw the problems whose samples differed "
        "first, and with grpo.skip_flat_problems the answerer does not sample a problem "
        "screened flat while others remain (costs frozen_samples completions per training "
        "problem; where no generator phase precedes an answerer phase, as with phase_schedule: "
        "answerer, the answerer phase screens the pool itself, so the given-tests arm draws "
        "as the self-play arm does)",
    )


@dataclass(frozen=True)
class CoachConfig:
    enabled: bool = doc_field(
        False,
        "answerer: train each problem family at one level, moved by its recent rewards "
        "(reasoning-gym's curriculum rule; data.train needs families at several levels)",
    )
    last_k: int = doc_field(
        32, "rewards of the last samples at a family's level the rule weighs", ge=1
    )
    success_threshold: float = doc_field(
        0.7, "their mean above this moves the family one level up", ge=0.0, le=1.0
    )
    failure_threshold: float = doc_field(
        0.3, "their mean below this moves the family one level down", ge=0.0, le=1.0
    )
    start_level: int = doc_field(
        0, "each family's first level: the lowest of its levels at or above this", ge=0, le=3
    )


@dataclass(frozen=True)
class WarmStartConfig:
    steps: int = doc_field(
        0, "SFT steps of the answerer on train reference solutions (0 = off)", ge=0
    )
    learning_rate: float = doc_field(2e-4, "SFT learning rate (2e-4 suits LoRA)", gt=0.0, le=1.0)
    batch_size: int = doc_field(4, "examples per SFT step", ge=1)
    max_length: int = doc_field(512, "tokens per example (prompt + solution), truncated", ge=16)


@dataclass(frozen=True)
class FilteredSftConfig:
    samples: int = doc_field(
        0,
        "answers sampled per training problem by each answerer phase, which then fine-tunes on "
        "the ones passing `filter` instead of running GRPO (0 = off: GRPO)",
        ge=0,
        le=256,
    )
    filter: Literal["every", "given"] = doc_field(
        "every",
        "answers kept: every (pass every test of the problem, the stated case included: the "
        "oracle filter) or given (pass the data.given_tests given tests)",
    )
    steps: int = doc_field(
        16, "SFT steps on the kept answers (warm_start's learning rate, batch and length)", ge=1
    )


@dataclass(frozen=True)
class GameConfig:
    name: str = doc_field("", "self-play game of `sparring game run` (see `sparring game list`)")
    model: str = doc_field("", "base model of every role (empty = models.answerer.name)")
    steps: int = doc_field(
        4, "training steps (each: play, assign credit, one update per role)", ge=0
    )
    episodes_per_step: int = doc_field(4, "artifacts (problems, topics, ...) played per step", ge=1)
    group_size: int = doc_field(4, "plays of each artifact per step (the GRPO group)", ge=1, le=64)
    eval_episodes: int = doc_field(8, "held-out episodes played before and after training", ge=0)
    credit: Literal["grpo", "rae", "constant"] = doc_field(
        "grpo", "credit assigner: grpo (per level), rae (running baseline), constant"
    )
    trainable: list[str] = doc_field([], "roles that learn (empty = the game's default)")
    judge: str = doc_field(
        "", "frozen role whose adapter the LLM judge uses (empty = the base model)"
    )
    temperature: float = doc_field(
        0.0, "sampling temperature of every role (0 = the role's own)", ge=0
    )
    max_tokens: int = doc_field(0, "token limit of every role's turn (0 = the role's own)", ge=0)
    concurrency: int = doc_field(
        64, "episodes played at once (their model calls are batched)", ge=1
    )
    options: dict[str, float] = doc_field({}, "game-specific numbers, e.g. turns, solvers, players")

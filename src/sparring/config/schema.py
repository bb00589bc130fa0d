"""The top-level Config: the run's own fields (name, seeds, rounds, topology, phase schedule,
tuning mode, backend) and one field per section, plus the config as plain data and its digest.

Covers: `Config` (with `model_for`, the model of a role under either topology, and `digest`, a
short stable hash of the resolved config) and `to_dict`.

Does not cover: the sections' fields (sparring.config.training, .problems, .infra), reading YAML
and `--set` (sparring.config.load), validation (sparring.config.validate, .checks).
"""

# `doc_field(...)` returns a dataclasses.field carrying a field's doc and bounds
# ruff: noqa: RUF009

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from sparring.config.fields import doc_field
from sparring.config.infra import (
    DistributedConfig,
    KubernetesConfig,
    ServingConfig,
    StorageConfig,
    TrackingConfig,
)
from sparring.config.problems import (
    DataConfig,
    ReasoningConfig,
    RewardsConfig,
    SandboxConfig,
    SelectionConfig,
)
from sparring.config.training import (
    CoachConfig,
    FilteredSftConfig,
    GameConfig,
    GrpoConfig,
    LoraConfig,
    ModelConfig,
    ModelsConfig,
    StepsConfig,
    WarmStartConfig,
)


@dataclass(frozen=True)
class Config:
    name: str = doc_field("sparring", "experiment name: MLflow run names and output folders")
    seed: int = doc_field(0, "random seed of sampling, splits and training", ge=0)
    training_seed: int = doc_field(
        0,
        "a further seed of training alone (GRPO draws, sampling, LoRA init): runs that differ in "
        "it alone share their problems and base scores, so their held-out gains pool "
        "(`sparring eval pool`); 0 leaves training seeded by `seed` alone",
        ge=0,
    )
    seed_per_run: bool = doc_field(
        False,
        "pipeline runs only: each run's training_seed is drawn from its MLflow parent run id, so "
        "the runs of one schedule (one compiled config) do not replay each other's draws; the "
        "seed a run trained with is in its start record and its parent run's tag "
        "sparring.training_seed (`sparring schedule` turns it on)",
    )
    rounds: int = doc_field(2, "self-play rounds (unrolled into the DAG)", ge=1, le=100)
    topology: Literal["dual", "shared"] = doc_field("dual", "dual: two models; shared: one base")
    shared_model: str = doc_field("", "base model of both roles when topology is shared")
    phase_schedule: Literal[
        "generator_answerer", "answerer_generator_answerer", "answerer", "generator"
    ] = doc_field(
        "generator_answerer",
        "phase order within a round; answerer: no generator phase and no bank (the given tests "
        "alone, the arm self-play is measured against); generator: the writer alone (its "
        "phase against the frozen base answerer and the validation of its tests; no answerer "
        "phase, and the evaluation scores the base answerer only for the writers' held-out "
        "pool; the final generator is registered)",
    )
    generator_mode: Literal["tests", "problems", "fuzz"] = doc_field(
        "tests",
        "tests: adversarial unit tests; problems: proposer of new problems; fuzz: a generator "
        "that does not learn, in the generator phase's place: steps.fuzz_tests tests per "
        "training problem, inputs drawn by hypothesis from the parameters' declared types, "
        "expected values from the reference (issue 73's arm R; no model, no GRPO)",
    )
    tuning_mode: Literal["full", "lora"] = doc_field("lora", "full fine-tune or LoRA adapters")
    backend: Literal["torch", "mlx"] = doc_field("torch", "torch (TRL) or mlx (Apple Silicon)")
    dry_run: bool = doc_field(False, "materialize everything, skip GRPO updates")
    lora: LoraConfig = doc_field(LoraConfig, "LoRA settings (tuning_mode: lora)")
    models: ModelsConfig = doc_field(ModelsConfig, "models of each role (topology: dual)")
    grpo: GrpoConfig = doc_field(GrpoConfig, "GRPO settings shared by both roles")
    steps: StepsConfig = doc_field(StepsConfig, "step counts of the staged schedule")
    coach: CoachConfig = doc_field(CoachConfig, "curriculum of the answerer over family levels")
    warm_start: WarmStartConfig = doc_field(
        WarmStartConfig, "supervised warm start of the answerer before self-play"
    )
    filtered_sft: FilteredSftConfig = doc_field(
        FilteredSftConfig, "answerer phases that fine-tune on their own answers a filter keeps"
    )
    rewards: RewardsConfig = doc_field(RewardsConfig, "reward weights")
    selection: SelectionConfig = doc_field(SelectionConfig, "checkpoint selection and promotion")
    reasoning: ReasoningConfig = doc_field(ReasoningConfig, "answerer reasoning stages")
    sandbox: SandboxConfig = doc_field(SandboxConfig, "limits of untrusted code execution")
    data: DataConfig = doc_field(DataConfig, "problem sources and splits")
    tracking: TrackingConfig = doc_field(TrackingConfig, "MLflow")
    storage: StorageConfig = doc_field(StorageConfig, "pipeline root and S3")
    kubernetes: KubernetesConfig = doc_field(KubernetesConfig, "cluster settings")
    game: GameConfig = doc_field(GameConfig, "self-play engine: the game and how it is trained")
    distributed: DistributedConfig = doc_field(
        DistributedConfig, "multi-process training recipe (torchrun, TrainJob nodes)"
    )
    serving: ServingConfig = doc_field(
        ServingConfig, "sampling through an inference server; KServe"
    )

    def for_run(self, run_id: str) -> Config:
        """This config as a pipeline run trains with it: with `seed_per_run`, training_seed drawn
        from the run's id (stable across its tasks and resumes; never 0, which means "seed
        alone") and seed_per_run off, so deriving again changes nothing. Otherwise itself.

        >>> cfg = Config(seed_per_run=True, training_seed=3)
        >>> one, two = cfg.for_run("run-a"), cfg.for_run("run-b")
        >>> one.training_seed != two.training_seed, one == cfg.for_run("run-a")
        (True, True)
        >>> one.for_run("run-b") == one, Config().for_run("run-a") == Config()
        (True, True)
        """
        if not (self.seed_per_run and run_id):
            return self
        digest = hashlib.sha256(f"{self.training_seed}:{run_id}".encode()).hexdigest()
        seed = 1 + int(digest[:8], 16) % (2**31 - 1)
        return dataclasses.replace(self, training_seed=seed, seed_per_run=False)

    def model_for(self, role: str) -> ModelConfig:
        """The model config of a role, honouring the shared topology."""
        if self.topology == "shared":
            base = self.models.answerer
            return dataclasses.replace(base, name=self.shared_model)
        return getattr(self.models, role)

    def sampling_rows(self) -> int:
        """Rows a phase decodes at once outside its GRPO step: `steps.frozen_rows`, else
        `grpo.rollout_batch_size`."""
        return self.steps.frozen_rows or self.grpo.rollout_batch_size

    def digest(self) -> str:
        """A short stable hash of the resolved config (for checkpoints and caching)."""
        text = json.dumps(to_dict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def to_dict(cfg: Any) -> dict[str, Any]:
    """The config as plain data (the inverse of from_dict)."""
    return dataclasses.asdict(cfg)

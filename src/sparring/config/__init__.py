"""Experiment config: one YAML file validated into typed, frozen dataclasses.

Covers: the schema (every field with its default and a one-line doc), loading YAML, `--set
key.path=value` overrides, validation with one-line errors that name the field and what is
allowed, a stable digest, and rendering the resolved config back to YAML. The schema is the
config reference (docs/config-reference.md is generated from it).

This package's face: it hands on the names callers import (`from sparring.config import ...`)
and holds no logic. The modules, each with what it covers:
  fields     ConfigError and `doc_field`, the field helper carrying a field's doc and bounds
  training   models, LoRA, GRPO, steps, the coach, the warm start, filtered SFT, the game
  problems   data sources and families, rewards, selection, reasoning stages, the sandbox
  infra      tracking, storage, Kubernetes, the distributed recipe, serving
  schema     the top-level Config (model_for, digest) and to_dict
  validate   raw data into sections: types, bounds, unknown keys
  checks     checks across fields; processes_per_node
  load       read_yaml, --set overrides, from_dict, load_config, dump_yaml
  reference  the config reference (docs/config-reference.md)

Does not cover: what the fields do (each consumer reads its own section) or the CLI around it.
Imports no heavy framework: validation is plain Python and runs in milliseconds.
"""

from sparring.config.checks import processes_per_node
from sparring.config.fields import ConfigError
from sparring.config.infra import (
    DistributedConfig,
    GpuConfig,
    ImagesConfig,
    KubernetesConfig,
    SandboxPodConfig,
    SecretsConfig,
    ServingConfig,
    StorageConfig,
    Toleration,
    TrackingConfig,
    TrainerConfig,
)
from sparring.config.load import (
    apply_overrides,
    dump_yaml,
    from_dict,
    load_config,
    parse_override,
    read_yaml,
)
from sparring.config.problems import (
    REASONING_STAGES,
    DataConfig,
    FamiliesConfig,
    ReasoningConfig,
    ReasoningStage,
    RewardsConfig,
    SandboxConfig,
    SelectionConfig,
)
from sparring.config.reference import reference, reference_markdown
from sparring.config.schema import Config, to_dict
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

__all__ = [
    "REASONING_STAGES",
    "CoachConfig",
    "Config",
    "ConfigError",
    "DataConfig",
    "DistributedConfig",
    "FamiliesConfig",
    "FilteredSftConfig",
    "GameConfig",
    "GpuConfig",
    "GrpoConfig",
    "ImagesConfig",
    "KubernetesConfig",
    "LoraConfig",
    "ModelConfig",
    "ModelsConfig",
    "ReasoningConfig",
    "ReasoningStage",
    "RewardsConfig",
    "SandboxConfig",
    "SandboxPodConfig",
    "SecretsConfig",
    "SelectionConfig",
    "ServingConfig",
    "StepsConfig",
    "StorageConfig",
    "Toleration",
    "TrackingConfig",
    "TrainerConfig",
    "WarmStartConfig",
    "apply_overrides",
    "dump_yaml",
    "from_dict",
    "load_config",
    "parse_override",
    "processes_per_node",
    "read_yaml",
    "reference",
    "reference_markdown",
    "to_dict",
]

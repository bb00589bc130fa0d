"""Checks across the fields of a validated Config: what each field allows given the others
(topology and tuning mode, batch size and group size, reasoning stages and their order, pass@k
and samples, known family names and levels, what each backend supports, TrainJob timeouts, vLLM
modes, a study's tracking fields), each refused with a one-line ConfigError naming the field and
the fix.

Covers: `check_cross_fields` (every check; run by `from_dict`), `processes_per_node` and
`parse_contrasts` (tracking.contrasts read: sparring.evaluation.study_pairs pairs by it).

Does not cover: a field's own type and bounds (sparring.config.validate), or what the fields do.
"""

from __future__ import annotations

import re

from sparring.config.fields import ConfigError
from sparring.config.problems import REASONING_STAGES
from sparring.config.schema import Config

ARM = re.compile(r"[A-Za-z]\w*")  # sparring.experiments.study_design.ARM_NAME: no '-' or ','


def check_cross_fields(cfg: Config) -> None:
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
    if cfg.backend == "mlx" and cfg.filtered_sft.samples:
        raise ConfigError(
            "filtered_sft.samples: filtered fine-tuning (TRL SFTTrainer) runs on torch only; "
            "set filtered_sft.samples: 0 with backend: mlx"
        )
    if cfg.filtered_sft.samples and cfg.phase_schedule == "generator":
        raise ConfigError(
            "filtered_sft.samples: phase_schedule generator has no answerer phase to fine-tune; "
            "set filtered_sft.samples: 0 or a schedule with an answerer phase"
        )
    if not cfg.data.train:
        raise ConfigError("data.train: name at least one problem source, e.g. [bundled]")
    if cfg.selection.refuse_below_start and cfg.game.name:
        raise ConfigError(
            "selection.refuse_below_start: a game (game.name) promotes by its own rule; set "
            "refuse_below_start: false or leave game.name empty"
        )
    if cfg.selection.refuse_below_start and not cfg.data.val_samples:
        raise ConfigError(
            "selection.refuse_below_start: the gain over the start is measured on held-out "
            "samples; set data.val_samples to 1 or more, or refuse_below_start: false"
        )
    heldout_new_tasks = "families" in cfg.data.train and cfg.data.families.heldout_per_family
    if cfg.selection.refuse_below_start and not heldout_new_tasks:
        raise ConfigError(
            "selection.refuse_below_start: the gain over the start is measured on the held-out "
            "new tasks of the problem families; add families to data.train (with "
            "data.families.heldout_per_family 1 or more), or refuse_below_start: false"
        )
    if cfg.selection.start_margin and not cfg.selection.refuse_below_start:
        raise ConfigError(
            f"selection.start_margin: {cfg.selection.start_margin} is read only by the start "
            "gate; set selection.refuse_below_start: true, or start_margin: 0"
        )
    if cfg.phase_schedule == "generator" and cfg.steps.alternating:
        raise ConfigError(
            f"steps.alternating: {cfg.steps.alternating} adds answerer phases, which "
            "phase_schedule 'generator' (the writer alone) has none of; set steps.alternating: 0"
        )
    if cfg.phase_schedule == "generator" and cfg.generator_mode != "tests":
        raise ConfigError(
            f"phase_schedule: 'generator' trains a test writer alone; generator_mode "
            f"'{cfg.generator_mode}' writes no tests that learn: use generator_mode: tests"
        )
    if cfg.generator_mode == "fuzz" and cfg.phase_schedule == "answerer":
        raise ConfigError(
            "generator_mode: 'fuzz' draws tests in the generator phase, which phase_schedule "
            "'answerer' has none of; use phase_schedule: generator_answerer"
        )
    steps = cfg.steps
    if cfg.generator_mode == "fuzz" and steps.bank_per_problem not in (0, steps.fuzz_tests):
        raise ConfigError(
            f"steps.fuzz_tests: {steps.fuzz_tests} must equal steps.bank_per_problem "
            f"({steps.bank_per_problem}) with generator_mode 'fuzz', so that both arms bank k "
            f"tests a problem; set steps.fuzz_tests: {steps.bank_per_problem}"
        )
    coach = cfg.coach
    if coach.failure_threshold >= coach.success_threshold:
        raise ConfigError(
            f"coach.failure_threshold: {coach.failure_threshold} must be below "
            f"coach.success_threshold ({coach.success_threshold})"
        )
    _check_families(cfg)
    _check_study(cfg.tracking.study, cfg.tracking.arm, cfg.tracking.contrasts)
    _check_distributed(cfg)
    _check_resources(cfg)


def _check_families(cfg: Config) -> None:
    from sparring.problems.families import DEFINED_LEVELS, FAMILIES

    fam = cfg.data.families
    for key in ("families", "heldout_families"):
        for name in getattr(fam, key):
            if name not in FAMILIES:
                raise ConfigError(
                    f"data.families.{key}: unknown family {name!r}; known: {', '.join(FAMILIES)}"
                )
    for level in fam.levels:
        if level not in DEFINED_LEVELS:
            raise ConfigError(
                f"data.families.levels: {level}; use levels among {list(DEFINED_LEVELS)} "
                f"(no family defines level {level})"
            )
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


# the Kubernetes quantities KFP's task setters accept (kfp.dsl.PipelineTask), checked here so a
# typo is one line naming the field rather than a traceback from `sparring compile`
CPU_QUANTITY = re.compile(r"([0-9]*[.])?[0-9]+m?")
MEMORY_QUANTITY = re.compile(r"[0-9]+(E|Ei|P|Pi|T|Ti|G|Gi|M|Mi|K|Ki)?")


def _check_resources(cfg: Config) -> None:
    """The CPU and memory of the pipeline's tasks: Kubernetes quantities above zero."""
    k8s = cfg.kubernetes
    for key, kind, pattern, example in (
        ("cpu", "CPU", CPU_QUANTITY, '"2" or "500m"'),
        ("train_cpu", "CPU", CPU_QUANTITY, '"8" or "500m"'),
        ("memory", "memory", MEMORY_QUANTITY, '"8Gi" or "512Mi"'),
        ("train_memory", "memory", MEMORY_QUANTITY, '"32Gi" or "512Mi"'),
    ):
        value = getattr(k8s, key)
        if not pattern.fullmatch(value) or not float(re.sub(r"[^0-9.]", "", value) or 0):
            raise ConfigError(
                f"kubernetes.{key}: {value!r} is not a {kind} quantity above 0; write e.g. "
                f"{example}"
            )


# tracking.contrasts of a study whose runs no contrast pairs (its file's `analysis` compares
# them): said outright, so that a study run naming none by mistake still fails
NO_CONTRASTS = "none"


def parse_contrasts(text: str) -> list[tuple[str, str]]:
    """tracking.contrasts as (treatment, control) arm pairs (the inverse of
    sparring.evaluation.study_pairs.contrasts_text); ConfigError naming tracking.contrasts when
    a part is not two arm names joined by '-'.

    >>> parse_contrasts("D-F, S-G")
    [('D', 'F'), ('S', 'G')]
    >>> parse_contrasts("")
    []
    >>> parse_contrasts(NO_CONTRASTS)
    []
    """
    if text.strip() == NO_CONTRASTS:
        return []
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        treatment, _, control = part.partition("-")
        if not (ARM.fullmatch(treatment) and ARM.fullmatch(control)):
            raise ConfigError(
                f"tracking.contrasts: {part!r} is not treatment-control (two arm names "
                "joined by '-', comma-separated, e.g. D-F,S-G)"
            )
        out.append((treatment, control))
    return out


def _check_study(study: str, arm: str, contrasts: str) -> None:
    """tracking.study, tracking.arm and tracking.contrasts go together: all empty (no study),
    or a study, its arm and its contrasts; ConfigError naming the field otherwise."""
    planned = parse_contrasts(contrasts)
    if not study:
        for field, value in (("arm", arm), ("contrasts", contrasts)):
            if value:
                raise ConfigError(
                    f"tracking.{field}: {value!r} without tracking.study; name the study or "
                    "leave it empty"
                )
        return
    if not ARM.fullmatch(arm):
        raise ConfigError(
            f"tracking.arm: {arm!r} is not an arm name (a letter, then letters, digits or '_'); "
            f"give this run's arm in study {study}"
        )
    if not planned and contrasts.strip() != NO_CONTRASTS:
        raise ConfigError(
            f"tracking.contrasts: study {study} names no contrast; give them, e.g. D-F,S-G, "
            f"or {NO_CONTRASTS} when no run of it is paired with another"
        )

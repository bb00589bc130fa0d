"""The distributed recipe as GRPOConfig keywords: the sharding strategy and the vLLM generation.

Covers: `grpo_kwargs(cfg, world_size)`, the keywords `sparring.backends.torch.grpo.grpo_args`
adds to TRL's GRPOConfig (a transformers TrainingArguments) for `cfg.distributed`:
- `ddp` (default): nothing to add; Accelerate wraps the model in DistributedDataParallel when
  `torchrun` (or `accelerate launch`) starts more than one process. Replicas, so LoRA or a model
  that fits one GPU with its optimizer state.
- `fsdp`: transformers' FSDP (version 2, full sharding, transformer-layer auto wrap from the
  model's `_no_split_modules`, activation checkpointing inside FSDP, a full state dict gathered
  for saving): full fine-tuning of a 7B model across nodes.
- `zero3`: DeepSpeed ZeRO-3 with the "auto" values filled in by transformers from GRPOConfig,
  16-bit weights gathered on save. Needs `deepspeed` in the image (`WITH_DEEPSPEED=1`).
- vLLM (`grpo.use_vllm`): colocated in every training process with
  `vllm_tensor_parallel_size` GPUs per engine and `vllm_gpu_memory_utilization` of each GPU
  (sized per node: the config check keeps an engine inside one node), or a separate
  `trl vllm-serve` server at `vllm_server_url`.
A sharding strategy applies only when more than one process trains; one process trains as
before. Does not cover: launching processes (`sparring.cluster.entry`, torchrun, TrainJobs).
Pure: no heavy framework.
"""

from __future__ import annotations

from typing import Any

from sparring.config import Config

FSDP_CONFIG: dict[str, Any] = {
    "version": 2,
    "reshard_after_forward": True,
    "activation_checkpointing": True,
    "state_dict_type": "FULL_STATE_DICT",
}

ZERO3_CONFIG: dict[str, Any] = {
    "zero_optimization": {
        "stage": 3,
        "overlap_comm": True,
        "contiguous_gradients": True,
        "reduce_bucket_size": "auto",
        "stage3_prefetch_bucket_size": "auto",
        "stage3_param_persistence_threshold": "auto",
        "stage3_gather_16bit_weights_on_model_save": True,
    },
    "bf16": {"enabled": "auto"},
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto",
    "train_batch_size": "auto",
    "train_micro_batch_size_per_gpu": "auto",
}


def strategy_kwargs(cfg: Config, world_size: int, transformers_major: int = 5) -> dict[str, Any]:
    """TrainingArguments keywords of `distributed.strategy` (none for DDP or one process).
    transformers 4 takes FSDP as option words, 5 as `fsdp=True` plus `fsdp_config`."""
    strategy = cfg.distributed.strategy
    if world_size <= 1 or strategy == "ddp":
        return {}
    if strategy == "fsdp":
        flag: Any = True if transformers_major >= 5 else "full_shard auto_wrap"
        return {"fsdp": flag, "fsdp_config": dict(FSDP_CONFIG)}
    return {"deepspeed": _copy(ZERO3_CONFIG)}


def vllm_kwargs(cfg: Config) -> dict[str, Any]:
    """GRPOConfig's vLLM keywords (none without `grpo.use_vllm`)."""
    if not cfg.grpo.use_vllm:
        return {}
    d = cfg.distributed
    if d.vllm_mode == "server":
        return {"use_vllm": True, "vllm_mode": "server", "vllm_server_base_url": d.vllm_server_url}
    return {
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_tensor_parallel_size": d.vllm_tensor_parallel_size,
        "vllm_gpu_memory_utilization": d.vllm_gpu_memory_utilization,
    }


def grpo_kwargs(cfg: Config, world_size: int, transformers_major: int = 5) -> dict[str, Any]:
    """Everything the distributed recipe adds to GRPOConfig for `world_size` processes."""
    return {**strategy_kwargs(cfg, world_size, transformers_major), **vllm_kwargs(cfg)}


def sharded(cfg: Config, world_size: int) -> bool:
    """True when no process holds the whole model (FSDP or ZeRO-3 over several processes)."""
    return world_size > 1 and cfg.distributed.strategy != "ddp"


def _copy(d: dict[str, Any]) -> dict[str, Any]:
    return {k: _copy(v) if isinstance(v, dict) else v for k, v in d.items()}

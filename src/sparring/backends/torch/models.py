"""Model loading and saving on torch: built-in models, local folders, Sparring artifacts, hub ids.

Covers:
- `resolve_device` / `resolve_dtype`: cuda, then mps, then cpu; bf16 on CUDA, float32 elsewhere.
- `load_model(name_or_path)`: the built-ins `tiny-random` and `smollm2-135m` (their folders are
  built by sparring.backends.builtins, whose names are re-exported here), a local HF
  folder, a model artifact written by `save_model` (full weights, or a LoRA adapter + the name of
  its base: the base is loaded and the adapter applied), or a hub id (offline: a missing id is a
  one-line SparringError).
- `save_model`: weights or adapter + tokenizer + `sparring_model.json`, written atomically.
- Shared topology: `shared_peft_model` keeps ONE base per process with one named LoRA adapter per
  role (`answerer`, `generator`), switched with `set_adapter(role)`.
- `lora_merged(model)`: while sampling from a model in training, its active LoRA adapter folded
  into the base weights, which are restored bit for bit afterwards.

Does not cover: generation (sparring.backends.torch.generation) or training
(sparring.backends.torch.grpo).
The cache lives in `$SPARRING_CACHE` (default `~/.cache/sparring`) under `models/`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from collections.abc import Iterator
from typing import Any

from sparring.backends.base import META_FILE, read_meta
from sparring.backends.builtins import (  # noqa: F401  (re-exported: callers know them here)
    BUILTINS,
    ModelError,
    builtin_dir,
    cache_dir,
    smollm2_dir,
    smollm2_tokenizer_dir,
    tiny_random_dir,
)
from sparring.errors import SparringError
from sparring.storage import atomic_dir

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- device and dtype


def resolve_device(name: str = "auto") -> str:
    """`auto` picks cuda, then mps, then cpu; an explicit name is checked for availability."""
    import torch

    if name == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ModelError("device 'cuda' requested but no CUDA GPU is visible; use device: auto")
    if name == "mps" and not (
        getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()
    ):
        raise ModelError("device 'mps' requested but MPS is not available; use device: auto")
    if name not in ("cpu", "cuda", "mps"):
        raise ModelError(f"device {name!r}: use auto, cpu, cuda or mps")
    return name


def resolve_dtype(name: str = "auto", device: str = "cpu") -> Any:
    """`auto`: bfloat16 on a CUDA GPU that supports it, else float32 (CPU training wants fp32)."""
    import torch

    if name == "auto":
        if device == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    table = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if name not in table:
        raise ModelError(f"dtype {name!r}: use auto, float32, bfloat16 or float16")
    return table[name]


# --------------------------------------------------------------------------- cache and built-ins


# --------------------------------------------------------------------------- loading


def base_name_of(name_or_path: str) -> str:
    """The base model a name or artifact folder ultimately stands on (LoRA: its base)."""
    meta = read_meta(name_or_path) if os.path.isdir(name_or_path) else None
    if meta and meta.get("tuning_mode") == "lora":
        return str(meta["base"])
    return name_or_path


def _load_plain(name_or_path: str, device: str, dtype: Any):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = builtin_dir(name_or_path)
    source = str(folder) if folder else name_or_path
    local = name_or_path.startswith((".", "/", "~"))
    if not folder and not os.path.isdir(source) and local:
        raise ModelError(f"model {name_or_path!r}: no such folder")
    try:
        tok = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
    except (OSError, ValueError) as exc:
        if os.path.isdir(source):
            raise ModelError(
                f"model folder {source}: cannot load ({exc.__class__.__name__})"
            ) from None
        raise ModelError(
            f"model {name_or_path!r}: not a built-in ({', '.join(BUILTINS)}), a local folder, or a "
            "hub id available offline; download it on a machine with hub access and pass the "
            "folder, or unset HF_HUB_OFFLINE"
        ) from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model.to(device), tok


def load_model(
    name_or_path: str,
    *,
    device: str = "auto",
    dtype: str = "auto",
    trainable: bool = False,
    merge: bool = False,
    adapter_name: str = "default",
):
    """Load a model and its tokenizer (see the module docstring for what is accepted).

    A LoRA artifact comes back as a `PeftModel` (adapter `adapter_name`, trainable when
    `trainable`); with `merge` the adapter is merged into the base (inference only).
    """
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    meta = read_meta(name_or_path) if os.path.isdir(name_or_path) else None
    if meta and meta.get("tuning_mode") == "base":  # a dry-run pointer to a base model
        return load_model(
            str(meta["base"]), device=device, dtype=dtype, trainable=trainable, merge=merge
        )
    if meta and meta.get("tuning_mode") == "lora":
        from peft import PeftModel

        base, tok = _load_plain(str(meta["base"]), dev, torch_dtype)
        model = PeftModel.from_pretrained(
            base, name_or_path, adapter_name=adapter_name, is_trainable=trainable and not merge
        )
        if merge:
            model = model.merge_and_unload()
        return model, tok
    return _load_plain(name_or_path, dev, torch_dtype)


# --------------------------------------------------------------------------- shared topology

_SHARED: dict[tuple[str, str, str], Any] = {}


def shared_peft_model(base_name: str, lora_cfg: Any, *, device: str = "auto", dtype: str = "auto"):
    """ONE base model per process carrying one LoRA adapter per role (shared topology).

    Returns `(peft_model, tokenizer)`; adapters are added with `ensure_adapter`. The base is
    loaded once per (base, device, dtype) and reused by every later phase of the process.
    """
    from peft import get_peft_model

    dev = resolve_device(device)
    key = (base_name, dev, str(dtype))
    if key not in _SHARED:
        base, tok = _load_plain(base_name, dev, resolve_dtype(dtype, dev))
        model = get_peft_model(
            base, peft_lora_config(lora_cfg, num_layers(base)), adapter_name="answerer"
        )
        model.add_adapter("generator", peft_lora_config(lora_cfg, num_layers(base)))
        model.sparring_sources = {"answerer": None, "generator": None}
        _SHARED[key] = (model, tok)
    return _SHARED[key]


def ensure_adapter(model: Any, role: str, source: str | None, lora_cfg: Any) -> None:
    """Make adapter `role` hold the weights of artifact `source` (None: fresh LoRA init)."""
    sources = model.sparring_sources
    if sources.get(role, "unset") == source and role in model.peft_config:
        model.set_adapter(role)
        return
    if role in model.peft_config:
        # set another adapter active before deleting this one
        other = next((a for a in model.peft_config if a != role), None)
        if other:
            model.set_adapter(other)
        model.delete_adapter(role)
    if source is None:
        model.add_adapter(role, peft_lora_config(lora_cfg, num_layers(model)))
    else:
        model.load_adapter(source, adapter_name=role, is_trainable=True)
    sources[role] = source
    model.set_adapter(role)


def clear_shared() -> None:
    """Forget the shared bases (tests)."""
    _SHARED.clear()


def num_layers(model: Any) -> int | None:
    """Decoder layers of `model` (a plain or PEFT-wrapped HF model), or None when unknown."""
    config = getattr(model, "config", None)
    return getattr(config, "num_hidden_layers", None)


def adapted_layers(top: int, layers: int | None) -> list[int] | None:
    """Indices of the top `top` of `layers` decoder layers, or None (every layer) for top 0.

    >>> adapted_layers(2, 30), adapted_layers(0, 30), adapted_layers(40, 30)
    ([28, 29], None, None)
    """
    if top <= 0 or (layers is not None and top >= layers):
        return None
    if layers is None:
        raise SparringError("lora.top_layers needs a model whose config names num_hidden_layers")
    return list(range(layers - top, layers))


def peft_lora_config(lora_cfg: Any, layers: int | None = None):
    """A PEFT LoraConfig from Sparring's `cfg.lora` section (`layers`: the model's decoder
    layer count, needed when `lora.top_layers` is set)."""
    from peft import LoraConfig

    return LoraConfig(
        r=lora_cfg.r,
        lora_alpha=lora_cfg.alpha,
        lora_dropout=lora_cfg.dropout,
        target_modules=list(lora_cfg.target_modules),
        layers_to_transform=adapted_layers(lora_cfg.top_layers, layers),
        bias=lora_cfg.bias,
        task_type=lora_cfg.task_type,
    )


# --------------------------------------------------------------------------- saving


def save_model(model: Any, tokenizer: Any, out_dir: str, meta: dict[str, Any]) -> None:
    """Write a model artifact: full weights, or (a PeftModel) only the active adapter, plus the
    tokenizer and `sparring_model.json` {"base", "tuning_mode", "role", **meta}; atomic."""
    with atomic_dir(out_dir) as tmp:
        is_peft = hasattr(model, "peft_config") and hasattr(model, "active_adapter")
        record = dict(meta)
        # gathered by run_grpo when the weights were sharded (FSDP, ZeRO-3)
        state = getattr(model, "sparring_state_dict", None)
        if is_peft:
            adapter = model.active_adapter
            adapter = adapter if isinstance(adapter, str) else adapter[0]
            model.save_pretrained(str(tmp), selected_adapters=[adapter], state_dict=state)
            sub = tmp / adapter
            if adapter != "default" and sub.is_dir():  # PEFT nests named adapters
                for item in sub.iterdir():
                    shutil.move(str(item), str(tmp / item.name))
                sub.rmdir()
            record.setdefault("tuning_mode", "lora")
        else:
            model.save_pretrained(str(tmp), state_dict=state)
            record.setdefault("tuning_mode", "full")
        tokenizer.save_pretrained(str(tmp))
        record.setdefault("base", "")
        record.setdefault("role", "")
        (tmp / META_FILE).write_text(json.dumps(record, indent=1, sort_keys=True))


@contextlib.contextmanager
def lora_merged(model: Any) -> Iterator[bool]:
    """Within the block, `model`'s active LoRA adapter is merged into its base weights (yields
    True; False, and nothing changed, when `model` has no unmerged LoRA layer). A decode step
    then runs one matmul per adapted linear instead of three. On 2 CPU cores, SmolLM2-135M:
    1.03x (`BENCH merged_sampling_speedup`, LoRA on the top 8 layers; docs/benchmarks.md), and
    about 15% faster sampling of 32 rows with LoRA on every linear (two runs, not a benchmark).

    The base weights are copied before the merge and copied back after the unmerge, so training
    resumes on exactly the weights it left: merge-then-unmerge alone leaves rounding drift that
    would add up over a run's steps. The copy costs one more set of the adapted weights in memory.
    For unsharded weights only (the caller skips FSDP and ZeRO-3, whose parameters are shards),
    and not under a CUDA-graph decoder, which records the kernels of the unmerged model.
    """
    from peft import PeftModel
    from peft.tuners.lora import LoraLayer

    layers = [m for m in model.modules() if isinstance(m, LoraLayer)]
    if not isinstance(model, PeftModel) or not layers or any(layer.merged for layer in layers):
        yield False
        return
    import torch

    weights = [layer.get_base_layer().weight for layer in layers]
    with torch.no_grad():
        saved = [w.detach().clone() for w in weights]
        model.merge_adapter()
    try:
        yield True
    finally:
        with torch.no_grad():
            model.unmerge_adapter()
            for weight, original in zip(weights, saved, strict=True):
                weight.copy_(original)

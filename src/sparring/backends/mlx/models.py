"""MLX models: loading, LoRA layers and adapter artifacts, natively through MLX.

Covers: `available()` (whether `mlx.core` and `mlx_lm` import); `load(name_or_path, adapter=None)`:
built-in names (`tiny-random`, `smollm2-135m`), local HF folders (llama & co. as mlx_lm supports
them), and Sparring model artifacts: MLX LoRA artifacts (`sparring_model.json` with
`"backend": "mlx"`), full-weight artifacts and base pointers; `add_lora` (only
`lora_a`/`lora_b` trainable); `set_lora_scale` (scale 0: the base model); `save_adapter`:
mlx_lm adapter format (`adapters.safetensors` + `adapter_config.json`), tokenizer files and
`sparring_model.json` {"backend": "mlx", "base", "adapter", ...}, written atomically.

Does not cover: full fine-tuning (MLX requires `tuning_mode: lora`) or PEFT (torch) LoRA
artifacts (load them with the torch backend). `mlx` is imported lazily, so this module imports
(and `available()` answers) without it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sparring.backends.base import META_FILE, read_meta
from sparring.backends.builtins import ModelError, builtin_dir
from sparring.storage import atomic_dir

ADAPTER_FILE = "adapters.safetensors"


ADAPTER_CONFIG = "adapter_config.json"


LORA_LEAVES = ("lora_a", "lora_b")


def available() -> bool:
    """True when MLX and mlx_lm import (Apple Silicon, or Linux with `mlx[cpu]`)."""
    try:
        import mlx.core  # noqa: F401
        import mlx_lm  # noqa: F401
    except Exception:  # ImportError, or a broken native library
        return False
    return True


def require_mlx() -> None:
    if not available():
        raise ModelError(
            "backend 'mlx' needs MLX: pip install 'mlx[cpu]' mlx-lm (Linux) or mlx mlx-lm (macOS)"
        )


def hf_tokenizer(tokenizer: Any) -> Any:
    """The Hugging Face tokenizer inside mlx_lm's TokenizerWrapper (or the tokenizer itself)."""
    return getattr(tokenizer, "_tokenizer", tokenizer)


def _model_overrides(folder: Path) -> dict[str, Any]:
    """Config keys mlx_lm misses in transformers-5 configs (rope_theta inside rope_parameters)."""
    try:
        cfg = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    rope = cfg.get("rope_parameters")
    if "rope_theta" not in cfg and isinstance(rope, dict) and "rope_theta" in rope:
        return {"rope_theta": float(rope["rope_theta"])}
    return {}


def _load_folder(folder: Path) -> tuple[Any, Any]:
    from mlx_lm.utils import load as mlx_load

    if not (folder / "config.json").is_file():
        raise ModelError(f"{folder} is not a model folder (no config.json)")
    model, tokenizer = mlx_load(str(folder), model_config=_model_overrides(folder) or None)
    return model, tokenizer


def _apply_adapter(model: Any, adapter_dir: str | Path) -> None:
    """Add LoRA layers from an mlx_lm adapter folder (or MLX Sparring artifact) and load them."""
    from mlx_lm.tuner.utils import load_adapters

    folder = Path(adapter_dir)
    if not (folder / ADAPTER_CONFIG).is_file():
        raise ModelError(f"{folder} holds no MLX adapter ({ADAPTER_CONFIG} missing)")
    load_adapters(model, str(folder))
    model._sparring_lora = (folder / ADAPTER_CONFIG).read_text()  # str: not a parameter
    model.eval()


def load(name_or_path: str, adapter: str | None = None) -> tuple[Any, Any]:
    """Model and tokenizer (mlx_lm TokenizerWrapper) from a built-in name, an HF folder or a
    Sparring artifact; `adapter` adds an MLX adapter folder on top. Raises ModelError."""
    require_mlx()
    name = str(name_or_path)
    meta = read_meta(name) if os.path.isdir(name) else None
    if meta is not None:
        mode = meta.get("tuning_mode", "")
        if meta.get("backend") == "mlx" and (Path(name) / ADAPTER_CONFIG).is_file():
            model, tokenizer = load(str(meta["base"]))
            _apply_adapter(model, name)
            model._sparring_base = str(meta["base"])
        elif mode == "base":
            model, tokenizer = load(str(meta["base"]))
        elif mode == "lora":
            raise ModelError(
                f"{name} is a PEFT (torch) LoRA artifact; the MLX backend reads only MLX adapters "
                "(train it with backend: mlx, or use backend: torch)"
            )
        else:  # full weights in HF layout
            model, tokenizer = _load_folder(Path(name))
            model._sparring_base = name
    else:
        folder = builtin_dir(name)
        if folder is None:
            if not os.path.isdir(name):
                raise ModelError(
                    f"model {name!r} not found: use a built-in name (tiny-random, smollm2-135m), "
                    "a local HF folder or a Sparring model artifact (no model hub here)"
                )
            folder = Path(name)
        model, tokenizer = _load_folder(Path(folder))
        model._sparring_base = name
    if adapter is not None:
        _apply_adapter(model, adapter)
    model._sparring_tokenizer = tokenizer  # for save_adapter(model, out_dir, meta)
    return model, tokenizer


def _lora_modules(model: Any) -> list[tuple[str, Any]]:
    from mlx_lm.tuner.lora import LoRALinear

    return [(n, m) for n, m in model.named_modules() if isinstance(m, LoRALinear)]


def set_lora_scale(model: Any, scales: list[float] | float) -> list[float]:
    """Set every LoRA layer's scale (one value, or one per layer); returns the old scales.
    Scale 0 is the base model (the judge, the KL reference) without removing the adapter."""
    mods = [m for _, m in _lora_modules(model)]
    old = [m.scale for m in mods]
    for i, m in enumerate(mods):
        m.scale = scales[i] if isinstance(scales, list) else scales
    return old


def _lora_keys(model: Any, target_modules: Sequence[str]) -> list[str]:
    """Paths inside one transformer block whose last component is a target module name."""
    targets = set(target_modules)
    keys = sorted(n for n, _ in model.layers[0].named_modules() if n.rsplit(".", 1)[-1] in targets)
    if not keys:
        raise ModelError(f"no module of the model matches lora.target_modules {sorted(targets)}")
    return keys


def add_lora(model: Any, lora: dict[str, Any], *, seed: int = 0) -> None:
    """Freeze the model and wrap the target linears of every block (or the top
    `lora["top_layers"]` blocks) in LoRA layers (once);
    afterwards only `lora_a`/`lora_b` are trainable. PEFT's alpha/r becomes mlx_lm's scale."""
    import mlx.core as mx
    from mlx_lm.tuner.utils import linear_to_lora_layers

    model.freeze()
    if not _lora_modules(model):
        r = int(lora.get("r", 8))
        config = {
            "rank": r,
            "scale": float(lora.get("alpha", 16)) / r,
            "dropout": float(lora.get("dropout", 0.0)),
            "keys": _lora_keys(model, lora.get("target_modules", ["q_proj", "v_proj"])),
        }
        mx.random.seed(seed)
        top = int(lora.get("top_layers", 0) or 0)
        layers = min(top, len(model.layers)) if top > 0 else len(model.layers)
        linear_to_lora_layers(model, layers, config)  # mlx_lm adapts the last `layers` blocks
        record = {"fine_tune_type": "lora", "num_layers": layers}
        model._sparring_lora = json.dumps({**record, "lora_parameters": config})
    model.freeze()
    model.unfreeze(keys=list(LORA_LEAVES), strict=False)


def lora_weights(model: Any) -> dict[str, Any]:
    """The LoRA parameters of the model by dotted name (what `adapters.safetensors` holds)."""
    from mlx.utils import tree_flatten

    return {
        k: v for k, v in tree_flatten(model.parameters()) if k.rsplit(".", 1)[-1] in LORA_LEAVES
    }


def save_adapter(model: Any, out_dir: str, meta: dict[str, Any], tokenizer: Any = None) -> None:
    """Write an MLX LoRA artifact: `adapters.safetensors`, `adapter_config.json`, the tokenizer
    files (`tokenizer`, by default the one `load` returned with this model) and
    `sparring_model.json` {"backend": "mlx", "base", "adapter", "tuning_mode": "lora", "role",
    **meta}; atomic (written to a temp sibling, then renamed)."""
    require_mlx()
    import mlx.core as mx

    weights = lora_weights(model)
    config = getattr(model, "_sparring_lora", None)
    if not weights or config is None:
        raise ModelError("the model has no LoRA layers to save (train it or add_lora first)")
    base = meta.get("base") or getattr(model, "_sparring_base", None)
    if not base:
        raise ModelError("save_adapter needs meta['base'] (the base model name or folder)")
    with atomic_dir(out_dir) as tmp:
        mx.eval(weights)
        mx.save_safetensors(str(tmp / ADAPTER_FILE), weights)
        (tmp / ADAPTER_CONFIG).write_text(json.dumps(json.loads(config), indent=1))
        tokenizer = (
            tokenizer if tokenizer is not None else getattr(model, "_sparring_tokenizer", None)
        )
        if tokenizer is not None:
            hf_tokenizer(tokenizer).save_pretrained(str(tmp))
        record = {"role": "", **meta, "backend": "mlx", "base": str(base)}
        record.update(adapter=ADAPTER_FILE, tuning_mode="lora")
        (tmp / META_FILE).write_text(json.dumps(record, indent=1, sort_keys=True))

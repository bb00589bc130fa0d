"""MLX backend: loading, sampling, GRPO with LoRA and adapter artifacts, natively through MLX.

Covers (the `backend: mlx` path; runs on Apple Silicon and, with `mlx[cpu]`, on Linux CPU):
- `available()`: whether `mlx.core` and `mlx_lm` import.
- `load(name_or_path, adapter=None)`: built-in names (`tiny-random`, `smollm2-135m`), local HF
  folders (llama & co. as mlx_lm supports them), and Sparring model artifacts: MLX LoRA artifacts
  (`sparring_model.json` with `"backend": "mlx"`), full-weight artifacts and base pointers.
- `generate(...)`: the contract of `sparring.generation.generate` (chat template, `num_samples`
  completions per prompt, greedy at temperature 0, seeded sampling otherwise).
- `train_grpo(...)`: a real GRPO update loop with LoRA (only `lora_a`/`lora_b` trainable): sample a
  group per prompt, reward through a TRL-style `reward_fn`, group-relative advantages
  (`sparring.game.group_advantages`), one Adam step per batch on the clipped policy-gradient loss
  (ratio 1, as TRL with `num_iterations=1`), optional KL term (`beta > 0`, reference = LoRA off),
  TRL loss aggregations (`dapo` default, `grpo`, `bnpo`, `dr_grpo`), grad-norm clip 1.0.
- `save_adapter(...)`: mlx_lm adapter format (`adapters.safetensors` + `adapter_config.json`),
  tokenizer files and `sparring_model.json` {"backend": "mlx", "base", "adapter", ...}; atomic.

Does not cover: full fine-tuning (MLX requires `tuning_mode: lora`), PEFT (torch) LoRA artifacts
(load them with the torch backend), gradient accumulation, multiple updates per batch
(`num_iterations > 1`), quantized training, vLLM. `mlx` is imported lazily, so this module
imports (and `available()` answers) without it.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sparring.fsutil import atomic_dir
from sparring.models import META_FILE, ModelError, builtin_dir, read_meta

Messages = list[dict[str, str]]
ADAPTER_FILE = "adapters.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
LORA_LEAVES = ("lora_a", "lora_b")
LOSS_TYPES = ("dapo", "grpo", "bnpo", "dr_grpo")


def available() -> bool:
    """True when MLX and mlx_lm import (Apple Silicon, or Linux with `mlx[cpu]`)."""
    try:
        import mlx.core  # noqa: F401
        import mlx_lm  # noqa: F401
    except Exception:  # ImportError, or a broken native library
        return False
    return True


def _require() -> None:
    if not available():
        raise ModelError(
            "backend 'mlx' needs MLX: pip install 'mlx[cpu]' mlx-lm (Linux) or mlx mlx-lm (macOS)"
        )


def _hf(tokenizer: Any) -> Any:
    """The Hugging Face tokenizer inside mlx_lm's TokenizerWrapper (or the tokenizer itself)."""
    return getattr(tokenizer, "_tokenizer", tokenizer)


# --------------------------------------------------------------------------- loading


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
    _require()
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


# --------------------------------------------------------------------------- sampling


def _render(tokenizer: Any, messages: Messages) -> str:
    from sparring.generation import render_prompt

    return render_prompt(_hf(tokenizer), messages)


def _encode(tokenizer: Any, messages: Messages, max_prompt_length: int | None = None) -> list[int]:
    ids = list(_hf(tokenizer).encode(_render(tokenizer, messages), add_special_tokens=False))
    if max_prompt_length is not None and len(ids) > max_prompt_length:
        ids = ids[-max_prompt_length:]  # left-truncated, as TRL does
    return ids


def _sample_ids(
    model: Any,
    tokenizer: Any,
    prompts: list[list[int]],
    *,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    seed: int,
) -> list[list[int]]:
    """Generated token ids per prompt (the stop token excluded), model in eval mode."""
    import mlx.core as mx
    from mlx_lm.generate import batch_generate
    from mlx_lm.sample_utils import make_sampler

    if not prompts:
        return []
    was_training = bool(getattr(model, "training", False))
    model.eval()
    mx.random.seed(seed)
    greedy = temperature <= 0.0
    sampler = make_sampler(0.0 if greedy else temperature, top_p=1.0 if greedy else top_p)
    try:
        out = batch_generate(
            model,
            tokenizer,
            prompts,
            max_tokens=max_new_tokens,
            sampler=sampler,
            return_token_ids=True,
        )
    finally:
        if was_training:
            model.train()
    return [list(ids) for ids in out.token_ids]


def _decode(tokenizer: Any, ids: Sequence[int]) -> str:
    return _hf(tokenizer).decode(list(ids), skip_special_tokens=True)


def generate(
    model: Any,
    tokenizer: Any,
    messages_batch: list[Messages],
    *,
    max_new_tokens: int = 128,
    temperature: float = 0.0,
    top_p: float = 1.0,
    num_samples: int = 1,
    seed: int = 0,
    stop_at_fence: bool = True,
) -> list[list[str]]:
    """Per conversation, `num_samples` completions (strings without the prompt). With
    `stop_at_fence`, each text is cut just after the closing fence of its first python code
    block, as `sparring.generation.generate` does (here after sampling: mlx_lm's batch
    generator takes stop token sequences only, and the opening fence is the same token)."""
    _require()
    if num_samples < 1:
        raise ValueError("num_samples must be >= 1")
    prompts = [_encode(tokenizer, m) for m in messages_batch]
    flat = [p for p in prompts for _ in range(num_samples)]
    ids = _sample_ids(
        model,
        tokenizer,
        flat,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
    )
    texts = [_decode(tokenizer, x) for x in ids]
    if stop_at_fence:
        from sparring.generation import trim_after_fence

        texts = [trim_after_fence(t) for t in texts]
    return [texts[i * num_samples : (i + 1) * num_samples] for i in range(len(messages_batch))]


# --------------------------------------------------------------------------- LoRA


def _lora_modules(model: Any) -> list[tuple[str, Any]]:
    from mlx_lm.tuner.lora import LoRALinear

    return [(n, m) for n, m in model.named_modules() if isinstance(m, LoRALinear)]


def _lora_keys(model: Any, target_modules: Sequence[str]) -> list[str]:
    """Paths inside one transformer block whose last component is a target module name."""
    targets = set(target_modules)
    keys = sorted(n for n, _ in model.layers[0].named_modules() if n.rsplit(".", 1)[-1] in targets)
    if not keys:
        raise ModelError(f"no module of the model matches lora.target_modules {sorted(targets)}")
    return keys


def add_lora(model: Any, lora: dict[str, Any], *, seed: int = 0) -> None:
    """Freeze the model and wrap the target linears of every block in LoRA layers (once);
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
        linear_to_lora_layers(model, len(model.layers), config)
        record = {"fine_tune_type": "lora", "num_layers": len(model.layers)}
        model._sparring_lora = json.dumps({**record, "lora_parameters": config})
    model.freeze()
    model.unfreeze(keys=list(LORA_LEAVES), strict=False)


def _set_lora_scale(model: Any, scales: list[float] | float) -> list[float]:
    mods = [m for _, m in _lora_modules(model)]
    old = [m.scale for m in mods]
    for i, m in enumerate(mods):
        m.scale = scales[i] if isinstance(scales, list) else scales
    return old


# --------------------------------------------------------------------------- GRPO


def _split_head(model: Any) -> tuple[Any, Any] | None:
    """(trunk returning hidden states, LM head) for mlx_lm causal LMs, or None when unknown."""
    trunk = getattr(model, "model", None)
    if trunk is None or not callable(trunk):
        return None
    if "lm_head" in model:
        return trunk, model.lm_head
    embed = getattr(trunk, "embed_tokens", None)
    if embed is not None and hasattr(embed, "as_linear"):
        return trunk, embed.as_linear
    return None


def _token_logprobs(
    model: Any, inputs: Any, targets: Any, temperature: float, index: Any = None
) -> Any:
    """Log-probabilities of `targets` (B, T) given `inputs`; with `index` (B, K) only at those
    positions, so the LM head (the cost of a small model) runs on completion tokens alone."""
    import mlx.core as mx

    parts = _split_head(model) if index is not None else None
    if parts is None:
        logits = model(inputs)
        if index is not None:
            logits = mx.take_along_axis(logits, index[..., None], axis=1)
            targets = mx.take_along_axis(targets, index, axis=1)
    else:
        trunk, head = parts
        hidden = mx.take_along_axis(trunk(inputs), index[..., None], axis=1)
        logits = head(hidden)
        targets = mx.take_along_axis(targets, index, axis=1)
    logits = logits.astype(mx.float32) / temperature
    picked = mx.take_along_axis(logits, targets[..., None], axis=-1).squeeze(-1)
    return picked - mx.logsumexp(logits, axis=-1)


def _aggregate(per_token: Any, mask: Any, loss_type: str, max_completion_length: int) -> Any:
    import mlx.core as mx

    if loss_type == "grpo":
        per_seq = (per_token * mask).sum(axis=1) / mx.maximum(mask.sum(axis=1), 1.0)
        return per_seq.mean()
    if loss_type == "dr_grpo":
        return (per_token * mask).sum() / (mask.shape[0] * max_completion_length)
    return (per_token * mask).sum() / mx.maximum(mask.sum(), 1.0)  # dapo, bnpo


def _group_std(rewards: list[float | None], groups: list[int]) -> list[float]:
    by: dict[int, list[float]] = {}
    for r, g in zip(rewards, groups, strict=True):
        if r is not None:
            by.setdefault(g, []).append(float(r))
    stds = []
    for values in by.values():
        mean = sum(values) / len(values)
        stds.append((sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5)
    return stds


def train_grpo(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    reward_fn: Callable[..., list[float | None]],
    *,
    steps: int,
    num_generations: int,
    learning_rate: float,
    epsilon: float,
    beta: float = 0.0,
    max_completion_length: int,
    temperature: float,
    seed: int,
    lora: dict[str, Any],
    batch_size: int | None = None,
    top_p: float = 1.0,
    loss_type: str = "dapo",
    max_prompt_length: int | None = None,
    max_grad_norm: float = 1.0,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """GRPO with LoRA for `steps` optimizer steps; returns one metrics dict per step.

    Each step takes `batch_size // num_generations` prompts (default one; `batch_size` counts
    completions, like TRL's per-device batch) from `rows` in seeded epoch order, samples
    `num_generations` completions each, rewards them with
    `reward_fn(prompts=, completions=[[{"role": "assistant", "content": text}]], **columns)`,
    and takes one Adam step on the clipped surrogate over completion tokens (the terminating EOS
    included). The model keeps its LoRA layers (trained in place)."""
    _require()
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim

    from sparring.game import group_advantages

    if not rows:
        raise ValueError("train_grpo needs at least one row")
    if num_generations < 2:
        raise ValueError("num_generations must be >= 2 (a GRPO group)")
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    batch = batch_size if batch_size is not None else num_generations
    if batch % num_generations:
        raise ValueError(f"batch_size {batch} must be a multiple of num_generations")
    n_prompts = batch // num_generations

    add_lora(model, lora, seed=seed)
    optimizer = optim.Adam(learning_rate=learning_rate)
    eos = _hf(tokenizer).eos_token_id
    rng = random.Random(seed)
    order: list[int] = []
    encoded: dict[int, list[int]] = {}

    def loss_fn(inputs: Any, targets: Any, index: Any, mask: Any, adv: Any, ref: Any) -> Any:
        lp = _token_logprobs(model, inputs, targets, temperature, index)
        ratio = mx.exp(lp - mx.stop_gradient(lp))  # old policy = this policy (one update/batch)
        clipped = mx.clip(ratio, 1.0 - epsilon, 1.0 + epsilon)
        per_token = -mx.minimum(ratio * adv[:, None], clipped * adv[:, None])
        if ref is not None:
            diff = ref - lp
            per_token = per_token + beta * (mx.exp(diff) - diff - 1.0)
        return _aggregate(per_token, mask, loss_type, max_completion_length)

    value_and_grad = nn.value_and_grad(model, loss_fn)
    history: list[dict[str, float]] = []
    for step in range(steps):
        start = time.perf_counter()
        picked = []
        for _ in range(n_prompts):
            if not order:
                order = list(range(len(rows)))
                rng.shuffle(order)
            picked.append(order.pop())
        for i in picked:
            if i not in encoded:
                encoded[i] = _encode(tokenizer, rows[i]["prompt"], max_prompt_length)
        prompt_ids = [encoded[i] for i in picked for _ in range(num_generations)]
        groups = [g for g in range(n_prompts) for _ in range(num_generations)]
        comp_ids = _sample_ids(
            model,
            tokenizer,
            prompt_ids,
            max_new_tokens=max_completion_length,
            temperature=temperature,
            top_p=top_p,
            seed=seed * 100_003 + step,
        )
        texts = [_decode(tokenizer, c) for c in comp_ids]
        columns = {
            k: [rows[i][k] for i in picked for _ in range(num_generations)]
            for k in rows[picked[0]]
            if k != "prompt"
        }
        rewards = list(
            reward_fn(
                prompts=[rows[i]["prompt"] for i in picked for _ in range(num_generations)],
                completions=[[{"role": "assistant", "content": t}] for t in texts],
                **columns,
            )
        )
        advantages = group_advantages(rewards, groups)

        # Sequences: prompt + completion (+ EOS when it stopped), right-padded; the loss only
        # reads completion positions, and causal attention makes right padding harmless.
        seqs, starts, ends = [], [], []
        for p, c in zip(prompt_ids, comp_ids, strict=True):
            full = list(p) + list(c)
            if len(c) < max_completion_length and eos is not None:
                full.append(eos)
            seqs.append(full)
            starts.append(len(p))
            ends.append(len(full))
        width = max(ends)
        pad = eos if eos is not None else 0
        tokens = mx.array([s + [pad] * (width - len(s)) for s in seqs])
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        # completion token k of row b is targets[b, starts[b] - 1 + k]
        keep = max(e - s for s, e in zip(starts, ends, strict=True))
        k = mx.arange(keep)[None, :]
        index = mx.minimum(mx.array(starts)[:, None] - 1 + k, width - 2)
        mask = (k < (mx.array(ends) - mx.array(starts))[:, None]).astype(mx.float32)
        adv = mx.array(advantages, dtype=mx.float32)

        model.train()  # LoRA dropout on, as in TRL training
        ref = None
        if beta > 0.0:
            old = _set_lora_scale(model, 0.0)
            ref = _token_logprobs(model, inputs, targets, temperature, index)
            ref = mx.stop_gradient(ref)
            mx.eval(ref)
            _set_lora_scale(model, old)
        loss, grads = value_and_grad(inputs, targets, index, mask, adv, ref)
        if max_grad_norm > 0:
            grads, _ = optim.clip_grad_norm(grads, max_grad_norm)
        optimizer.update(model, grads)
        mx.eval(loss, model.trainable_parameters(), optimizer.state)
        model.eval()

        valid = [float(r) for r in rewards if r is not None]
        stds = _group_std(rewards, groups)
        n_done = sum(len(c) for c in comp_ids)
        metrics = {
            "loss": float(loss.item()),
            "reward_mean": sum(valid) / len(valid) if valid else 0.0,
            "reward_std": sum(stds) / len(stds) if stds else 0.0,
            "frac_reward_zero_std": (sum(1 for s in stds if s == 0.0) / len(stds) if stds else 1.0),
            "step_time_s": time.perf_counter() - start,
            "completion_length": n_done / len(comp_ids),
        }
        history.append(metrics)
        if on_step is not None:
            on_step(step, metrics)
    return history


# --------------------------------------------------------------------------- artifacts


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
    _require()
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
            _hf(tokenizer).save_pretrained(str(tmp))
        record = {"role": "", **meta, "backend": "mlx", "base": str(base)}
        record.update(adapter=ADAPTER_FILE, tuning_mode="lora")
        (tmp / META_FILE).write_text(json.dumps(record, indent=1, sort_keys=True))

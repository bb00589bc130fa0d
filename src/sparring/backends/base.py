"""The backend interface: what a phase, evaluation and inference ask of a model library.

Covers: `Backend` (load a model to train or to sample, train one GRPO phase, save the result,
sample completions), `Sampled` (what a backend's sampler returns: the texts with its own
statistics, so no caller reads a backend's module state), and what both implementations
share: `read_meta` (a model artifact's `sparring_model.json`), `base_name` (the base model an
artifact or config points at) and `copy_model` (an artifact passed on without loading weights:
the dry run).
Does not cover: any implementation (sparring.backends.torch, sparring.backends.mlx). Pure.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sparring.backends.lineage import start_of
from sparring.storage import atomic_dir

if TYPE_CHECKING:
    from sparring.config import Config
    from sparring.problems import Problem

META_FILE = "sparring_model.json"
Messages = list[dict[str, str]]
# The loss aggregations TRL names, which every backend's policy-gradient step implements.
LOSS_TYPES = ("dapo", "bnpo", "grpo", "dr_grpo")


@dataclass
class Sampled:
    """Completions (`texts[i]`: the samples of conversation i) and what sampling them took:
    tokens kept (up to EOS or the closing fence), seconds, and samples that ended at a fence."""

    texts: list[list[str]]
    tokens: int = 0
    seconds: float = 0.0
    fence_stops: int = 0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def __add__(self, other: Sampled) -> Sampled:
        """Two batches as one (texts concatenated, statistics summed)."""
        return Sampled(
            self.texts + other.texts,
            self.tokens + other.tokens,
            self.seconds + other.seconds,
            self.fence_stops + other.fence_stops,
        )


class Backend(Protocol):
    """One model library. Models and tokenizers are the library's own objects."""

    name: str

    def load_trainable(self, cfg: Config, role: str, init_model: str | None) -> tuple[Any, ...]:
        """(model, tokenizer, peft_config or None) ready for a GRPO phase of `role`, from
        `init_model` (an artifact or a name; None = the role's base model in cfg)."""
        ...

    def train(
        self, cfg: Config, model: Any, tokenizer: Any, dataset: Any, reward_fn: Any, steps: int,
        work_dir: str, seed: int, peft_config: Any, problems: list[Problem], role: str,
    ) -> tuple[Any, dict[str, float]]:  # fmt: skip
        """`steps` GRPO steps of `role` on `dataset` (a datasets.Dataset of prompts) rewarded by
        `reward_fn` (TRL's reward-function contract); returns (trained model, metrics)."""
        ...

    def sft(
        self, cfg: Config, model: Any, tokenizer: Any, rows: list[dict[str, Any]],
        peft_config: Any, seed: int,
    ) -> tuple[Any, dict[str, float]]:  # fmt: skip
        """Supervised fine-tuning (the warm start) on conversational prompt-completion rows,
        loss on the completion only; returns (trained model, metrics)."""
        ...

    def save_trained(
        self, cfg: Config, model: Any, tokenizer: Any, out_dir: str, record: dict[str, Any]
    ) -> None:
        """Write the trained model as an artifact folder; `record` goes to sparring_model.json."""
        ...

    def load_frozen(self, cfg: Config, path: str) -> tuple[Any, Any]:
        """(model, tokenizer) of a frozen answerer snapshot, to sample from."""
        ...

    def load_for_sampling(
        self, name_or_path: str, *, device: str = "auto", dtype: str = "auto"
    ) -> tuple[Any, Any]:
        """(model, tokenizer) ready to sample; LoRA adapters applied."""
        ...

    def load_policy(self, cfg: Config, base: str, roles: list[str], init_dir: str | None) -> Any:
        """The self-play engine's policy (sparring.engine.local.Policy): `base` with one LoRA
        adapter per role (from `init_dir/<role>/` when saved there), trained from records."""
        ...

    def use_role(self, model: Any, role: str) -> None:
        """Make `model` act as `role`: with one base shared by both roles (the shared topology)
        it switches to that role's adapter; a model of one role is left as it is."""
        ...

    def sample(
        self, model: Any, tokenizer: Any, messages_batch: list[Messages], *, max_new_tokens: int,
        temperature: float, top_p: float = 1.0, num_samples: int = 1, seed: int = 0,
        progress: bool = False, batch_size: int = 32,
    ) -> Sampled:  # fmt: skip
        """`num_samples` completions per conversation (greedy at temperature 0), with the
        sampler's statistics, decoding up to `batch_size` rows at once (a backend that batches
        otherwise may ignore it). Answers to problems go through sparring.backends.sampler, not
        here."""
        ...


def read_meta(path: str | Path) -> dict[str, Any] | None:
    """The `sparring_model.json` of a model artifact folder, or None when it is not one."""
    meta = Path(path) / META_FILE
    if not meta.is_file():
        return None
    return json.loads(meta.read_text())


def resolve_pointer(path: str) -> str:
    """The model artifact a start pointer names (a run whose `models.<role>.name` is a trained
    model's folder: its init-models phase writes a pointer to that folder), else `path`: a
    pointer to a base model name, an artifact or a plain name stay what they are."""
    meta = read_meta(path) if os.path.isdir(path) else None
    while meta is not None and meta.get("tuning_mode") == "base":
        target = str(meta.get("base") or "")
        target_meta = read_meta(target) if target and os.path.isdir(target) else None
        if target_meta is None:
            break
        path, meta = target, target_meta
    return path


def base_name(cfg: Config, role: str, init_model: str | None) -> str:
    """The base model under `init_model`, or under the role's configured model when there is
    no init model: an artifact's recorded base (through pointers: a model trained from a
    LoRA artifact records that artifact's base, not the artifact), or the name itself."""
    source = resolve_pointer(init_model or cfg.model_for(role).name)
    meta = read_meta(source) if os.path.isdir(source) else None
    if meta is None:
        return source
    return str(meta.get("base") or source)


def trained_record(
    cfg: Config, role: str, meta: dict[str, Any], init_model: str | None = None
) -> dict[str, Any]:
    """What a trained model artifact records in sparring_model.json besides the backend's own:
    its base model (`base_name`), role and topology, `meta`, and the start record its init model
    carries (sparring.backends.lineage), so the run's last model still says where the run
    began."""
    start = start_of(init_model)
    return {"base": base_name(cfg, role, init_model), "role": role, "topology": cfg.topology,
            **meta, **({"start": start} if start else {})}  # fmt: skip


def copy_model(src: str, out_dir: str, meta: dict[str, Any]) -> None:
    """Copy a model artifact (or wrap a built-in/base name) without loading weights (dry run)."""
    with atomic_dir(out_dir) as tmp:
        old = read_meta(src) if os.path.isdir(src) else None
        if old is not None:
            shutil.copytree(src, tmp, dirs_exist_ok=True)
            record = {**old, **meta}
        else:
            # a base name: the artifact is a pointer to it (no weights copied)
            record = {"base": src, "tuning_mode": "base", "role": "", **meta}
        (tmp / META_FILE).write_text(json.dumps(record, indent=1, sort_keys=True))

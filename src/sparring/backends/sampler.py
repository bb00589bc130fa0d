"""The one sampler outside GRPO: every answer a model writes to a problem is sampled here, and
the trained test writer's final tests.

Covers: `Answerer` (what samples: `LoadedAnswerer`, a model a backend loaded, or
sparring.serving.duel.ServedAnswerer, a model behind an OpenAI-compatible server),
`load_answerer` (a checkpoint or a name, loaded by the backend that wrote it) and
`sample_answers`: the answerer prompt (sparring.problems.prompts.answerer_messages) of each problem,
`num_samples` completions each, returned with the sampler's statistics (`Sampled`). Given a
`label`, more than FEW problems go in chunks of CHUNK with a progress line per chunk (chunk k
samples with seed + k * CHUNK, so a batch of FEW or fewer samples exactly what it did before).
Evaluation, the generator phase's frozen answerer and proposer, `sparring infer` and
`sparring eval` all sample answers through it; `sample_final_tests`: `steps.final_samples`
completions of the trained test writer for each of its asked rows.

Does not cover: extracting or scoring the code (the callers), sampling inside GRPO training
(TRL's trainer drives the backend's decoder), the engine's games (the engine's policies).
Imports no model library: the backends load lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sparring import progress as lines
from sparring.backends.base import Messages, Sampled
from sparring.backends.budget import completion_tokens
from sparring.problems import Problem
from sparring.problems.prompts import answerer_messages

FEW = 8  # with a label, batches of more problems than this print a line per chunk
CHUNK = 16  # problems per sampling call in a long, labelled batch
ROWS = 32  # completions decoded at once, unless the caller sizes it


class Answerer(Protocol):
    """Something that samples completions of conversations, with its statistics."""

    def sample(
        self, messages_batch: list[Messages], *, max_new_tokens: int, temperature: float,
        top_p: float, num_samples: int, seed: int, bar: bool,
    ) -> Sampled: ...  # fmt: skip


@dataclass
class LoadedAnswerer:
    """A model and its tokenizer loaded by `backend` (the tokenizer also sizes budgets), decoding
    up to `rows` completions at once."""

    backend: Any
    model: Any
    tokenizer: Any
    rows: int = ROWS

    def sample(self, messages_batch: list[Messages], *, bar: bool = False, **kwargs: Any):
        return self.backend.sample(
            self.model, self.tokenizer, messages_batch, progress=bar, batch_size=self.rows,
            **kwargs,
        )  # fmt: skip


def load_answerer(source: str, device: str = "auto", rows: int = ROWS) -> LoadedAnswerer:
    """`source` (a built-in name, a model folder or an artifact) loaded to sample, by the backend
    that wrote it, decoding up to `rows` completions at once (evaluation passes the training
    rollout's `grpo.rollout_batch_size`: a GPU is sized for it)."""
    from sparring import backends

    if rows < 1:
        raise ValueError(f"rows must be >= 1, got {rows}")
    backend = backends.for_model(source)
    model, tokenizer = backend.load_for_sampling(source, device=device)
    return LoadedAnswerer(backend, model, tokenizer, rows)


def sample_answers(
    answerer: Answerer,
    problems: Sequence[Problem],
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    num_samples: int = 1,
    seed: int = 0,
    stages: Sequence[str] = ("code",),
    label: str | None = None,
    bar: bool = False,
) -> Sampled:
    """`num_samples` raw completions per problem (`texts[i]` for `problems[i]`) through the
    answerer prompt; `label` prints a progress line per chunk of a long batch, `bar` a bar."""
    messages = [answerer_messages(p, stages) for p in problems]
    kwargs = {"max_new_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p,
              "num_samples": num_samples, "bar": bar}  # fmt: skip
    if not messages:
        return Sampled([])
    if label is None or len(messages) <= FEW:
        return answerer.sample(messages, seed=seed, **kwargs)
    from sparring import progress

    countdown = progress.Countdown(len(messages), label=label)
    out = Sampled([])
    for start in range(0, len(messages), CHUNK):
        part = messages[start : start + CHUNK]
        out = out + answerer.sample(part, seed=seed + start, **kwargs)
        countdown.done(f"answers {len(out.texts)}/{len(messages)} problems", units=len(part))
    return out


def sample_final_tests(
    cfg: Any,
    backend: Any,
    model: Any,
    tok: Any,
    asked_rows: list[dict[str, Any]],
    problems: list[Problem],
    seed: int,
) -> list[list[str]]:
    """`steps.final_samples` completions of the trained generator for each row of `asked_rows`
    ([] for none), said first: minutes on a CPU, then a bar."""
    if not asked_rows:
        return []
    batch_size = cfg.sampling_rows()
    max_new_tokens = completion_tokens(cfg, tok, problems, "generator")
    lines.say(
        f"{lines.LABEL or 'train-generator'} final tests: {len(asked_rows)} problems x "
        f"{cfg.steps.final_samples} completions"
    )
    return backend.sample(
        model, tok, [r["prompt"] for r in asked_rows],
        max_new_tokens=max_new_tokens, temperature=cfg.grpo.temperature, top_p=cfg.grpo.top_p,
        num_samples=cfg.steps.final_samples, seed=seed, batch_size=batch_size,
        progress=True,
    ).texts  # fmt: skip

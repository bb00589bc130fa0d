"""The GRPO completion budget and the fence rule, without a model: `completion_budget` (the
`grpo.max_completion_length: 0` "auto" size), the config field's validation, and the text rule
that ends a sample at its closing code fence (`fence_end`, `trim_after_fence`, `FenceStop` on
token sequences through a stub tokenizer)."""

from __future__ import annotations

import pytest

from sparring.backends.budget import completion_budget
from sparring.backends.torch.generation import FenceStop, fence_end, trim_after_fence
from sparring.config import ConfigError, load_config


def test_budget_is_the_quantile_times_margin_plus_fence():
    lengths = list(range(10, 110, 10))  # 10..100; the 0.9 quantile interpolates to 91
    assert completion_budget(lengths, floor=1) == 131  # ceil(91 * 1.3 + 12) = ceil(130.3)
    assert completion_budget(lengths, quantile=1.0, margin=1.0, fence_tokens=0, floor=1) == 100
    assert completion_budget([50], margin=2.0, fence_tokens=0, floor=1) == 100


def test_budget_is_clamped_and_order_free():
    assert completion_budget([5, 3, 4]) == 64  # floor
    assert completion_budget([2000, 3000]) == 512  # cap
    shuffled, ordered = [300, 20, 40], [20, 40, 300]
    assert completion_budget(shuffled, cap=999) == completion_budget(ordered, cap=999)
    assert completion_budget([]) == 512  # nothing to size from: the cap


@pytest.mark.parametrize(
    "kwargs", [{"quantile": 0.0}, {"quantile": 1.5}, {"margin": 0.0}, {"floor": 600}]
)
def test_budget_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        completion_budget([10, 20], **kwargs)


def test_config_accepts_auto_and_rejects_tiny_lengths():
    cfg = load_config(None, ["grpo.max_completion_length=0"])
    assert cfg.grpo.max_completion_length == 0
    assert cfg.grpo.stop_at_fence and cfg.grpo.mask_truncated_completions
    assert cfg.grpo.drop_flat_groups
    # the error names the --set that gave the value (issue 75), then the field
    prefix = r"^--set grpo\.max_completion_length=-?\d: "
    with pytest.raises(ConfigError, match=prefix + r"grpo\.max_completion_length: 2 .*0 \(auto\)"):
        load_config(None, ["grpo.max_completion_length=2"])
    with pytest.raises(ConfigError, match=prefix + r"grpo\.max_completion_length: -1 is too small"):
        load_config(None, ["grpo.max_completion_length=-1"])


def test_resolve_uses_references_only_for_auto():
    from sparring.backends.budget import resolve_completion_length
    from sparring.errors import SparringError

    class CharTokenizer:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": list(range(len(text)))}

    tok = CharTokenizer()
    fixed = load_config(None, ["grpo.max_completion_length=96"])
    assert resolve_completion_length(fixed, tok, None) == 96
    auto = load_config(None, ["grpo.max_completion_length=0"])
    refs = ["x" * 50, "y" * 100]  # 0.9 quantile 95 chars -> 95 * 3.0 (AUTO_MARGIN) + 12 = 297
    assert resolve_completion_length(auto, tok, refs) == 297
    assert resolve_completion_length(auto, tok, refs, margin=1.3) == 136  # ceil(135.5)
    with pytest.raises(SparringError, match=r"^grpo\.max_completion_length: 0 \(auto\)"):
        resolve_completion_length(auto, tok, [])


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Sure!\n```python\ndef f(x):\n    return x\n```\nThis returns x.", "```"),
        ("```py\nx = 1\n```\n\nmore", "```"),
        ("```\ndef f(): pass\n```tail", "```"),  # a bare fence counts as python
        ("``` python\ndef f(): pass\n    ```\n", "    ```"),  # indented closing fence
    ],
)
def test_trim_keeps_the_text_up_to_the_closing_fence(text, kept):
    trimmed = trim_after_fence(text)
    assert trimmed.endswith(kept) and text.startswith(trimmed) and len(trimmed) < len(text)


@pytest.mark.parametrize(
    "text",
    [
        "```python\ndef f(x):\n    return x\n",  # still open
        "Use ```python``` blocks",  # no fence line
        "```json\n{}\n```\n",  # another language only
        "no code at all",
    ],
)
def test_no_closed_python_block_means_no_stop(text):
    assert fence_end(text) is None and trim_after_fence(text) == text


class PieceTokenizer:
    """Token id i decodes to PIECES[i]; id 0 is EOS (decodes to nothing as a special token)."""

    PIECES = ("<eos>", "```", "python", "\n", "def f():", " return 1", "``", "`", "json", "x")

    def decode(self, ids, skip_special_tokens=False):
        return "".join("" if (i == 0 and skip_special_tokens) else self.PIECES[i] for i in ids)


def run_criterion(rows, prompt_length=2):
    """Feed FenceStop the rows one generated token at a time, as generate does; returns the
    per-step stop decisions and the criterion."""
    import torch

    stop = FenceStop(PieceTokenizer(), prompt_length, eos_token_ids=[0])
    seqs = torch.tensor(rows)
    decisions = []
    for length in range(prompt_length + 1, seqs.shape[1] + 1):
        decisions.append(stop(seqs[:, :length], None).tolist())
    return decisions, stop


def test_fence_stop_decides_per_row_on_token_sequences():
    prompt = [9, 9]
    rows = [
        [*prompt, 1, 2, 3, 4, 3, 1, 9, 9],  # ```python\n def\n ``` -> stops at its 6th token
        [*prompt, 1, 2, 3, 4, 3, 6, 7, 9],  # closing fence split as `` + ` -> stops at the 7th
        [*prompt, 1, 8, 3, 9, 3, 1, 9, 9],  # a json block closes: never stops
        [*prompt, 4, 0, 1, 2, 3, 4, 3, 1],  # EOS first: left alone even if a fence follows
    ]
    decisions, stop = run_criterion(rows)
    assert stop.stopped_at == [6, 7, None, None]
    assert stop.ended == [False, False, False, True]
    assert [d[0] for d in decisions] == [False] * 5 + [True] * 3
    assert [d[1] for d in decisions] == [False] * 6 + [True] * 2
    assert not any(d[2] or d[3] for d in decisions)


def test_fence_stop_infers_the_prompt_length_at_its_first_call():
    import torch

    stop = FenceStop(PieceTokenizer(), eos_token_ids=[0])
    seq = torch.tensor([[9, 9, 9, 1, 2, 3, 4, 3, 1]])
    for length in range(4, seq.shape[1] + 1):  # the first call sees one generated token
        stop(seq[:, :length], None)
    assert stop.prompt_length == 3 and stop.stopped_at == [6]


def test_completion_tokens_takes_a_real_hf_tokenizer_or_mlx_wrapper():
    """`make run` once died here: an HF tokenizer's `_tokenizer` is the uncallable Rust one."""
    from sparring.backends.budget import completion_tokens
    from sparring.backends.torch.models import load_model
    from sparring.problems import load_bundled

    _, tok = load_model("tiny-random")
    auto = load_config(None, ["grpo.max_completion_length=0"])
    problems = load_bundled()[:8]
    budget = completion_tokens(auto, tok, problems)
    assert 64 <= budget <= 1024

    class MlxLikeWrapper:  # mlx-lm's TokenizerWrapper: not callable, the HF one inside
        def __init__(self, inner):
            self._tokenizer = inner

    assert completion_tokens(auto, MlxLikeWrapper(tok), problems) == budget
    # the generator is sized from tests like the problem's own, not from a function
    assert 64 <= completion_tokens(auto, tok, problems, "generator") <= 512
    more = load_config(None, ["grpo.max_completion_length=0", "steps.generator_tests=8"])
    assert completion_tokens(more, tok, problems, "generator") > completion_tokens(
        auto, tok, problems, "generator"
    )  # asked for more tests, it may write more


def test_a_humaneval_answer_is_sized_without_the_given_docstring():
    from sparring.backends.budget import answer_target, completion_targets
    from sparring.problems import load_humaneval

    task = load_humaneval(limit=1)[0]  # HumanEval/0: a long docstring, a short body
    target = answer_target(task)
    body = task.reference_solution[len(task.prompt) :]
    assert target.startswith(f"def {task.entry_point}(") and target.endswith(body)
    assert '"""' not in target and len(target) < len(task.reference_solution) - 200
    assert completion_targets([task]) == [target]


def test_the_generators_budget_follows_the_tests_it_is_asked_for():
    from sparring.backends.budget import completion_targets
    from sparring.problems import load_bundled

    problems = [p for p in load_bundled() if len(p.baseline_tests) >= 5][:4]
    three = completion_targets(problems, "generator")
    five = completion_targets(problems, "generator", 5)
    assert [t.count("assert") for t in three] == [3] * len(problems)
    assert [t.count("assert") for t in five] == [5] * len(problems)

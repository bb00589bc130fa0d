"""The one answerer sampler (sparring.backends.sampler): the answerer prompt for every problem,
chunks with
a progress line each for long labelled batches (seed + chunk start, so short batches sample as
before), statistics summed over chunks, and the prompt of a problem with no signature.

The answerer here is a scripted one (it answers "<seed>:<row>" and counts tokens as characters):
what is tested is the sampler's own bookkeeping, which no model changes; the torch and MLX
samplers behind it are exercised in tests/integration (test_phases, test_inference).
"""

from __future__ import annotations

from sparring.backends.base import Sampled
from sparring.backends.sampler import CHUNK, FEW, sample_answers
from sparring.problems import Problem
from sparring.problems.prompts import answerer_messages


class ScriptedAnswerer:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int]] = []  # (rows, seed, num_samples)
        self.prompts: list[str] = []

    def sample(self, messages_batch, *, max_new_tokens, temperature, top_p, num_samples, seed, bar):
        self.calls.append((len(messages_batch), seed, num_samples))
        self.prompts.extend(m[-1]["content"] for m in messages_batch)
        texts = [[f"{seed}:{i}"] * num_samples for i in range(len(messages_batch))]
        return Sampled(texts, tokens=3 * len(messages_batch), seconds=0.5, fence_stops=1)


def problems(n: int) -> list[Problem]:
    return [
        Problem(f"p{i}", f"Add {i}.", "def add(a, b):", ["assert add(1, 2) == 3"], "")
        for i in range(n)
    ]


def test_a_long_labelled_batch_goes_in_chunks_with_a_line_each(capsys):
    n = CHUNK + 4
    answerer = ScriptedAnswerer()
    out = sample_answers(answerer, problems(n), max_new_tokens=8, seed=100, label="eval")
    assert answerer.calls == [(CHUNK, 100, 1), (4, 100 + CHUNK, 1)]
    assert out.texts[0] == ["100:0"] and out.texts[CHUNK] == [f"{100 + CHUNK}:0"]
    assert len(out.texts) == n
    assert (out.tokens, out.seconds, out.fence_stops) == (3 * n, 1.0, 2)
    lines = [x for x in capsys.readouterr().out.splitlines() if "answers" in x]
    assert [x.split("eval ")[1].split(" left~")[0] for x in lines] == [
        f"answers {CHUNK}/{n} problems",
        f"answers {n}/{n} problems",
    ]


def test_short_or_unlabelled_batches_are_one_call_with_the_seed_given(capsys):
    for n, label in ((FEW, "eval"), (CHUNK + 4, None)):
        answerer = ScriptedAnswerer()
        out = sample_answers(answerer, problems(n), max_new_tokens=8, seed=7, num_samples=3,
                             label=label)  # fmt: skip
        assert answerer.calls == [(n, 7, 3)]
        assert out.texts[1] == ["7:1"] * 3
    assert "answers" not in capsys.readouterr().out
    assert sample_answers(ScriptedAnswerer(), [], max_new_tokens=8).texts == []


def test_every_answer_is_asked_with_the_answerer_prompt():
    answerer = ScriptedAnswerer()
    stages = ("informal", "code")
    ps = problems(2)
    sample_answers(answerer, ps, max_new_tokens=8, stages=stages)
    assert answerer.prompts == [answerer_messages(p, stages)[-1]["content"] for p in ps]


def test_a_problem_with_no_signature_asks_for_a_function_that_solves_it():
    free = Problem("q", "Reverse a string.", "", [], "")
    task = answerer_messages(free)[-1]["content"]
    assert task == (
        "Reverse a string.\n\nWrite a complete Python function that solves this, in one "
        "```python code block. Do not write tests or explanations."
    )
    signed = answerer_messages(problems(1)[0])[-1]["content"]
    assert signed.startswith("Add 0.\n\nFunction signature:\ndef add(a, b):")
    assert "Write the whole function `add` in one ```python code block." in signed

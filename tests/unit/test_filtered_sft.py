"""The filtered fine-tuning mode's pure parts (sparring.phases.filtered_sft): which answers a
filter keeps, and the SFT rows it builds from them (the prompt they were sampled with, their
text as sampled); the config field that turns it on. The phase itself, with the sandbox and a
real SFT step, is tests/integration/test_phases_filtered_sft.py."""

from __future__ import annotations

import pytest

from sparring.config import ConfigError, load_config
from sparring.phases.filtered_sft import kept_answers, sft_rows
from sparring.problems import load_sources, prompts

EVERY = [[True, False, False], [False, False]]
GIVEN = [[True, True, False], [True, False]]


def test_every_keeps_the_answers_passing_every_test_and_given_the_given_passers():
    assert kept_answers(EVERY, GIVEN, "every") == [[0], []]
    assert kept_answers(EVERY, GIVEN, "given") == [[0, 1], [0]]
    with pytest.raises(ValueError, match=r"filtered_sft\.filter 'fuzz'"):
        kept_answers(EVERY, GIVEN, "fuzz")


def test_rows_pair_the_sampling_prompt_with_each_kept_answer_as_sampled():
    problems = load_sources(["bundled"])[:2]
    texts = [["a0", "a1", "a2"], ["b0", "b1"]]
    rows = sft_rows(problems, texts, [[0, 2], []], ["code"])
    assert [r["completion"] for r in rows] == [
        [{"role": "assistant", "content": "a0"}],
        [{"role": "assistant", "content": "a2"}],
    ]
    assert rows[0]["prompt"] == prompts.answerer_messages(problems[0], ["code"])
    assert sft_rows(problems, texts, [[], []], ["code"]) == []


def test_the_mode_is_off_by_default_and_its_fields_are_checked():
    cfg = load_config("configs/learn.yaml")
    assert cfg.filtered_sft.samples == 0
    on = load_config("configs/learn.yaml", ["filtered_sft.samples=16", "filtered_sft.filter=given"])
    assert (on.filtered_sft.samples, on.filtered_sft.filter) == (16, "given")
    with pytest.raises(ConfigError, match=r"filtered_sft\.filter"):
        load_config("configs/learn.yaml", ["filtered_sft.filter=oracle"])
    with pytest.raises(ConfigError, match="phase_schedule generator has no answerer phase"):
        load_config("configs/learn.yaml", ["filtered_sft.samples=4", "phase_schedule=generator"])

"""Bad input through every door a user opens: problem files (JSON and JSONL), experiment configs,
`--set` values and HumanEval sample files, fed random bytes and random text (hypothesis). Each
loader either accepts the input or raises a SparringError whose message is one line naming the
file (or the `--set` value); never another exception, which the CLI would show as a traceback."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparring.config import load_config
from sparring.errors import SparringError
from sparring.evaluation.humaneval import read_samples
from sparring.problems import load_source

SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# random bytes, and near-misses: JSON documents of the wrong shape, truncated valid files
PROBLEM = {
    "id": "p1",
    "description": "Add.",
    "function_signature": "def add(a, b):",
    "baseline_tests": ["assert add(1, 2) == 3"],
    "reference_solution": "def add(a, b):\n    return a + b\n",
}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
mutated_problem = st.dictionaries(
    st.sampled_from([*PROBLEM, "difficulty", "entry_point", "prompt"]), json_values, max_size=7
).map(lambda d: {**PROBLEM, **d})
payloads = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.lists(mutated_problem, max_size=3).map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=40).map(lambda b: json.dumps([PROBLEM]).encode()[:30] + b),
)


def _one_line(exc: SparringError, where: str) -> None:
    text = str(exc)
    assert "\n" not in text.strip(), text
    assert where in text, f"{text!r} does not name {where}"


@SETTINGS
@given(data=payloads, suffix=st.sampled_from([".json", ".jsonl"]))
def test_problem_files(tmp_path, data, suffix):
    path = tmp_path / f"problems{suffix}"
    path.write_bytes(data)
    try:
        problems = load_source(str(path))
    except SparringError as exc:
        _one_line(exc, path.name)
    else:
        assert all(p.id and p.reference_solution is not None for p in problems)


@SETTINGS
@given(text=st.text(max_size=60))
def test_set_values(text):
    try:
        load_config(None, [text])
    except SparringError as exc:
        assert "\n" not in str(exc).strip(), str(exc)


LOADERS = {"exp.yaml": load_config, "samples.jsonl": read_samples}


@pytest.mark.parametrize("name", sorted(LOADERS))
@SETTINGS
@given(data=st.one_of(st.binary(max_size=300), json_values.map(lambda v: json.dumps(v).encode())))
def test_config_and_sample_files(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    try:
        LOADERS[name](path)
    except SparringError as exc:
        _one_line(exc, path.name)


@pytest.mark.parametrize("name", ["problems.json", "exp.yaml", "samples.jsonl"])
def test_non_utf8_is_named(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b'{"id": "\xff\xfe"}\n')
    with pytest.raises(SparringError, match=name):
        {"problems.json": load_source, **LOADERS}[name](str(path))

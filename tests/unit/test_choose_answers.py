"""`sparring infer --answers N --choose-by RULE` (sparring.experiments.choose_answers): planted
answers in the real sandbox, no model. An answer that memorises the problem's tests passes them
as the right one does; by the given tests alone both tie and the first is returned, while the
fuzzer's tests (kept only where the reference passes them) leave the right one alone; a source
without a reference to validate against is refused before anything is sampled."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from sparring.cli.main import main
from sparring.config import load_config
from sparring.experiments import choose_answers as ca
from tests.unit import test_precheck as pre
from tests.unit.test_precheck import _args

ROOT = Path(__file__).resolve().parents[2]
sandbox, problems = pre.sandbox, pre.problems  # list_stat at levels 2 and 3 (seed 2)


def test_doctests():
    assert doctest.testmod(ca).failed == 0


def _memoriser(p) -> str:
    """Right on the inputs of the problem's own tests, None anywhere else."""
    name = p.function_name
    ref = p.reference_solution.replace(f"def {name}(", "def _ref(", 1)
    known = [_args(t) for t in p.baseline_tests]
    return (
        f"```python\n{ref}\ndef {name}(*args):\n    if list(args) in {known!r}:\n"
        "        return _ref(*args)\n    return None\n```"
    )


def _answers(p) -> list[str]:
    """The memoriser first, then the reference, then no code."""
    return [_memoriser(p), f"```python\n{p.reference_solution}```", "no code here"]


@pytest.fixture(scope="module")
def cfg():
    return load_config(str(ROOT / "configs" / "learn.yaml"))


def test_the_fuzzers_tests_choose_the_right_answer_the_given_tests_cannot(cfg, problems):
    texts = [_answers(p) for p in problems]
    by_given = ca.choose_answers(cfg, problems, texts, ca.parse_rule("none", "m"), 3, 2, 4)
    by_fuzz = ca.choose_answers(cfg, problems, texts, ca.parse_rule("fuzz", "m"), 3, 2, 4)
    for given, fuzz in zip(by_given, by_fuzz, strict=True):
        assert (given["rule"], given["tied"], given["chosen"]) == ("none", [0, 1], 0)
        assert [a["given"] for a in given["answers"]] == [True, True, False]
        assert fuzz["rule"] == "fuzz" and fuzz["tests"]["fuzz"]["kept"]
        assert (fuzz["tied"], fuzz["chosen"], fuzz["fallback"]) == ([1], 1, False)
        assert fuzz["passes"][1] == len(fuzz["tests"]["fuzz"]["kept"]) > fuzz["passes"][0]


def test_a_rule_is_none_or_sources_joined_by_plus():
    assert [s.name for s in ca.parse_rule("fuzz+base", "m")] == ["fuzz", "base"]
    for bad in ("fuzz+", "bank", "fuzz+fuzz"):
        with pytest.raises(ValueError):
            ca.parse_rule(bad, "m")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--choose-by", "fuzz"], "--choose-by chooses among answers: give --answers N"),
        (["--answers", "0"], "--answers 0: give 1 or more"),
        (["--answers", "2", "--choose-by", "bank"], "--choose-by: source 'bank'"),
        (["--answers", "2", "--choose-by", "fuzz"],
         "--choose-by fuzz: 1 of 1 problems have no reference solution"),
    ],
)  # fmt: skip
def test_a_bad_choice_is_one_line_before_any_sampling(argv, message, capsys, monkeypatch):
    from sparring.serving import inference

    def no_sampling(*args, **kwargs):
        raise AssertionError("sampled before the flags were checked")

    monkeypatch.setattr(inference, "solve", no_sampling)
    problem = [
        "--problem",
        "add",
        "--signature",
        "def add(a, b):",
        "--tests",
        "assert add(1, 2) == 3",
    ]
    assert main(["infer", "--checkpoint", "tiny-random", *problem, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_infer_returns_the_chosen_answer_with_its_tied_set(tmp_path, problems, capsys, monkeypatch):
    """The command end to end with the sampler planted: the answer printed and filed is the
    chosen one, and the choice, the tied set and all N completions are beside it."""
    from sparring.backends import sampler
    from sparring.backends.base import Sampled

    planted = {p.description: _answers(p) for p in problems}

    class Planted:
        def sample(self, messages, **kwargs):
            return Sampled([next(v for d, v in planted.items() if d in str(m)) for m in messages])

    monkeypatch.setattr(sampler, "load_answerer", lambda *a, **k: Planted())
    file = tmp_path / "problems.jsonl"
    file.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in problems))
    out = tmp_path / "out.json"
    argv = ["infer", "--checkpoint", "tiny-random", "--batch", "--problems-file", str(file),
            "--answers", "3", "--choose-by", "fuzz", "--output", str(out)]  # fmt: skip
    assert main(argv) == 0
    records = json.loads(out.read_text())
    assert [r["choice"]["chosen"] for r in records] == [1] * len(problems)
    assert all(r["completion"] == r["samples"][1] for r in records)
    assert "Chosen: answer 1 of 3 by fuzz (tied: [1]" in capsys.readouterr().out

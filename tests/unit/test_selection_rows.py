"""The selection study's rows (sparring.experiments.selection_rows, `sparring precheck select`
and `select-report`): rows built from planted answers and planted writer completions in the
real sandbox carry the right flags, tests and verdicts; a writer's test that fails the
reference is kept in the row, marked invalid, and never chooses; the report's scores are
choose.score_rows' on the same rows, its intervals resample whole files then tasks; the
commands end to end with the sampling planted (no model), and their one-line errors."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from sparring.config import load_config
from sparring.evaluation import choose
from sparring.experiments import selection_report as rep
from sparring.experiments import selection_rows as sr
from sparring.problems.families import stated_case_tests, task_tag
from sparring.problems.given_tests import given_view
from tests.unit import test_precheck as pre
from tests.unit.test_precheck import WRONG, _args, _wrong_at

ROOT = Path(__file__).resolve().parents[2]
sandbox, problems = pre.sandbox, pre.problems  # the pre-check's fixtures: list_stat, levels 2, 3


@pytest.fixture(scope="module")
def cfg():
    return load_config(str(ROOT / "configs" / "learn.yaml"))


def test_doctests():
    assert doctest.testmod(sr).failed == 0
    assert doctest.testmod(rep).failed == 0


def _stated(p) -> str:
    return p.baseline_tests[stated_case_tests(p)[0]]


def _call(p, test: str) -> str:
    return f"{p.function_name}({', '.join(repr(a) for a in _args(test))})"


def _answers(p) -> list[str]:
    """Right; wrong on the stated case only (passes the given tests); wrong on a given test;
    no code."""
    return [
        f"```python\n{p.reference_solution}```",
        _wrong_at(p, _stated(p)),
        _wrong_at(p, given_view(p, 3).baseline_tests[0]),
        "no code here",
    ]


def _completions(p) -> dict[str, list[str]]:
    """`good` writes the stated case (a wrong expected value: the reference's replaces it);
    `bad` writes a test only the wrong answer passes, which the reference fails."""
    call = _call(p, _stated(p))
    return {
        "good": [f"```python\nassert {call} == 5\n```"],
        "bad": [f"```python\nassert {call} in ({WRONG},)\n```"],
    }


@pytest.fixture(scope="module")
def built(cfg, problems, sandbox):
    sources = sr.parse_sources(["good=writer:planted/good", "bad=writer:planted/bad"], "base-m")
    completions = {
        name: {p.id: _completions(p)[name] for p in problems} for name in ("good", "bad")
    }
    texts = [_answers(p) for p in problems]
    rows = sr.build_rows(cfg, problems, texts, 3, 3, sources, completions, 2, sandbox)
    return rows, texts


def test_rows_from_planted_answers_carry_flags_tests_and_verdicts(built, problems):
    rows, _ = built
    assert [r["task"] for r in rows] == [task_tag(p) for p in problems]
    assert [r["meta"]["level"] for r in rows] == [2, 3]
    for row, p in zip(rows, problems, strict=True):
        assert row["meta"]["id"] == p.id and row["meta"]["family"] == "list_stat"
        assert row["meta"]["written"] == {"good": 1, "bad": 1}
        answers = row["answers"]
        assert [a["given"] for a in answers] == [True, True, False, False]
        assert [a["right"] for a in answers] == [True, False, False, False]
        assert answers[3]["code"] is None and "def " in answers[0]["code"]
        good = row["tests"]["good"]
        assert len(good) == 1 and good[0]["valid"] and not good[0]["test"].endswith("== 5")
        assert good[0]["test"].startswith(f"assert {_call(p, _stated(p))} == ")
        # the stated case: the right answer and the one wrong on a given test pass it
        assert [a["verdicts"]["good"] for a in answers] == [[True], [False], [True], [None]]
        assert choose.choose(row, "good")["tied"] == [0]
    assert json.loads(choose.rows_jsonl(rows).splitlines()[0]) == rows[0]


def test_a_writers_test_that_fails_the_reference_is_dropped_and_never_chooses(built):
    """`bad`'s test is failed by the reference (and the right answer) and passed by the answer
    wrong on the stated case: counted as valid, it would choose that wrong answer (score 0)."""
    rows, _ = built
    for row in rows:
        (bad,) = row["tests"]["bad"]
        assert bad["valid"] is False and bad["reason"].startswith("fails the reference")
        assert [a["verdicts"]["bad"] for a in row["answers"]] == [[False], [True], [False], [None]]
        c = choose.choose(row, "bad")
        assert (c["tests_kept"], c["tests_dropped"]) == (0, 1)
        assert c["tied"] == [0, 1] and c["expected_exact"] == "1/2"  # as `none` chooses
    scored = choose.score_rows(rows, ["good", "bad"])["groups"]["all"]["rules"]
    assert (scored["good"]["score"], scored["bad"]["score"], scored["none"]["score"]) == (
        1.0,
        0.5,
        0.5,
    )
    assert scored["good"]["right_rejected"] == scored["bad"]["right_rejected"] == 0


def test_the_fuzzer_as_a_source(cfg, problems, sandbox):
    """At level 2 the fuzzer draws the empty list (the stated input): its kept tests choose the
    right answer there; its tests are valid, at most k, and judged once per answer."""
    (fuzz,) = sr.parse_sources(["fuzz"], "base-m")
    texts = [_answers(p) for p in problems]
    rows = sr.build_rows(cfg, problems, texts, 3, 3, [fuzz], {}, 2, sandbox)
    for row in rows:
        kept = [t for t in row["tests"]["fuzz"] if t["valid"]]
        assert 1 <= len(kept) <= 3 and row["tests"]["fuzz"][: len(kept)] == kept
        assert all(len(a["verdicts"]["fuzz"]) == len(row["tests"]["fuzz"]) for a in row["answers"])
        assert row["meta"]["written"]["fuzz"] >= len(kept)
    assert choose.choose(rows[0], "fuzz")["tied"] == [0]


def test_sources_are_parsed_with_one_line_errors():
    got = sr.parse_sources(["fuzz", "base", "writer:runs/w1/model", "w2=writer:runs/w2"], "m")
    assert [(s.name, s.model, s.fuzz) for s in got] == [
        ("fuzz", "", True), ("base", "m", False), ("writer", "runs/w1/model", False),
        ("w2", "runs/w2", False),
    ]  # fmt: skip
    for bad, says in [
        (["fuz"], "use fuzz, base or writer:PATH"),
        (["writer:"], "use fuzz, base or writer:PATH"),
        (["writer:a", "writer:b"], "a second source named 'writer'"),
        (["none=fuzz"], "reserved"),
        (["a+b=fuzz"], "reserved"),
        (["w-1=fuzz"], "reserved"),  # "-" would make the report's contrast w-1-none two-way
    ]:
        with pytest.raises(ValueError, match=says):
            sr.parse_sources(bad, "m")


def _row(task, level, right, writer_passes, fuzz_passes=None):
    """Three answers passing the given tests; the writer's one valid test passed as given."""
    tests = {"writer": [{"test": "assert f(0) == 0", "valid": True, "reason": "ok"}]}
    verdicts = {"writer": [[v] for v in writer_passes]}
    if fuzz_passes is not None:
        tests["fuzz"] = [{"test": "assert f(1) == 1", "valid": True, "reason": "ok"}]
        verdicts["fuzz"] = [[v] for v in fuzz_passes]
    meta = {"level": level, "family": "fam", "id": f"{task}-i"}
    return choose.task_row(task, [True] * 3, right, tests, verdicts, meta)


def _files():
    """Two writer seeds over the same 6 tasks (3 a level): seed A's writer finds the right
    answer everywhere, seed B's never; the fuzzer ties everywhere."""
    rights = [[True, False, False], [False, True, False], [False, False, True]] * 2
    a = [_row(f"t{i}", 2 + i // 3, r, r, [True] * 3) for i, r in enumerate(rights)]
    b = [_row(f"t{i}", 2 + i // 3, r, [not x for x in r], [True] * 3) for i, r in enumerate(rights)]
    return a, b


def test_the_reports_numbers_are_score_rows_on_the_same_rows():
    a, b = _files()
    report = rep.select_report([a, b], ["writer", "fuzz"], n_boot=300, seed=1)
    scored = choose.score_rows([*a, *b], ["writer", "fuzz"], by="level")
    assert list(report["groups"]) == ["2", "3", "all"]
    for group, g in report["groups"].items():
        for rule, r in g["rules"].items():
            assert r["score"] == scored["groups"][group]["rules"][rule]["score"]
            assert r["lo"] - 1e-12 <= r["score"] <= r["hi"] + 1e-12  # float sums in resamples
        assert g["tasks"] == (3 if group != "all" else 6) and g["rows"] == 2 * g["tasks"]
    pooled = report["groups"]["all"]
    assert pooled["rules"]["writer"]["score"] == 0.5  # (6 x 1 + 6 x 0) / 12
    assert pooled["contrasts"]["writer-none"]["value"] == pytest.approx(0.5 - 1 / 3)
    assert pooled["contrasts"]["writer-none"]["per_file"] == pytest.approx([2 / 3, -1 / 3])
    assert pooled["contrasts"]["fuzz-none"]["value"] == 0.0
    lines = rep.format_report(report)
    assert "SELECT level=all rule=writer score=0.500 (1/2) (" in "\n".join(lines)
    assert any(
        line.startswith("SELECT level=all contrast=writer-none diff=+0.167") for line in lines
    )


def test_intervals_resample_whole_files_then_tasks():
    """Within a file every task agrees, so a resample of tasks alone would give an interval of
    one point (0.5); drawing whole files reaches both files' values (1 and 0)."""
    a, b = _files()
    r = rep.select_report([a, b], ["writer"], n_boot=400, seed=0)["groups"]["all"]["rules"]
    assert (r["writer"]["lo"], r["writer"]["hi"]) == (0.0, 1.0)
    # seeded: a rerun repeats its intervals, another seed draws others
    one_right = [True, False, False]
    mixed = [_row(f"t{i}", 2, one_right, [True, i % 3 > 0, False]) for i in range(20)]
    runs = [rep.select_report([mixed], ["writer"], n_boot=200, seed=s)["groups"] for s in (0, 0, 1)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    # one file: the writer is right on every task, so every resample scores 1
    single = rep.select_report([a], ["writer"], n_boot=50)["groups"]["all"]["rules"]["writer"]
    assert (single["score"], single["lo"], single["hi"]) == (1.0, 1.0, 1.0)


# --------------------------------------------------------------------------- the commands


@pytest.fixture
def planted(monkeypatch, cfg):
    """The sampling planted: the answerer's answers are `_answers`, writers write `_completions`
    (a writer's folder name picks good or bad). Nothing loads a model."""
    from sparring.evaluation import calibration, generator_heldout

    monkeypatch.chdir(ROOT)  # the default config is configs/learn.yaml
    monkeypatch.setattr(calibration, "answerer_for", lambda cfg, model="": None)

    full = {}  # the writers see the given view; the planted tests read the whole problem

    def sample_model(cfg, answerer, problems, samples, seed, label=""):
        full.update((p.id, p) for p in problems)
        return [_answers(p)[:samples] for p in problems]

    def sample_tests(cfg, model, problems, samples, seed):
        return [_completions(full[p.id])[Path(model).name] for p in problems]

    monkeypatch.setattr(calibration, "sample_model", sample_model)
    monkeypatch.setattr(generator_heldout, "sample_tests", sample_tests)


def test_select_and_its_report_end_to_end_with_planted_sampling(planted, tmp_path, capsys):
    from sparring.cli.main import main

    out = tmp_path / "sel"
    argv = ["precheck", "select", "--families", "list_stat", "--per-family", "1", "--n", "4",
            "--source", "good=writer:x/good", "--source", "bad=writer:x/bad",
            "--no-heldout-filter", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert (
        "SELECT plan: 2 problems (1 families x 1 instances x levels 2,3, seed 2) x 4 answers"
        in printed
    )
    assert "SELECT level=all rule=good score=1.000 (1/1)" in printed
    assert "SELECT level=all rule=bad score=0.500 (1/2)" in printed
    rows = choose.read_rows(out / "rows.jsonl")
    assert [len(r["answers"]) for r in rows] == [4, 4]
    settings = json.loads((out / "select.json").read_text())["settings"]
    assert settings["sources"] == {"good": "good=writer:x/good", "bad": "bad=writer:x/bad"}
    assert (settings["n"], settings["k"], settings["seed"]) == (4, 3, 2)

    rows_file = str(out / "rows.jsonl")
    argv = ["precheck", "select-report", "--rows", rows_file, "--rows", rows_file,
            "--sources", "none,good,bad,good+bad", "--bootstrap", "50"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "SELECT report: 2 rows file(s) (writer seeds: " in printed and "4 rows;" in printed
    scored = choose.score_rows(rows, ["good", "bad", "good+bad"], by="level")
    for group, g in scored["groups"].items():
        for rule, r in g["rules"].items():
            assert (
                f"SELECT level={group} rule={rule} score={r['score']:.3f} ({r['score_exact']})"
                in printed
            )
        assert f"SELECT level={group} tasks=" in printed and f"oracle={g['oracle']:.3f}" in printed
    assert "contrast=good-none diff=+0.500 (1/2)" in printed and "dropped/task=1.00" in printed


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["select", "--n", "0", "--out", "o"], "--n 0: use N >= 1"),
        (["select", "--n", "2", "--source", "fuz", "--out", "o"], "--source: source 'fuz'"),
        (["select", "--n", "2", "--levels", "9", "--out", "o"], "--levels '9'"),
        (["select", "--n", "2", "--families", "nope", "--out", "o"], "unknown family 'nope'"),
        (["select", "--n", "2", "--out", "o"], "--levels: 2, 3 not trained by the config"),
        (["select-report", "--rows", "missing.jsonl"], "missing.jsonl: no such file"),
    ],
)  # fmt: skip
def test_user_mistakes_are_one_line_errors(argv, says, planted, tmp_path, capsys, monkeypatch):
    from sparring.cli.main import main

    argv = [str(tmp_path / a) if a in ("o", "missing.jsonl") else a for a in argv]
    assert main(["precheck", *argv]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("error: ") and says in err, err
    assert "Traceback" not in out + err


def test_select_report_errors_on_bad_rows_and_unknown_sources(tmp_path, capsys):
    from sparring.cli.main import main

    a, _ = _files()
    good = tmp_path / "rows.jsonl"
    good.write_text(choose.rows_jsonl(a))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": "t"}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for argv, says in [
        (["--rows", str(good), "--sources", "none,base"], "--sources: task 't0': no tests of"),
        (["--rows", str(bad)], f"--rows: {bad}:1: not a choice row"),
        (["--rows", str(empty)], "holds no rows"),
        (["--rows", str(good), "--bootstrap", "0"], "--bootstrap 0: use N >= 1"),
    ]:
        assert main(["precheck", "select-report", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: ") and says in err, err
    assert main(["precheck", "select-report", "--rows", str(good), "--bootstrap", "20"]) == 0
    printed = capsys.readouterr().out
    assert "rules none, fuzz, writer;" in printed  # the default: none and the row's sources
    assert "contrasts fuzz-none, writer-none;" in printed

"""`sparring precheck select --reuse FILE` (sparring.experiments.selection_rows' `reuse_error`
and `extend_rows`): one answerer's answers are sampled once; a later command takes them and
every filed source's tests and verdicts as filed, samples no answer, has only the sources the
file lacks write tests and runs every filed answer on them, giving the rows a run with every
source at once gives; a file whose tasks, seed, levels, answerer, N (or K, k, completions)
differ from the command's, or whose source a --source would replace, is refused in one line,
before anything is sampled."""

from __future__ import annotations

import json
from pathlib import Path

from sparring.evaluation import choose
from tests.unit import test_selection_rows as rows_tests

cfg, planted = rows_tests.cfg, rows_tests.planted  # the fixtures: nothing loads a model
GOOD, BAD = "good=writer:x/good", "bad=writer:x/bad"


def _select(out: Path, *extra: str) -> list[str]:
    return ["precheck", "select", "--families", "list_stat", "--per-family", "1", "--n", "4",
            "--no-heldout-filter", "--out", str(out), *extra]  # fmt: skip


def _no_answers_sampled(monkeypatch) -> list[str]:
    """From here on sampling an answer fails the test; the writers a command samples are
    recorded (their folder names)."""
    from sparring.evaluation import calibration, generator_heldout

    def sample_model(*args, **kwargs):
        raise AssertionError("answers were sampled again")

    writers: list[str] = []
    planted_tests = generator_heldout.sample_tests

    def sample_tests(cfg, model, problems, samples, seed):
        writers.append(Path(model).name)
        return planted_tests(cfg, model, problems, samples, seed)

    monkeypatch.setattr(calibration, "sample_model", sample_model)
    monkeypatch.setattr(generator_heldout, "sample_tests", sample_tests)
    return writers


def test_reuse_adds_only_the_missing_source_to_the_filed_answers(
    planted, tmp_path, capsys, monkeypatch
):
    from sparring.cli.main import main

    assert main(_select(tmp_path / "a", "--source", GOOD)) == 0
    assert main(_select(tmp_path / "both", "--source", GOOD, "--source", BAD)) == 0
    capsys.readouterr()
    filed = choose.read_rows(tmp_path / "a" / "rows.jsonl")

    writers = _no_answers_sampled(monkeypatch)  # after the first two commands
    reuse = str(tmp_path / "a" / "rows.jsonl")
    argv = _select(tmp_path / "b", "--reuse", reuse, "--source", GOOD, "--source", BAD)
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"reusing {reuse}: no answer sampled, new sources bad" in printed
    assert writers == ["bad"]  # good's tests come from the file
    rows = choose.read_rows(tmp_path / "b" / "rows.jsonl")
    assert rows == choose.read_rows(tmp_path / "both" / "rows.jsonl")  # as if run at once
    for old, new in zip(filed, rows, strict=True):
        assert new["tests"]["good"] == old["tests"]["good"]
        for a, b in zip(old["answers"], new["answers"], strict=True):
            assert (a["given"], a["right"], a["code"]) == (b["given"], b["right"], b["code"])
            assert b["verdicts"]["good"] == a["verdicts"]["good"]
        assert [a["verdicts"]["bad"] for a in new["answers"]] == [[False], [True], [False], [None]]
    settings = json.loads((tmp_path / "b" / "select.json").read_text())["settings"]
    assert settings["sources"] == {"good": GOOD, "bad": BAD}
    assert settings["reused"] == {"rows": reuse, "sources": ["good"]}
    assert "SELECT level=all rule=bad score=0.500 (1/2)" in printed


def test_a_file_of_other_settings_is_refused_before_sampling(
    planted, tmp_path, capsys, monkeypatch
):
    from sparring.cli.main import main

    assert main(_select(tmp_path / "a", "--source", GOOD)) == 0
    _no_answers_sampled(monkeypatch)
    capsys.readouterr()
    reuse = str(tmp_path / "a" / "rows.jsonl")
    for extra, says in [
        (["--n", "3"], "its n is 4, this command's 3"),
        (["--seed", "3"], "its seed is 2, this command's 3"),
        (["--levels", "2"], "its levels is [2, 3], this command's [2]"),
        (["--model", "other-model"], "its model is"),
        (["--given-tests", "2"], "its given_tests is 3, this command's 2"),
        (["--per-family", "2"], "its tasks are not this command's (0 only there, 2 only here"),
        (["--source", "good=writer:x/bad"], "its source 'good' is 'good=writer:x/good', not"),
    ]:
        assert main(_select(tmp_path / "b", "--reuse", reuse, *extra)) == 2
        out, err = capsys.readouterr()
        assert err.count("\n") == 1 and err.startswith(f"error: --reuse {reuse}: "), err
        assert says in err and "Traceback" not in out + err, err
        assert not (tmp_path / "b" / "rows.jsonl").exists()


def test_a_rows_file_without_its_settings_is_refused(planted, tmp_path, capsys):
    from sparring.cli.main import main

    rows = tmp_path / "lone" / "rows.jsonl"
    rows.parent.mkdir()
    rows.write_text(choose.rows_jsonl(rows_tests._files()[0]))
    for path, says in [(rows, "no select.json beside it"), (tmp_path / "x.jsonl", "no such file")]:
        assert main(_select(tmp_path / "b", "--reuse", str(path))) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, err
    # the new rows would overwrite the file every writer seed reuses
    assert main(_select(rows.parent, "--reuse", str(rows))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds the --reuse file; write the new rows elsewhere" in err

"""The selection study's report (sparring.experiments.selection_report, `sparring precheck
select-report`) on planted rows: contrasts A - B of any two rules (unions included) with the
exact value, each file's own value, a bootstrap interval resampling whole files then tasks and a
Student t-interval on the per-file values; the plan's verdict needs both intervals; the room
check and the fallback per group (a group without room cannot see a difference); the smallest
difference the design could see is the plan's 2.8 x sqrt(q / n); and the report rebuilds from
the filed rows files alone, its printed lines from its JSON."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest

from sparring.evaluation import choose
from sparring.experiments import selection_report as rep


def _row(task, level, given, right, passes, meta_id=None):
    """One task row; `passes[source]` per answer: whether it passes that source's one test
    (each source's own, so a union counts both)."""
    tests = {s: [{"test": f"assert f({i}) == {i}", "valid": True}] for i, s in enumerate(passes)}
    verdicts = {s: [[v] for v in vs] for s, vs in passes.items()}
    meta = {"level": level, "family": "fam", "id": meta_id or f"{task}-i"}
    return choose.task_row(task, given, right, tests, verdicts, meta)


def _seed_file(level, tasks, found, offset=0):
    """A writer seed's file at `level`: 3 answers passing the given tests, one right; the
    fuzzer and the base writer pass every answer (they tie: `none`'s 1/3); the writer passes
    only the right answer on the tasks `found` says, else only a wrong one."""
    rows = []
    for i in range(tasks):
        right = [j == i % 3 for j in range(3)]
        pick = right if found(i) else [j == (i + 1) % 3 for j in range(3)]
        passes = {"fuzz": [True] * 3, "base": [True] * 3, "writer": pick}
        rows.append(_row(f"L{level}-t{i + offset}", level, [True] * 3, right, passes))
    return rows


def test_t_quantiles_and_intervals_are_students():
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 3, 4, 5, 9, 10, 30):
        assert rep.t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), abs=1e-9)
    assert rep.t_interval([0.5]) is None and rep.t_interval([]) is None
    values = [0.10, 0.20, 0.05, 0.15]
    t = rep.t_interval(values)
    mean, sd = sum(values) / 4, math.sqrt(sum((v - 0.125) ** 2 for v in values) / 3)
    half = stats.t.ppf(0.975, 3) * sd / 2
    assert (t["mean"], t["df"]) == (pytest.approx(mean), 3)
    assert (t["lo"], t["hi"]) == (pytest.approx(mean - half), pytest.approx(mean + half))


def test_contrasts_are_parsed_by_rule_names_with_one_line_errors():
    sources = ["fuzz", "writer", "base"]
    assert rep.parse_contrast("writer-none", sources) == ("writer", "none")
    assert rep.parse_contrast("fuzz+writer-fuzz", sources) == ("fuzz+writer", "fuzz")
    assert rep.parse_contrast(" writer - base ", sources) == ("writer", "base")
    for bad, says in [
        ("writer", "use A-B"),
        ("writer-nope", "use A-B"),
        ("writer-writer", "a rule against itself"),
    ]:
        with pytest.raises(ValueError, match=says):
            rep.parse_contrast(bad, sources)


def test_contrasts_take_exact_values_per_file_values_and_both_intervals():
    """Four writer seeds; the writer finds the right answer on 4 of 5 tasks in each (a seed's
    own tasks), so writer - none is +0.467 in every file: both intervals lie above 0 (helps).
    writer - fuzz and (fuzz+writer) - fuzz, rules other than none, get the same."""
    files = [_seed_file(3, 20, lambda i, f=f: (i + f) % 5 != 0) for f in range(4)]
    contrasts = ["writer-none", "writer-fuzz", "fuzz+writer-fuzz", "writer-base"]
    report = rep.select_report(files, ["none", "writer"], contrasts, n_boot=400, seed=3)
    assert report["settings"]["contrasts"] == contrasts
    assert report["settings"]["rules"] == ["none", "writer", "fuzz", "fuzz+writer", "base"]
    scored = choose.score_rows([r for f in files for r in f], ["writer", "fuzz"], by="level")
    for group in ("3", "all"):
        c = report["groups"][group]["contrasts"]
        rules = scored["groups"][group]["rules"]
        exact = Fraction(rules["writer"]["score_exact"]) - Fraction(1, 3)
        assert c["writer-none"]["value_exact"] == f"{exact.numerator}/{exact.denominator}"
        for name in contrasts:
            assert c[name]["per_file"] == pytest.approx([0.8 - 1 / 3] * 4), name
            assert c[name]["lo"] > 0 and c[name]["t"]["lo"] > 0, name
            assert c[name]["verdict"] == rep.HELPS, name
    # the writer that finds the wrong answer on 4 of 5 tasks hurts
    worse = [_seed_file(2, 20, lambda i, f=f: (i + f) % 5 == 0) for f in range(4)]
    c = rep.select_report(worse, ["writer"], n_boot=300)["groups"]["all"]["contrasts"]
    assert c["writer-none"]["hi"] < 0 and c["writer-none"]["verdict"] == rep.HURTS


def test_the_verdict_needs_both_intervals():
    """Two seeds, +0.467 and +0.267: resampled, the draws lie above 0, but the t-interval on
    two per-file values straddles 0: no difference seen. One file has no t-interval at all."""
    files = [
        _seed_file(2, 30, lambda i: i % 5 != 0),
        _seed_file(2, 30, lambda i: i % 5 < 3),
    ]
    c = rep.select_report(files, ["writer"], n_boot=400)["groups"]["all"]["contrasts"]
    got = c["writer-none"]
    assert got["per_file"] == pytest.approx([0.8 - 1 / 3, 0.6 - 1 / 3])
    assert got["lo"] > 0 and got["t"]["lo"] < 0 < got["t"]["hi"] and got["t"]["df"] == 1
    assert got["verdict"] == rep.NO_DIFFERENCE
    alone = rep.select_report(files[:1], ["writer"], n_boot=200)["groups"]["all"]
    assert alone["contrasts"]["writer-none"]["lo"] > 0
    assert alone["contrasts"]["writer-none"]["t"] is None
    assert alone["contrasts"]["writer-none"]["verdict"] == rep.NO_DIFFERENCE


def test_the_bootstrap_draws_whole_files_for_any_contrast():
    """Within a file every task agrees (writer - fuzz is +2/3 in one, -1/3 in the other): a
    resample of tasks alone would give one point; drawing whole files reaches both."""
    files = [_seed_file(2, 12, lambda i: True), _seed_file(2, 12, lambda i: False)]
    c = rep.select_report(files, ["writer"], ["writer-fuzz"], n_boot=400)["groups"]["all"]
    got = c["contrasts"]["writer-fuzz"]
    assert (got["lo"], got["hi"]) == (pytest.approx(-1 / 3), pytest.approx(2 / 3))
    assert got["value"] == pytest.approx(1 / 6)


def test_the_room_check_and_the_fallback_per_group():
    """Level 2: 3 of 4 rows have a right and a wrong candidate (room), 1 has no answer passing
    the given tests (fallback). Level 3: the candidates are all right or all wrong: no room, so
    its contrasts cannot see a difference, and the report says so."""
    mixed = {"writer": [True, False, True]}
    rows = [
        _row("a", 2, [True, True, False], [True, False, False], mixed),
        _row("b", 2, [True, True, True], [False, True, False], mixed),
        _row("c", 2, [True, False, True], [True, False, False], mixed),
        _row("d", 2, [False, False, False], [False, False, False], mixed),  # fallback
        _row("e", 3, [True, True, False], [True, True, False], mixed),  # all candidates right
        _row("f", 3, [True, True, True], [False, False, False], mixed),  # all wrong
    ]
    assert [choose.room(r) for r in rows] == [True, True, True, False, False, False]
    report = rep.select_report([rows], ["writer"], n_boot=100)
    g2, g3, pooled = (report["groups"][g] for g in ("2", "3", "all"))
    assert (g2["room"], g2["room_rows"], g2["can_see"]) == (0.75, 3, True)
    assert (g2["fallback"], g2["fallback_rows"], g2["oracle"]) == (0.25, 1, 0.75)
    assert (g3["room"], g3["can_see"], g3["fallback"]) == (0.0, False, 0.0)
    assert pooled["room"] == 0.5 and pooled["fallback"] == pytest.approx(1 / 6)
    assert g3["contrasts"]["writer-none"]["verdict"] == rep.CANNOT_SEE
    assert g2["contrasts"]["writer-none"]["verdict"] == rep.NO_DIFFERENCE  # one file: no t
    lines = rep.format_report(report)
    assert any(
        line.startswith("SELECT level=3 room 0.000 under 0.05:")
        and "contrasts cannot see a difference (not a null)" in line
        for line in lines
    )
    assert not any(line.startswith("SELECT level=2 room ") for line in lines)
    assert "room=0.750 (3/4 rows" in "\n".join(lines) and "fallback=0.250 (1/4" in "\n".join(lines)
    # files over other answers are not one answerer's writer seeds: the report says so
    other = rep.select_report([rows, rows[1:]], ["writer"], n_boot=20)
    assert other["settings"]["answers_shared"] is False
    assert "answers shared by the files: NO" in rep.format_report(other)[0]


def test_the_smallest_difference_seen_is_the_plans_formula():
    """25 tasks, two answers each (right, wrong): the fuzzer's test finds the right one
    everywhere, the writer's on 20: a fifth of the tasks separate them, so the smallest
    difference seen is 2.8 x sqrt(0.2 / 25) (the plan's 2.8 x sqrt(0.2 / 200) at 200 tasks);
    base ties fuzz everywhere: no number."""
    rows = [
        _row(f"t{i}", 2, [True, True], [True, False],
             {"fuzz": [True, False], "base": [True, False], "writer": [i >= 5, i < 5]})
        for i in range(25)
    ]  # fmt: skip
    # two files (writer seeds) over the same 25 tasks: n is the tasks, not the 50 rows
    report = rep.select_report([rows, rows], ["writer"], ["writer-fuzz", "base-fuzz"], n_boot=50)
    c = report["groups"]["2"]["contrasts"]
    assert c["writer-fuzz"]["separation"] == pytest.approx(0.2)
    assert c["writer-fuzz"]["mdd"] == pytest.approx(2.8 * math.sqrt(0.2 / 25))
    assert c["base-fuzz"]["mdd"] is None
    lines = "\n".join(rep.format_report(report))
    assert "contrast=base-fuzz diff=+0.000 (0/1)" in lines
    assert "mdd=n/a (no task separates them)" in lines and "mdd=0.250 " in lines


# --------------------------------------------------------------------------- the command


def test_the_report_rebuilds_from_the_filed_rows_and_prints_from_its_json(tmp_path, capsys):
    from sparring.cli.main import main

    seeds = [_seed_file(2, 9, lambda i, f=f: (i + f) % 3 != 0) for f in range(3)]
    seeds = [s + _seed_file(3, 6, lambda i: i % 2 == 0, offset=100) for s in seeds]
    paths = []
    for f, rows in enumerate(seeds):
        path = tmp_path / f"w{f}" / "rows.jsonl"
        path.parent.mkdir()
        path.write_text(choose.rows_jsonl(rows))
        paths.append(str(path))
    out = tmp_path / "report" / "select-report.json"
    argv = ["precheck", "select-report", *(x for p in paths for x in ("--rows", p)),
            "--sources", "none,writer,fuzz", "--contrast", "writer-none",
            "--contrast", "fuzz+writer-fuzz", "--bootstrap", "300", "--bootstrap-seed", "4",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    filed = json.loads(out.read_text())
    rebuilt = rep.select_report(
        [choose.read_rows(p) for p in paths], ["none", "writer", "fuzz"],
        ["writer-none", "fuzz+writer-fuzz"], 300, 4, paths,
    )  # fmt: skip
    assert filed == json.loads(json.dumps(rebuilt))
    assert printed == "\n".join(rep.format_report(filed)) + "\n"
    assert list(filed["groups"]) == ["2", "3", "all"]
    assert filed["settings"]["files"] == paths and filed["settings"]["answers_shared"] is True
    c = filed["groups"]["all"]["contrasts"]["writer-none"]
    assert len(c["per_file"]) == 3 and c["t"]["df"] == 2
    assert f"contrast=writer-none diff={c['value']:+.3f} ({c['value_exact']})" in printed
    assert f"verdict={c['verdict']}" in printed and "contrast=fuzz+writer-fuzz" in printed


def test_select_report_refuses_bad_contrasts_and_outputs_in_one_line(tmp_path, capsys):
    from sparring.cli.main import main

    rows = tmp_path / "rows.jsonl"
    rows.write_text(choose.rows_jsonl(_seed_file(2, 3, lambda i: True)))
    for argv, says in [
        (["--contrast", "writer"], "--contrast: contrast 'writer': use A-B"),
        (["--contrast", "writer-nope"], "rules among none, base, fuzz, writer"),
        (["--out", str(tmp_path)], f"--out {tmp_path}: is a folder"),
    ]:
        assert main(["precheck", "select-report", "--rows", str(rows), *argv]) == 2
        out, err = capsys.readouterr()
        assert err.count("\n") == 1 and err.startswith("error: ") and says in err, err
        assert "Traceback" not in out + err

"""How large N must be for the oracle to reach a target, from a pre-check's per-answer rows
(sparring.experiments.sizing_oracle, `sparring precheck size-n`): the estimate on hand-made
rows, instances of one task averaged before tasks, the smallest-N search and its None case, the
uniform pick among given-test passers, the interval over tasks, and the command's lines and its
one-line errors. No model, no sandbox: milliseconds."""

from __future__ import annotations

import doctest
import json

import pytest

from sparring.experiments import sizing_oracle


def test_doctests():
    assert doctest.testmod(sizing_oracle).failed == 0


def _rows(level: int, task: str, instance: str, every: list[bool], given=None) -> list[dict]:
    given = every if given is None else given
    return [
        {"task": task, "id": instance, "family": "fam", "level": level, "sample": j,
         "given": g, "stated": None, "every": e}
        for j, (g, e) in enumerate(zip(given, every, strict=True))
    ]  # fmt: skip


def test_two_tasks_at_pass_rates_0_and_half():
    rows = _rows(2, "a", "a0", [False] * 4) + _rows(2, "b", "b0", [True, False, True, False])
    s = sizing_oracle.size_n(rows, max_n=4, n_boot=200)[2]
    assert s["oracle"]["value"][:2] == [pytest.approx(0.25), pytest.approx(0.375)]
    assert s["every_rate"] == pytest.approx(0.25)
    assert (s["tasks"], s["instances"], s["answers"]) == (2, 2, 8)
    assert s["n_needed"] == 1 and s["at_max"] == pytest.approx(0.5 * (1 - 0.5**4))


def test_instances_of_one_task_are_averaged_before_tasks():
    """Task a: two instances, every answer right; task b: one instance, none right. Over
    tasks the oracle is 0.5 at any N; were the instances independent tasks it would be 2/3."""
    rows = (
        _rows(3, "a", "a0", [True, True])
        + _rows(3, "a", "a1", [True, True])
        + _rows(3, "b", "b0", [False, False])
    )
    s = sizing_oracle.size_n(rows, max_n=8, n_boot=200)[3]
    assert s["oracle"]["value"] == [pytest.approx(0.5)] * 8
    assert (s["tasks"], s["instances"]) == (2, 3)
    assert s["every_rate"] == pytest.approx(0.5)
    # within a task the instances' rates are averaged: 1/2 and 0 give 1/4, not 1/3 pooled
    uneven = _rows(2, "a", "a0", [True, False]) + _rows(2, "a", "a1", [False] * 4)
    assert sizing_oracle.task_rates(uneven)[2]["a"]["every"] == pytest.approx(0.25)


def test_the_smallest_n_reaching_the_target_and_none_when_max_n_does_not():
    rows = _rows(2, "a", "a0", [True] + [False] * 9)  # p = 0.1: 1 - 0.9^N reaches 0.25 at N=3
    s = sizing_oracle.size_n(rows, target=0.25, max_n=64, n_boot=100)[2]
    assert s["n_needed"] == 3
    assert s["oracle"]["value"][1] < 0.25 <= s["oracle"]["value"][2]
    rows += _rows(2, "b", "b0", [False] * 10)  # halved: the mean never passes 0.5
    s = sizing_oracle.size_n(rows, target=0.5, max_n=64, n_boot=100)[2]
    assert s["n_needed"] is None
    assert s["at_max"] == pytest.approx(0.5 * (1 - 0.9**64)) and s["at_max"] < 0.5
    assert s["n_needed_lo"] is None
    exact = sizing_oracle.size_n(_rows(2, "a", "a0", [True, False]), target=0.75, max_n=4)
    assert exact[2]["n_needed"] == 2  # 1 - 0.5^2 = 0.75 exactly: reached, not missed


def test_the_pick_among_given_passers():
    """Given rate 1/2, every rate 1/4: half of the given passers are right, so a pick is right
    with chance (1 - 0.5^N) / 2; the oracle is 1 - 0.75^N."""
    rows = _rows(2, "a", "a0", [True, False, False, False], given=[True, True, False, False])
    s = sizing_oracle.size_n(rows, max_n=2, n_boot=50)[2]
    assert s["pick"]["value"] == [pytest.approx(0.25), pytest.approx(0.375)]
    assert s["oracle"]["value"] == [pytest.approx(0.25), pytest.approx(1 - 0.75**2)]
    assert s["given_rate"] == pytest.approx(0.5)


def test_room_is_a_right_and_a_wrong_given_passer_together():
    """Given rate 1/2, every rate 1/4: room@N = 1 - 2 x 0.75^N + 0.5^N (0 at N=1: one answer
    cannot be both). A task whose given passers are all right, or all wrong, has no room,
    whatever its oracle. Room bounds what choosing can add over the uniform pick."""
    rows = _rows(2, "a", "a0", [True, False, False, False], given=[True, True, False, False])
    s = sizing_oracle.size_n(rows, max_n=3, n_boot=50)[2]
    assert s["room"]["value"] == [pytest.approx(1 - 2 * 0.75**n + 0.5**n) for n in (1, 2, 3)]
    assert s["room"]["value"][0] == pytest.approx(0.0)
    all_right = _rows(2, "b", "b0", [True, False], given=[True, False])
    all_wrong = _rows(2, "c", "c0", [False, False], given=[True, False])
    for rows in (all_right, all_wrong):
        assert sizing_oracle.size_n(rows, max_n=8, n_boot=50)[2]["room"]["value"] == [0.0] * 8
    for given, every in [(0.3, 0.1), (0.9, 0.05), (0.2, 0.2), (0.6, 0.0)]:
        for n in (1, 4, 16, 64):
            gap = sizing_oracle.oracle_at(every, n) - sizing_oracle.pick_at(given, every, n)
            assert gap <= sizing_oracle.room_at(given, every, n) + 1e-12


def test_counted_pools_a_tasks_instances_and_does_not_extrapolate():
    """Task a: a right answer in one instance, a wrong given passer in the other (room, counted
    over the task's answers); task b: right answers only (oracle, no room); task c: none."""
    rows = (
        _rows(2, "a", "a0", [True, False], given=[True, False])
        + _rows(2, "a", "a1", [False, False], given=[True, False])
        + _rows(2, "b", "b0", [True, True, False])
        + _rows(2, "c", "c0", [False] * 3, given=[True, False, False])
    )
    assert sizing_oracle.counted(rows)[2] == {
        "tasks": 3, "answers_min": 3, "answers_max": 4, "oracle": 2, "room": 1,
        "pick": pytest.approx((1 / 2 + 1 + 0) / 3),  # a: 1 of 2 passers right; b: 2 of 2; c: 0
    }  # fmt: skip
    assert sizing_oracle.size_n(rows, max_n=4, n_boot=20)[2]["counted"]["room"] == 1
    line = sizing_oracle.format_lines(sizing_oracle.size_n(rows, max_n=4, n_boot=20))[1]
    assert line == (
        "SIZEN level=2 counted at the answers sampled (3..4 a task): oracle=0.667 (2 of 3 "
        "tasks) room=0.333 (1 of 3 tasks) pick=0.500"
    )


def test_the_interval_resamples_tasks_and_levels_stay_apart():
    rows = _rows(2, "a", "a0", [True] * 2) + _rows(2, "b", "b0", [False] * 2)
    rows += _rows(3, "c", "c0", [False] * 2)
    sized = sizing_oracle.size_n(rows, max_n=2, n_boot=400, seed=1)
    s = sized[2]
    assert s["oracle"]["lo"][0] == 0.0 and s["oracle"]["hi"][0] == 1.0  # {a,a} .. {b,b}
    assert sized[3]["oracle"]["value"] == [0.0, 0.0] and sized[3]["n_needed"] is None
    assert sizing_oracle.size_n(rows, max_n=2, n_boot=400, seed=1) == sized  # seeded


def test_rows_are_checked():
    good = _rows(2, "a", "a0", [True])
    assert sizing_oracle.check_rows(good) == good
    for bad, says in [
        ({**good[0], "every": 1}, "'every' is 1, not true/false"),
        ({**good[0], "level": "2"}, "'level' is '2', not an integer"),
        ({**good[0], "sample": True}, "'sample' is True, not an integer"),  # a bool is no int
        ({**good[0], "stated": "yes"}, "'stated' is 'yes', not true/false or null"),
        ({k: v for k, v in good[0].items() if k != "task"}, "no 'task'"),
        ([1, 2], "not a JSON object"),
    ]:
        with pytest.raises(ValueError, match="rows line 1: " + says.replace("(", r"\(")):
            sizing_oracle.check_rows([bad])


# --------------------------------------------------------------------------- the command


def _write(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_the_command_prints_per_level(tmp_path, capsys):
    from sparring.cli.main import main

    rows = _rows(2, "a", "a0", [False] * 4) + _rows(2, "b", "b0", [True, False, True, False])
    rows += _rows(3, "c", "c0", [False] * 8)
    path = _write(tmp_path / "answers.jsonl", rows)
    assert main(["precheck", "size-n", "--rows", path]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0].startswith(f"SIZEN plan: {path}: 16 answers; oracle target 0.250, N up to 64")
    assert lines[1].startswith(
        "SIZEN level=2 tasks=2 instances=2 answers=8 every_rate=0.2500 given_rate=0.2500 "
        "oracle@1=0.250 (0.000..0.500) oracle@8="
    )
    assert "oracle@64=0.500 (" in lines[1] and "pick@1=0.250 (" in lines[1]
    assert "room@1=0.000 (0.000..0.000)" in lines[1]  # every given passer is right: no room
    assert lines[2].startswith("SIZEN level=2 counted at the answers sampled (4..4 a task)")
    del lines[2], lines[4]  # the counted lines: their own test
    assert lines[2].startswith(
        "SIZEN level=2 N=1: the smallest N whose oracle estimate reaches 0.250 (0.250 ("
    )
    assert lines[3].startswith("SIZEN level=3 tasks=1 instances=1 answers=8 every_rate=0.0000")
    assert lines[4] == (
        "SIZEN level=3 N: 64 does not reach the oracle 0.250: the estimate at 64 is "
        "0.000 (0.000..0.000)"
    )
    assert main(["precheck", "size-n", "--rows", path, "--target", "0.4", "--max-n", "4"]) == 0
    out = capsys.readouterr().out
    assert "SIZEN level=2 N=3: the smallest N" in out and "oracle@4=" in out  # 0.5(1-0.5^3)
    assert "oracle@8" not in out


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "no such file (a pre-check's answers.jsonl)"),
        ("", "holds no answer rows"),
        ("{not json\n", "line 1: not JSON"),
        ('{"task": "a"}\n', "line 1: no 'id' (a pre-check answer row)"),
        ("\n" + json.dumps({**_rows(2, "a", "a0", [True])[0], "every": "y"}), "line 2: 'every'"),
    ],
)
def test_the_command_says_what_is_wrong_with_a_file_in_one_line(tmp_path, capsys, content, says):
    from sparring.cli.main import main

    path = tmp_path / "answers.jsonl"
    if content is not None:
        path.write_text(content)
    assert main(["precheck", "size-n", "--rows", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: --rows")
    assert says in err and "Traceback" not in err


def test_the_command_checks_its_numbers(tmp_path, capsys):
    from sparring.cli.main import main

    path = _write(tmp_path / "a.jsonl", _rows(2, "a", "a0", [True]))
    assert main(["precheck", "size-n", "--rows", path, "--max-n", "0"]) == 2
    assert main(["precheck", "size-n", "--rows", path, "--target", "1.5"]) == 2
    err = capsys.readouterr().err
    assert "error: --max-n 0: use N >= 1" in err and "error: --target 1.5" in err

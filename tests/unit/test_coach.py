"""The curriculum coach on synthetic reward streams: it moves a family up after `last_k` high
rewards and down after `last_k` low ones, never past the ends, stays between (and on) the
thresholds, clears the scoreboard after a move, ignores samples at another level, carries its
state between processes as plain data, and is deterministic; the reserve swaps the groups of a
moved family; the answerer phase's helpers draw at the coach's levels and read its state back."""

from __future__ import annotations

import dataclasses
import doctest
import json
import random

import pytest

from sparring.config import load_config
from sparring.errors import SparringError
from sparring.problems import Problem
from sparring.problems import coach as coach_mod
from sparring.problems.coach import Coach, Reserve, at_coach_level


def make(levels=(1, 2, 3), last_k=4, start_level=0, **kw) -> Coach:
    settings = {"success_threshold": 0.7, "failure_threshold": 0.3, **kw}
    return Coach({"f": levels}, last_k=last_k, start_level=start_level, **settings)


def feed(c: Coach, rewards, family="f") -> list[int]:
    """The family's level after each reward."""
    out = []
    for r in rewards:
        c.record(family, r)
        out.append(c.level(family))
    return out


def test_doctests():
    assert doctest.testmod(coach_mod).failed == 0


def test_moves_up_after_last_k_high_rewards_and_not_before():
    c = make()
    assert feed(c, [1.0, 0.9, 0.8]) == [1, 1, 1]  # fewer than last_k: no verdict yet
    assert c.record("f", 0.8) is True
    assert c.levels() == {"f": 2} and c.moves == 1


def test_moves_down_after_last_k_low_rewards():
    c = make(start_level=3)
    assert feed(c, [0.0, 0.1, 0.2, 0.0]) == [3, 3, 3, 2]


def test_never_past_the_highest_or_the_lowest_level():
    top = make(start_level=3)
    assert feed(top, [1.0] * 12) == [3] * 12
    assert top.moves == 0 and top.scoreboard("f") == [1.0] * 4  # a window of the last_k
    bottom = make(start_level=1)
    assert feed(bottom, [0.0] * 12) == [1] * 12
    assert bottom.moves == 0


def test_climbs_and_falls_one_level_per_full_scoreboard():
    c = make(last_k=2)
    assert feed(c, [1.0] * 8) == [1, 2, 2, 3, 3, 3, 3, 3]
    assert feed(c, [0.0] * 4) == [3, 2, 2, 1]


def test_stays_between_and_on_the_thresholds():
    c = make(start_level=2)
    assert feed(c, [0.5, 0.4, 0.6, 0.5] * 5) == [2] * 20
    # means exactly on a threshold (values exact in binary): neither above nor below
    exact = {"start_level": 2, "last_k": 2, "success_threshold": 0.75, "failure_threshold": 0.25}
    assert feed(make(**exact), [0.875, 0.625]) == [2, 2]
    assert feed(make(**exact), [0.125, 0.375]) == [2, 2]


def test_the_window_is_the_last_k_rewards():
    c = make(start_level=2)
    # the middling rewards count until the later ones have pushed every one of them out
    assert feed(c, [0.5, 0.5, 0.5, 0.5, 0.75, 0.75, 0.75]) == [2] * 7
    assert c.scoreboard("f") == [0.5, 0.75, 0.75, 0.75]  # mean 0.6875
    assert c.record("f", 0.75) is True and c.level("f") == 3


def test_a_move_clears_the_scoreboard():
    c = make(last_k=3)
    feed(c, [1.0, 1.0, 1.0])
    assert c.level("f") == 2 and c.scoreboard("f") == []
    # the rewards before the move count for nothing at the new level: three more are needed
    assert feed(c, [0.0, 0.0]) == [2, 2]
    assert c.record("f", 0.0) is True and c.level("f") == 1


def test_levels_move_through_the_available_ones_only():
    c = Coach({"f": [3, 0]}, last_k=1, success_threshold=0.7, failure_threshold=0.3)
    assert c.level("f") == 0
    assert feed(c, [1.0, 1.0, 0.0, 0.0]) == [3, 3, 0, 0]


def test_start_level_is_the_lowest_available_at_or_above_it():
    assert make(start_level=0).level("f") == 1
    assert make(start_level=2).level("f") == 2
    assert make(levels=(1, 3), start_level=2).level("f") == 3
    assert make(levels=(0, 1), start_level=3).level("f") == 1  # else the highest


def test_families_are_coached_apart():
    c = Coach({"a": [1, 2], "b": [1, 2]}, last_k=2, success_threshold=0.7, failure_threshold=0.3)
    moved = c.record_batch(["a", "b", "a", "", "b"], [1.0, 0.0, 1.0, 1.0, 1.0])
    assert moved == 1 and c.levels() == {"a": 2, "b": 1}  # "" (no family) is skipped
    assert c.scoreboard("b") == [0.0, 1.0]


def test_samples_at_another_level_and_missing_rewards_are_not_counted():
    c = make(last_k=2, start_level=2)
    assert c.record("f", 1.0, level=1) is False
    assert c.record("f", None) is False and c.record("f", float("nan")) is False
    assert c.scoreboard("f") == []
    assert c.record_batch(["f", "f", "f"], [1.0, 1.0, 1.0], [3, 2, 2]) == 1
    assert c.level("f") == 3


def test_unknown_family_and_bad_settings_are_refused():
    with pytest.raises(ValueError, match="family 'g': not coached; known: f"):
        make().record("g", 1.0)
    with pytest.raises(ValueError, match="last_k"):
        make(last_k=0)
    for lo, hi in ((0.7, 0.7), (0.8, 0.2), (-0.1, 0.5), (0.2, 1.5)):
        with pytest.raises(ValueError, match="need 0 <= failure < success <= 1"):
            make(failure_threshold=lo, success_threshold=hi)
    with pytest.raises(ValueError, match="no level available"):
        Coach({"f": []}, last_k=1, success_threshold=0.7, failure_threshold=0.3)


def test_deterministic_and_the_state_continues_in_another_process():
    rng = random.Random(7)
    stream = [(rng.choice("ab"), rng.random() ** rng.choice([0.3, 3.0])) for _ in range(400)]
    available = {"a": [0, 1, 2, 3], "b": [1, 2]}
    settings = {"last_k": 5, "success_threshold": 0.6, "failure_threshold": 0.4}

    def run(items, state=None):
        c = Coach(available, **settings, state=state)
        for family, reward in items:
            c.record(family, reward)
        return c

    whole = run(stream)
    assert whole.moves > 4  # the stream does move the levels
    assert run(stream).to_dict() == whole.to_dict()
    # stopped halfway, written as JSON and read back: the same as never stopping
    first = run(stream[:173])
    again = Coach.from_dict(json.loads(json.dumps(first.to_dict())))
    assert again.to_dict() == first.to_dict()
    for family, reward in stream[173:]:
        again.record(family, reward)
    assert again.to_dict() == whole.to_dict()
    # a fresh coach of the same settings continuing the state: the same again
    assert run(stream[173:], state=first.to_dict()).to_dict() == whole.to_dict()


def test_continuing_under_changed_settings_and_levels():
    old = make(levels=(1, 2, 3), last_k=4, start_level=2)
    feed(old, [0.5, 0.5, 0.6])
    state = old.to_dict()
    shorter = Coach({"f": [1, 2, 3], "new": [0]}, last_k=2, success_threshold=0.7,
                    failure_threshold=0.3, state=state)  # fmt: skip
    assert shorter.levels() == {"f": 2, "new": 0}
    assert shorter.scoreboard("f") == [0.5, 0.6]  # the last last_k kept
    moved = Coach({"f": [1, 3]}, last_k=4, success_threshold=0.7, failure_threshold=0.3,
                  state=state)  # fmt: skip
    assert moved.level("f") == 1 and moved.scoreboard("f") == []  # nearest, the lower on a tie
    with pytest.raises(ValueError, match="coach state: malformed"):
        Coach.from_dict({"available": {"f": [1]}})
    with pytest.raises(ValueError, match="coach state: malformed"):
        make(state={"levels": {"f": "high"}})


def rows(family, level, n, prefix=""):
    return [{"problem_id": f"{prefix}{family}{level}-{i}", "family": family, "level": level}
            for i in range(n)]  # fmt: skip


def test_reserve_swaps_the_groups_of_a_moved_family_in_turn():
    reserve = Reserve([*rows("a", 1, 2), *rows("a", 2, 1), *rows("b", 1, 1)])
    drawn = rows("a", 2, 1, "d") + rows("", 0, 1, "d") + rows("b", 1, 1, "d")
    batch = [dict(r) for r in drawn for _ in range(2)]  # groups of 2, as GRPO samples them
    out = reserve.swap(batch, 2, {"a": 1, "b": 1})
    assert [r["problem_id"] for r in out] == ["a1-0", "a1-0", "d0-0", "d0-0", "db1-0", "db1-0"]
    again = reserve.swap(batch, 2, {"a": 1, "b": 1})
    assert [r["problem_id"] for r in again][:2] == ["a1-1", "a1-1"]  # the next in turn
    assert reserve.swapped == 2
    # at the family's level already, or no reserve row at its level: left as sampled
    assert reserve.swap(batch, 2, {"a": 2, "b": 1}) == batch
    assert reserve.swap(batch, 2, {"a": 3}) == batch
    assert reserve.swap(batch[:3], 2, {"a": 1}) == batch[:3]  # not whole groups


def test_reserve_drops_rows_that_do_not_fit():
    reserve = Reserve(rows("a", 1, 3))
    batch = [dict(r) for r in rows("a", 2, 1) for _ in range(2)]
    out = reserve.swap(batch, 2, {"a": 1}, fits=lambda r: r["problem_id"] != "a1-0")
    assert out[0]["problem_id"] == "a1-1"
    assert reserve.swap(batch, 2, {"a": 1}, fits=lambda r: False) == batch


# --------------------------------------------------------------------------- the phase's side


def problem(family: str, level: int, i: int = 0) -> Problem:
    tags = [f"family:{family}", f"level:{level}"] if family else []
    return Problem(f"{family or 'plain'}-{level}-{i}", "d", "def f(x):", ["assert f(1) == 1"],
                   "def f(x):\n    return x", tags=tags)  # fmt: skip


def test_the_answerer_phase_draws_at_the_coach_levels_and_continues_its_state(tmp_path):
    from sparring.phases.answerer import coach_for
    from sparring.rewards.answerer_rows import answerer_rows

    problems = [problem("a", 1), problem("a", 2), problem("b", 0), problem("b", 3), problem("", 0)]
    off = load_config(None, [])
    assert coach_for(off, problems, None) is None
    cfg = load_config(None, ["coach.enabled=true", "coach.start_level=1", "coach.last_k=2"])
    coach = coach_for(cfg, problems, None)
    assert coach.available == {"a": (1, 2), "b": (0, 3)} and coach.levels() == {"a": 1, "b": 3}
    drawn = [p.id for p in problems if at_coach_level(p, coach)]
    assert drawn == ["a-1-0", "b-3-0", "plain-0-0"]
    row = answerer_rows(problems[3:], {}, ["code"])
    assert [(r["family"], r["level"]) for r in row] == [("b", 3), ("", 0)]
    # the state a trained model's record keeps is where the next phase starts
    coach.record_batch(["a", "a"], [1.0, 1.0])
    model = tmp_path / "model"
    model.mkdir()
    (model / "sparring_model.json").write_text(json.dumps({"coach": coach.to_dict()}))
    assert coach_for(cfg, problems, str(model)).levels() == {"a": 2, "b": 3}
    assert coach_for(cfg, problems, str(tmp_path / "none")).levels() == {"a": 1, "b": 3}
    (model / "sparring_model.json").write_text(json.dumps({"coach": {"levels": [1]}}))
    with pytest.raises(SparringError, match=r"sparring_model\.json: coach state: malformed"):
        coach_for(cfg, problems, str(model))


def test_the_reserve_holds_every_coached_problem_as_a_row_in_the_seeds_order():
    """The phase's rows and the coach's reserve, made together (rewards.answerer_rows
    .training_rows): the rows are the drawn problems' with what the screen saw flat; the reserve
    is the rows of every problem of a coached family, none marked flat, shuffled by the phase's
    seed (the problems shuffled, then made rows: the order the coach hands them out in), and a
    problem of another family, withheld tests and all, stays out of it. Break check: sampling
    every problem, not the coached ones, or the rows before the filter, fails it."""
    from sparring.phases.answerer import coach_for
    from sparring.rewards.answerer_rows import answerer_rows, training_rows

    everything = [problem("a", level, i) for level in (1, 2) for i in range(3)]
    everything += [problem("b", 1, i) for i in range(2)]
    everything.append(dataclasses.replace(problem("", 0), withheld_tests=["assert f(2) == 2"]))
    coach = coach_for(
        load_config(None, ["coach.enabled=true", "coach.start_level=1"]), everything, None
    )
    drawn, flat, bank = (
        everything[:2],
        {everything[0].id: 0.5},
        {everything[1].id: ["assert f(3) == 3"]},
    )
    rows, reserve = training_rows(drawn, flat, coach, everything, bank, ["code"], seed=7)
    assert rows == answerer_rows(drawn, bank, ["code"], flat) and rows[0]["screened_flat"]
    coached = [p for p in everything if p.tags]
    expected = Reserve(
        answerer_rows(random.Random(7).sample(coached, len(coached)), bank, ["code"])
    )
    assert vars(reserve) == vars(expected)
    held = [row for group in vars(reserve)["_rows"].values() for row in group]
    assert len(held) == 8 and not any(r["screened_flat"] or "withheld_tests" in r for r in held)
    assert training_rows(drawn, flat, None, everything, bank, ["code"], seed=7) == (rows, None)

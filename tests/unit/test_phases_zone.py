"""The zone draw (DAPO dynamic sampling over problems): problems whose rollouts differed come
first, then untried ones (easy first when asked), flat ones last; seeded and reproducible."""

from sparring.config import load_config
from sparring.phases.common import draw_problems
from sparring.phases.zone import draw_in_zone, in_zone
from sparring.problems import Problem
from sparring.rewards.frozen import zone_stats


def _problem(pid: str, difficulty: str) -> Problem:
    return Problem(pid, "d", f"def {pid}(x):", [f"assert {pid}(1) == 1"], "", difficulty)


PROBLEMS = [_problem(f"p{i}", ("easy", "medium", "hard")[i % 3]) for i in range(12)]


def _cfg(n: int = 3, easy_first: bool = False):
    return load_config(
        None, [f"steps.problems_per_phase={n}", f"steps.easy_first={str(easy_first).lower()}"]
    )


def test_zone_stats_and_membership():
    assert in_zone(zone_stats([0.0, 0.5, 0.0]))
    assert not in_zone(zone_stats([0.0, 0.0])) and not in_zone(zone_stats([1.0, 1.0]))
    assert not in_zone(None) and not in_zone({})


def test_zone_problems_come_first_and_flat_ones_last():
    zone = {
        "p4": zone_stats([0.0, 0.8]),
        "p7": zone_stats([0.2, 0.2, 0.6]),
        **{f"p{i}": zone_stats([0.0, 0.0]) for i in (0, 1, 2, 3, 5, 6, 8, 9, 10)},
    }
    drawn = [p.id for p in draw_in_zone(_cfg(3), PROBLEMS, zone, 1, "answerer")]
    assert set(drawn[:2]) == {"p4", "p7"} and drawn[2] == "p11"  # the only untried one
    assert drawn == [p.id for p in draw_in_zone(_cfg(3), PROBLEMS, zone, 1, "answerer")]


def test_without_an_estimate_it_is_the_seeded_random_draw():
    assert draw_in_zone(_cfg(4), PROBLEMS, {}, 2, "answerer") == draw_problems(
        _cfg(4), PROBLEMS, 2, "answerer"
    )


def test_easy_first_orders_the_untried_by_difficulty():
    drawn = draw_in_zone(_cfg(6, easy_first=True), PROBLEMS, {}, 1, "generator")
    assert [p.difficulty for p in drawn] == ["easy"] * 4 + ["medium"] * 2
    zone = {"p2": zone_stats([0.0, 1.0])}  # a hard problem in the zone still leads
    drawn = draw_in_zone(_cfg(2, easy_first=True), PROBLEMS, zone, 1, "answerer")
    assert drawn[0].id == "p2" and drawn[1].difficulty == "easy"


def test_screened_flat_rows_are_marked_for_the_trainer():
    """The answerer's rows say which problems the frozen screen saw flat (the trainer's skip
    starts from those); a problem in the zone or never screened is not marked."""
    from sparring.phases.zone import screened_flat
    from sparring.rewards.answerer_rows import answerer_rows

    ps = [_problem(i, "easy") for i in ("flat", "zone", "untried")]
    zone = {"flat": zone_stats([1.0, 1.0]), "zone": zone_stats([0.0, 1.0])}
    flat = screened_flat(ps, zone)
    assert flat == {"flat": 1.0}  # with the reward every sample earned
    rows = answerer_rows(ps, {}, ["code"], flat)
    assert [r["screened_flat"] for r in rows] == [True, False, False]
    assert [r["screened_mean"] for r in rows] == [1.0, 0.0, 0.0]
    assert not any(r["screened_flat"] for r in answerer_rows(ps, {}, ["code"]))


def test_the_trained_generator_writes_final_tests_only_where_the_screen_saw_answers_differ():
    """With a screen the generator's last sampling skips problems seen flat (the answerer
    samples them last, if at all); without one it asks every row."""
    from sparring.phases.zone import tested_problems

    problems = PROBLEMS[:4]
    zone = {"p0": zone_stats([0.0, 1.0]), "p1": zone_stats([1.0, 1.0]), "p3": zone_stats([0.5])}
    assert [p.id for p in tested_problems(problems, zone)] == ["p0"]
    assert tested_problems(problems, {}) == problems


def test_the_generator_phase_samples_outside_training_at_steps_frozen_rows():
    """steps.frozen_rows widens the screen and the final tests; 0 keeps the rollout's rows."""
    assert load_config(None, ["grpo.rollout_batch_size=64"]).sampling_rows() == 64
    wide = load_config(None, ["grpo.rollout_batch_size=64", "steps.frozen_rows=256"])
    assert wide.sampling_rows() == 256 and wide.grpo.rollout_batch_size == 64


def test_catchable_problems_are_those_with_an_answer_passing_every_given_test():
    """In the real sandbox: an answer passing both given tests makes its problem catchable; one
    passing one of two, a crash or no answer at all does not; the zone's statistics come from
    the same runs."""
    from sparring.rewards.frozen import frozen_zone
    from sparring.sandbox import Sandbox, SandboxLimits

    def problem(pid: str) -> Problem:
        return Problem(pid, "d", "def f(x):", ["assert f(1) == 2", "assert f(2) == 3"], "")

    problems = [problem(p) for p in ("both", "one", "crash", "none")]
    solutions = {
        "both": ["def f(x):\n    return 0", "def f(x):\n    return x + 1"],
        "one": ["def f(x):\n    return 2"],
        "crash": ["def f(x):\n    raise ValueError"],
    }
    with Sandbox(SandboxLimits(timeout_s=5.0)) as sb:
        catchable: set[str] = set()
        zone = frozen_zone(2, {p.id: p for p in problems}, solutions, sb, catchable=catchable)
    assert catchable == {"both"}
    assert zone["both"]["n"] == 2.0 and zone["one"]["n"] == 2.0  # an unparseable sample earns 0

"""sparring.evaluation.headline: the parent run's headline metrics from a report, a decision and the
child runs; absent measurements stay absent."""

from __future__ import annotations

from sparring.evaluation import headline


def _as_dict(points):
    return {(k, step): v for k, v, step in points}


def _snapshot(disc, strict, he, bank, sampled=None, **extra):
    snap = {
        "val_discriminating_fraction": disc,
        "val_strict_pass_at_1": strict,
        "humaneval_pass@1": he,
        "bank_pass_rate": bank,
        **extra,
    }
    if sampled is not None:
        snap["val_sampled"] = sampled
        for measure, per in sampled.items():
            snap[f"val_sampled_{measure}"] = sum(per.values()) / len(per)
    return snap


def test_report_headline_names_base_and_champion():
    report = {
        "baseline": _snapshot(0.1, 0.0, 0.25, None),
        "snapshots": [_snapshot(0.2, 0.1, 0.25, 0.5, round=1), _snapshot(0.4, 0.2, 0.5, 0.6)],
    }
    got = _as_dict(headline.from_report(report, {"promoted": 1.0, "index": 0, "score": 0.7}))
    assert got[("heldout.discriminating.base", 0)] == 0.1
    assert got[("heldout.discriminating.champion", 0)] == 0.2  # the chosen one, not the last
    assert got[("heldout.strict.champion", 0)] == 0.1
    assert got[("humaneval.pass_at_1.champion", 0)] == 0.25
    assert got[("champion.score", 0)] == 0.7 and got[("champion.round", 0)] == 1
    # the base has no bank pass rate: absent, not 0; no sampling: no interval
    assert ("bank.pass_rate.base", 0) not in got
    assert not any(k.endswith(("gain", "gain_lo", "gain_hi")) for k, _ in got)


def test_sampled_runs_get_gains_with_intervals_and_unpromoted_runs_no_champion():
    ids = "abcde"  # five problems: an interval needs at least MIN_PER_SIDE per side
    per_base = {m: dict.fromkeys(ids, 0.0) for m in ("discriminating", "strict")}
    per_final = {
        "discriminating": dict(zip(ids, [1.0, 0.5, 1.0, 0.5, 0.5], strict=True)),
        "strict": dict(zip(ids, [1.0, 0.0, 0.0, 0.0, 1.0], strict=True)),
    }
    report = {
        "baseline": _snapshot(0.0, 0.0, 0.0, None, sampled=per_base),
        "snapshots": [_snapshot(0.9, 0.9, 0.0, 0.3, sampled=per_final, round=1)],
    }
    got = _as_dict(headline.from_report(report, {"promoted": 1.0, "index": 0, "score": 0.5}))
    assert got[("heldout.discriminating.champion", 0)] == 0.9  # one answer per problem
    # By hand, over the sampled answers: discriminating gains 1, .5, 1, .5, .5 (mean 0.7). A
    # bootstrap mean of five draws is 0.5 when all five are .5 (p = 0.6^5 = 7.8%, above the
    # 2.5% tail) and 0.9 or more with four 1s or more (8.7%; all five only 1%): the interval is
    # 0.5..0.9. Strict gains 1, 0, 0, 0, 1 (mean 0.4): 0.0..0.8 the same way.
    intervals = {
        m: tuple(got[(f"heldout.{m}.{f}", 0)] for f in ("gain_lo", "gain", "gain_hi"))
        for m in ("discriminating", "strict")
    }
    assert intervals == {"discriminating": (0.5, 0.7, 0.9), "strict": (0.0, 0.4, 0.8)}, (
        f"held-out gains (lo, gain, hi): {intervals}"
    )
    assert got[("heldout.discriminating.gain_n", 0)] == 5
    refused = _as_dict(headline.from_report(report, {"promoted": 0.0, "score": 0.0}))
    assert refused[("champion.promoted", 0)] == 0.0
    assert ("heldout.discriminating.base", 0) in refused
    assert not any(".champion" in k or k.startswith("champion.s") for k, _ in refused)
    # a champion that was not sampled (not the last round): no gain rather than a mixed one
    report["snapshots"].insert(0, _snapshot(0.5, 0.5, 0.0, 0.3, round=1))
    earlier = _as_dict(headline.from_report(report, {"promoted": 1.0, "index": 0, "score": 0.5}))
    assert ("heldout.discriminating.champion", 0) in earlier
    assert not any(k.endswith("gain") for k, _ in earlier)


def test_phase_runs_give_per_round_series_and_wall_time_per_kind():
    runs = [
        ("r0-materialize", {"bank_size": 0.0}, 100.0, 103.0),
        ("r1-train-generator", {"useful_group_share": 0.5, "completions_trained": 8.0}, 103, 110),
        ("r1-validate-tests", {"break_rate": 0.2, "validity": 0.5, "bank_size": 3.0}, 110, 111),
        ("r1-train-answerer", {"useful_group_share": 0.0}, 111.0, 120.0),
        ("r2-validate-tests", {"break_rate": 0.1, "validity": 0.4, "bank_size": 1.0}, 121, 122),
        ("r2-validate-tests", {"break_rate": 0.3, "validity": 0.6, "bank_size": 5.0}, 122, 123),
        ("r3-select", {}, 125.0, 0.0),  # still running: counted up to now
        ("not-a-phase", {"break_rate": 9.0}, 0.0, 1.0),
    ]
    got = _as_dict(headline.from_phase_runs(runs, now=130.0, start=99.0))
    assert got[("generator.break_rate", 1)] == 0.2
    assert got[("generator.break_rate", 2)] == 0.3  # a retried phase: its last attempt
    assert got[("generator.validity", 2)] == 0.6
    assert got[("bank.size", 0)] == 5.0
    assert got[("train.useful_group_share", 0)] == 0.25
    assert got[("train.completions", 0)] == 8.0
    assert got[("wall_seconds.validate-tests", 0)] == 3.0  # every attempt's time
    assert got[("wall_seconds.select", 0)] == 5.0
    assert got[("wall_seconds.pipeline", 0)] == 31.0
    assert not any(k.startswith("wall_seconds.not") for k, _ in got)


def test_game_headline_uses_the_same_champion_names():
    report = {
        "base": {"reward/solver": 0.1, "episodes": 4},
        "trained": {"reward/solver": 0.3},
        "gain": {"solver": 0.2},
    }
    got = _as_dict(headline.from_game_report(report, {"promoted": 1.0, "score": 0.2}))
    assert got == {
        ("game.reward.solver.base", 0): 0.1,
        ("game.reward.solver.trained", 0): 0.3,
        ("game.gain.solver", 0): 0.2,
        ("champion.promoted", 0): 1.0,
        ("champion.score", 0): 0.2,
    }
    assert ("champion.promoted", 0) not in _as_dict(headline.from_game_report(report, {}))

"""sparring.evaluation.learning, function by function, against values computed by hand."""

from __future__ import annotations

import json

import pytest

from sparring.evaluation import learning


def snap(label=None, **measures):
    out = {"val_sampled": measures}
    if label:
        out["label"] = label
    return out


def test_paired_delta_known_gain_and_known_zero():
    d = learning.paired_delta([0.0, 0.5, 1.0], [0.5, 0.5, 1.0])
    assert d["n"] == 3
    assert d["before"] == pytest.approx(0.5) and d["after"] == pytest.approx(2 / 3)
    assert d["delta"] == pytest.approx(1 / 6)
    # the resampled means of deltas (0.5, 0, 0) lie in [0, 0.5]; both ends are reachable
    assert d["lo"] == pytest.approx(0.0) and 1 / 6 < d["hi"] <= 0.5
    same = learning.paired_delta([0.2, 0.4], [0.2, 0.4])
    assert (same["delta"], same["lo"], same["hi"]) == (0.0, 0.0, 0.0)


def test_paired_delta_refuses_mismatched_lengths():
    with pytest.raises(ValueError, match="2 items before, 1 after"):
        learning.paired_delta([0.1, 0.2], [0.3])


def test_stage_gain_pairs_shared_problems_and_is_none_when_unsampled():
    before = snap(discriminating={"a": 0.0, "b": 0.5, "only_before": 1.0})
    after = snap(discriminating={"a": 1.0, "b": 0.5, "only_after": 0.0})
    d = learning.stage_gain(before, after, "discriminating")
    assert d["n"] == 2 and d["delta"] == pytest.approx(0.5)  # (1.0 + 0.0) / 2 over a, b
    assert learning.stage_gain(before, {}, "discriminating") is None
    assert learning.stage_gain(before, after, "strict") is None


def test_summary_without_warm_start_has_one_stage():
    report = {
        "baseline": {**snap(discriminating={"a": 0.25}), "humaneval_pass@1": 0.1},
        "snapshots": [{**snap(discriminating={"a": 0.75}), "humaneval_pass@1": 0.2}],
    }
    summary = learning.learning_summary(report)
    assert set(summary["gains"]) == {"base_to_final"}
    assert summary["gains"]["base_to_final"]["discriminating"]["delta"] == pytest.approx(0.5)
    assert summary["gains"]["base_to_final"]["strict"] is None
    assert summary["humaneval_pass_at_1"] == {"base": 0.1, "final": 0.2}


def test_flat_metrics_round_trip():
    summary = {
        "gains": {"base_to_final": {"strict": {"delta": 0.25, "lo": 0.1}, "raw": None}},
        "bank_pass_rate": {"before": 0.5, "after": None},
    }
    flat = learning.flat_metrics(summary)
    assert flat == {
        "learn.base_to_final.strict.delta": 0.25,
        "learn.base_to_final.strict.lo": 0.1,
        "learn.bank_pass_rate.before": 0.5,
    }
    back = learning.summary_from_metrics(flat)
    assert back["gains"]["base_to_final"]["strict"] == {"delta": 0.25, "lo": 0.1}
    assert back["bank_pass_rate"] == {"before": 0.5}


def test_from_phase_runs_reads_breaks_useful_share_and_completions():
    runs = [
        ("r2-validate-tests", {"break_rate": 0.3}),
        ("r1-validate-tests", {"break_rate": 0.6}),
        ("r1-train-answerer", {"useful_group_share": 0.5, "completions_trained": 96.0}),
        ("r1-train-generator", {"useful_group_share": 1.0, "completions_trained": 8.0}),
        ("r2-train-answerer", {"useful_group_share": 0.75, "completions_trained": 64.0}),
        ("r3-evaluate", {"learn.base_to_final.strict.delta": 0.1, "other": 1.0}),
        ("materialize", {"problems": 3.0}),
    ]
    summary, breaks, share, trained = learning.from_phase_runs(runs)
    assert breaks == [0.6, 0.3]  # by round, not by listing order
    assert share == pytest.approx((0.5 + 1.0 + 0.75) / 3)
    assert trained == 160.0  # answerer phases only
    assert summary["gains"]["base_to_final"]["strict"]["delta"] == 0.1
    assert learning.from_phase_runs([])[3] is None


def test_train_reward_change_first_and_last_quarter():
    rewards = [0.0, 0.2, 0.9, 0.1, 0.5, 0.5, 0.4, 0.6]  # quarters of 2 steps
    d = learning.train_reward_change(rewards)
    assert d["first"] == pytest.approx(0.1) and d["last"] == pytest.approx(0.5)
    assert d["delta"] == pytest.approx(0.4) and d["steps"] == 8
    # resampled: last in [0.4, 0.6], first in [0.0, 0.2], so the delta lies in [0.2, 0.6]
    assert 0.2 - 1e-9 <= d["lo"] <= d["delta"] <= d["hi"] <= 0.6 + 1e-9
    flat = learning.train_reward_change([0.3] * 12)
    assert (flat["delta"], flat["lo"], flat["hi"]) == (0.0, 0.0, 0.0)
    assert learning.train_reward_change([0.1, 0.2, 0.3]) is None


def _gain(before, after, lo, hi, n):
    return {"before": before, "after": after, "delta": after - before, "lo": lo, "hi": hi, "n": n}


def test_learn_lines_in_the_issue_order_with_n_on_every_interval():
    summary = {
        "gains": {
            "base_to_final": {
                "discriminating": _gain(0.1, 0.2, 0.05, 0.15, 40),
                "pass_at_n": _gain(0.25, 0.5, 0.0, 0.5, 40),
                "defines": _gain(0.6, 0.9, 0.2, 0.4, 40),
            },
            "heldout_seen": {"discriminating": _gain(0.3, 0.45, 0.02, 0.3, 24)},
            "heldout_unseen": {"discriminating": _gain(0.2, 0.2, -0.1, 0.1, 4)},
        },
        "base_zone_share": 0.625,
    }
    change = {"first": 0.12, "last": 0.21, "lo": 0.04, "hi": 0.14, "per_side": 16.0}
    lines = learning.learn_lines(summary, [0.5], 0.9, 2048.0, change)
    assert lines[:7] == [
        "LEARN completions_trained 2048",
        "LEARN train_reward first=0.120 last=0.210 ci95_delta=0.040,0.140 n=16",
        "LEARN base_zone_share 0.625",
        "LEARN heldout_seen base=0.300 final=0.450 ci95_delta=0.020,0.300 n=24",
        # four problems: the interval is not printed as a number
        "LEARN heldout_unseen base=0.200 final=0.200 ci95_delta=n/a (n=4)",
        "LEARN heldout_bundled base=n/a final=n/a ci95_delta=n/a (n=0)",
        "LEARN definition_rate base=0.600 final=0.900",
    ]
    assert "LEARN validation_pass_rate base=0.100 final=0.200 ci95_delta=0.050,0.150 n=40" in lines
    assert "LEARN strict_pass_rate base=n/a final=n/a ci95_delta=n/a (n=0)" in lines
    assert "LEARN generator_break_rate first=0.500 last=0.500" in lines


def test_an_interval_on_fewer_than_five_values_per_side_is_never_a_number():
    """make run trains one step per quarter: a zero-width interval must not read as certainty."""
    change = learning.train_reward_change([0.0, 0.2, 0.4, 0.6])  # one step per quarter
    assert change["per_side"] == 1
    line = learning.learn_lines({}, [], None, 12.0, change)[1]
    assert line == "LEARN train_reward first=0.000 last=0.600 ci95_delta=n/a (n=1)"
    many = learning.train_reward_change([0.1] * 10 + [0.3] * 10)  # five steps per quarter
    assert learning.learn_lines({}, [], None, 0.0, many)[1].endswith(" n=5")
    assert learning.interval_text({"lo": 0.1, "hi": 0.2, "n": 4}) == "ci95_delta=n/a (n=4)"


def test_heldout_sets_get_their_own_gains_and_per_problem_pairs():
    base = snap(discriminating={"s1": 0.0, "s2": 0.5, "u1": 0.25, "b1": 1.0})
    final = snap(discriminating={"s1": 1.0, "s2": 0.5, "u1": 0.25, "b1": 0.0})
    report = {"baseline": base, "snapshots": [final]}
    sets = {"seen": ["s1", "s2"], "unseen": ["u1"], "bundled": ["b1"]}
    summary = learning.learning_summary(report, sets=sets)
    seen = summary["gains"]["heldout_seen"]["discriminating"]
    assert (seen["n"], seen["before"], seen["after"]) == (2, 0.25, 0.75)
    assert summary["gains"]["heldout_bundled"]["discriminating"]["delta"] == -1.0
    assert summary["gains"]["base_to_final"]["discriminating"]["n"] == 4  # all held-out
    pairs = learning.heldout_per_problem(report, sets)
    assert pairs["seen"] == {"s1": [0.0, 1.0], "s2": [0.5, 0.5]}
    flat = learning.flat_metrics(summary)
    assert learning.summary_from_metrics(flat)["gains"]["heldout_seen"]["discriminating"] == seen


def test_reward_vs_control_pairs_gains_over_shared_problems():
    ids = [f"p{i}" for i in range(8)]
    treatment = {i: [0.2, 0.6] for i in ids} | {"only_t": [0.0, 1.0]}
    control = {i: [0.2, 0.3] for i in ids}
    line = learning.reward_vs_control(treatment, control)
    assert line == "LEARN reward_vs_control delta=0.300 ci95_delta=0.300,0.300 n=8"
    worse = learning.reward_vs_control(control, treatment)
    assert worse.startswith("LEARN reward_vs_control delta=-0.300")
    assert learning.reward_vs_control({}, control).endswith("ci95_delta=n/a (n=0)")


def test_base_zone_share_is_the_first_validations_zone():
    runs = [
        ("r2-validate-tests", {"break_rate": 0.3, "zone_problems": 1.0, "zone_estimated": 8.0}),
        ("r1-validate-tests", {"break_rate": 0.6, "zone_problems": 6.0, "zone_estimated": 8.0}),
    ]
    summary, *_ = learning.from_phase_runs(runs)
    assert summary["base_zone_share"] == 0.75
    assert learning.from_phase_runs([])[0]["base_zone_share"] is None


def test_heldout_pair_refuses_what_is_no_fair_pair():
    t = {"reward": "honest", "sets": {"seen": {"a": [0.1, 0.5], "b": [0.2, 0.2]}}}
    c = {"reward": "format_only", "sets": {"seen": {"a": [0.1, 0.2], "z": [0.0, 0.0]}}}
    assert learning.heldout_pair(t, c) == ({"a": [0.1, 0.5], "b": [0.2, 0.2]},
                                          {"a": [0.1, 0.2], "z": [0.0, 0.0]})  # fmt: skip
    with pytest.raises(ValueError, match="answerer reward 'honest'"):
        learning.heldout_pair(t, t)
    with pytest.raises(ValueError, match="no held-out set 'unseen'"):
        learning.heldout_pair(t, c, "unseen")
    with pytest.raises(ValueError, match="control: no 'sets'"):
        learning.heldout_pair(t, {"reward": "format_only"})
    with pytest.raises(ValueError, match="not \\[base, final\\]"):
        learning.heldout_pair(t, {"sets": {"seen": {"a": [0.1]}}})
    apart = {"reward": "format_only", "sets": {"seen": {"q": [0.1, 0.2]}}}
    with pytest.raises(ValueError, match="no problem of the 'seen' set is in both"):
        learning.heldout_pair(t, apart)


def test_eval_control_prints_the_paired_line_and_refuses_bad_files(tmp_path, capsys):
    from sparring.cli.main import main

    ids = [f"p{i}" for i in range(6)]
    treat, ctrl = tmp_path / "treatment.json", tmp_path / "control.json"
    treat.write_text(
        json.dumps({"reward": "honest", "sets": {"seen": {i: [0.2, 0.6] for i in ids}}})
    )
    ctrl.write_text(
        json.dumps({"reward": "format_only", "sets": {"seen": {i: [0.2, 0.3] for i in ids}}})
    )
    assert main(["eval", "control", str(treat), str(ctrl)]) == 0
    out = capsys.readouterr().out.strip()
    assert out == "LEARN reward_vs_control delta=0.300 ci95_delta=0.300,0.300 n=6"
    assert main(["eval", "control", str(treat), str(treat)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: both runs trained") and err.count("\n") == 1
    (tmp_path / "bad.json").write_text("{")
    assert main(["eval", "control", str(treat), str(tmp_path / "bad.json")]) == 2
    assert "bad.json: not JSON" in capsys.readouterr().err
    assert main(["eval", "control", str(treat), str(tmp_path / "missing.json")]) == 2
    assert "missing.json: No such file" in capsys.readouterr().err

"""sparring.evaluation.learning, function by function, against values computed by hand."""

from __future__ import annotations

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


def test_learn_lines_report_completions_and_train_reward():
    summary = {
        "gains": {
            "base_to_final": {
                "discriminating": {
                    "before": 0.1,
                    "after": 0.2,
                    "delta": 0.1,
                    "lo": 0.05,
                    "hi": 0.15,
                },
                "pass_at_n": {"before": 0.25, "after": 0.5, "delta": 0.25, "lo": 0.0, "hi": 0.5},
            }
        }
    }
    change = {"first": 0.12, "last": 0.21, "lo": 0.04, "hi": 0.14}
    lines = learning.learn_lines(summary, [0.5], 0.9, 2048.0, change)
    assert lines[0] == "LEARN validation_pass_rate base=0.100 final=0.200 ci95_delta=0.050,0.150"
    assert lines[1] == "LEARN strict_pass_rate base=n/a final=n/a ci95_delta=n/a"
    assert lines[2] == "LEARN pass_at_n base=0.250 final=0.500 ci95_delta=0.000,0.500"
    assert "LEARN generator_break_rate first=0.500 last=0.500" in lines
    assert lines[-2] == "LEARN completions_trained 2048"
    assert lines[-1] == "LEARN train_reward first=0.120 last=0.210 ci95_delta=0.040,0.140"

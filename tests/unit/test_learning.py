"""sparring.evaluation.learning, function by function, against values computed by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring.evaluation import arms, intervals, learning
from sparring.evaluation.heldout import heldout_record

# a run that started from its configured base model (sparring.backends.lineage.start_record's
# fields)
FRESH = {"configured": "smollm2-135m", "model": "smollm2-135m", "base": "smollm2-135m",
         "weights": "w0", "base_weights": "w0", "champion": None}  # fmt: skip


def snap(label=None, **measures):
    out = {"val_sampled": measures}
    if label:
        out["label"] = label
    return out


def test_paired_delta_known_gain_and_known_zero():
    d = intervals.paired_delta([0.0, 0.5, 1.0], [0.5, 0.5, 1.0])
    assert d["n"] == 3
    assert d["before"] == pytest.approx(0.5) and d["after"] == pytest.approx(2 / 3)
    assert d["delta"] == pytest.approx(1 / 6)
    # the resampled means of deltas (0.5, 0, 0) lie in [0, 0.5]; both ends are reachable
    assert d["lo"] == pytest.approx(0.0) and 1 / 6 < d["hi"] <= 0.5
    same = intervals.paired_delta([0.2, 0.4], [0.2, 0.4])
    assert (same["delta"], same["lo"], same["hi"]) == (0.0, 0.0, 0.0)


def test_paired_delta_refuses_mismatched_lengths():
    with pytest.raises(ValueError, match="2 items before, 1 after"):
        intervals.paired_delta([0.1, 0.2], [0.3])


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
        (
            "r1-train-answerer",
            {
                "useful_group_share": 0.5,
                "completions_trained": 96.0,
                "completions_sampled": 128.0,
                "false_positive_rate": 0.2,
            },
        ),
        (
            "r1-train-generator",
            {"useful_group_share": 1.0, "completions_trained": 8.0, "completions_sampled": 16.0},
        ),
        (
            "r2-train-answerer",
            {
                "useful_group_share": 0.75,
                "completions_trained": 64.0,
                "completions_sampled": 96.0,
                "false_positive_rate": 0.1,
            },
        ),
        ("r3-evaluate", {"learn.base_to_final.strict.delta": 0.1, "other": 1.0}),
        ("materialize", {"problems": 3.0}),
    ]
    summary, breaks, share, trained = learning.from_phase_runs(runs)
    assert breaks == [0.6, 0.3]  # by round, not by listing order
    assert share == pytest.approx((0.5 + 0.75) / 2)  # the answerer's phases, not the generator's
    assert trained == 160.0  # answerer phases only
    assert summary["completions_sampled"] == 224.0
    assert summary["false_positive_rate"] == pytest.approx(0.15)
    assert summary["gains"]["base_to_final"]["strict"]["delta"] == 0.1
    assert learning.from_phase_runs([])[3] is None


def test_train_reward_change_first_and_last_quarter():
    rewards = [0.0, 0.2, 0.9, 0.1, 0.5, 0.5, 0.4, 0.6]  # quarters of 2 steps
    d = intervals.train_reward_change(rewards)
    assert d["first"] == pytest.approx(0.1) and d["last"] == pytest.approx(0.5)
    assert d["delta"] == pytest.approx(0.4) and d["steps"] == 8
    # resampled: last in [0.4, 0.6], first in [0.0, 0.2], so the delta lies in [0.2, 0.6]
    assert 0.2 - 1e-9 <= d["lo"] <= d["delta"] <= d["hi"] <= 0.6 + 1e-9
    flat = intervals.train_reward_change([0.3] * 12)
    assert (flat["delta"], flat["lo"], flat["hi"]) == (0.0, 0.0, 0.0)
    assert intervals.train_reward_change([0.1, 0.2, 0.3]) is None


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
            "heldout_new_tasks": {
                "discriminating": _gain(0.3, 0.45, 0.02, 0.3, 24),
                "defining": _gain(0.5, 0.55, -0.05, 0.15, 22),
                "strict": _gain(0.0, 0.25, 0.1, 0.4, 24),
            },
            "heldout_new_families": {"discriminating": _gain(0.2, 0.2, -0.1, 0.1, 4)},
        },
        "base_zone_share": 0.625,
        "task_overlap": 0.0,
        "completions_sampled": 2100.0,
        "false_positive_rate": 0.125,
    }
    change = {"first": 0.12, "last": 0.21, "lo": 0.04, "hi": 0.14, "per_side": 16.0}
    lines = learning.learn_lines(summary, [0.5], 0.9, 2048.0, change)
    assert lines[:12] == [
        "LEARN completions_trained 2048 sampled=2100",
        "LEARN train_reward first=0.120 last=0.210 ci95_delta=0.040,0.140 n=16",
        "LEARN base_zone_share 0.625",
        "LEARN heldout_new_tasks base=0.300 final=0.450 ci95_delta=0.020,0.300 n=24",
        "LEARN heldout_new_ops base=n/a final=n/a ci95_delta=n/a (n=0)",
        # four tasks: the interval is not printed as a number
        "LEARN heldout_new_families base=0.200 final=0.200 ci95_delta=n/a (n=4)",
        "LEARN heldout_trained_tasks base=n/a final=n/a ci95_delta=n/a (n=0)",
        "LEARN heldout_bundled base=n/a final=n/a ci95_delta=n/a (n=0)",
        "LEARN task_overlap 0",
        "LEARN definition_rate base=0.600 final=0.900",
        # the new tasks over the answers that define the asked-for function only
        "LEARN heldout_new_tasks_defining base=0.500 final=0.550 ci95_delta=-0.050,0.150 n=22",
        # the new tasks' answers that pass every test
        "LEARN heldout_new_tasks_strict base=0.000 final=0.250 ci95_delta=0.100,0.400 n=24",
    ]
    assert "LEARN validation_pass_rate base=0.100 final=0.200 ci95_delta=0.050,0.150 n=40" in lines
    assert lines[-1] == "LEARN false_positive_rate 0.125"
    assert "LEARN strict_pass_rate base=n/a final=n/a ci95_delta=n/a (n=0)" in lines
    assert "LEARN generator_break_rate first=0.500 last=0.500" in lines


def test_an_interval_on_fewer_than_five_values_per_side_is_never_a_number():
    """make run trains one step per quarter: a zero-width interval must not read as certainty."""
    change = intervals.train_reward_change([0.0, 0.2, 0.4, 0.6])  # one step per quarter
    assert change["per_side"] == 1
    line = learning.learn_lines({}, [], None, 12.0, change)[1]
    assert line == "LEARN train_reward first=0.000 last=0.600 ci95_delta=n/a (n=1)"
    many = intervals.train_reward_change([0.1] * 10 + [0.3] * 10)  # five steps per quarter
    assert learning.learn_lines({}, [], None, 0.0, many)[1].endswith(" n=5")
    assert intervals.interval_text({"lo": 0.1, "hi": 0.2, "n": 4}) == "ci95_delta=n/a (n=4)"


def test_heldout_sets_get_their_own_gains_and_per_problem_pairs():
    base = snap(discriminating={"s1": 0.0, "s2": 0.5, "u1": 0.25, "b1": 1.0})
    final = snap(discriminating={"s1": 1.0, "s2": 0.5, "u1": 0.25, "b1": 0.0})
    report = {"baseline": base, "snapshots": [final]}
    sets = {"new_tasks": ["s1", "s2"], "new_families": ["u1"], "bundled": ["b1"]}
    summary = learning.learning_summary(report, sets=sets)
    new = summary["gains"]["heldout_new_tasks"]["discriminating"]
    assert (new["n"], new["before"], new["after"]) == (2, 0.25, 0.75)
    assert summary["gains"]["heldout_bundled"]["discriminating"]["delta"] == -1.0
    assert summary["gains"]["base_to_final"]["discriminating"]["n"] == 4  # all held-out
    pairs = learning.heldout_per_problem(report, sets)
    assert pairs["new_tasks"] == {"s1": [0.0, 1.0], "s2": [0.5, 0.5]}
    flat = learning.flat_metrics(summary)
    back = learning.summary_from_metrics(flat)["gains"]["heldout_new_tasks"]["discriminating"]
    assert back == new


def test_a_heldout_sets_interval_counts_tasks_not_instances():
    """Ten renamed instances of one task are one task: n counts 5 tasks, not 14 problems, and
    the task's instances are averaged (gain 0.5 for it), not weighed ten times."""
    ten = {f"t{i}": [0.0, 1.0 if i < 5 else 0.0] for i in range(10)}  # one task, mean gain 0.5
    others = {f"o{i}": [0.5, 0.5] for i in range(4)}  # four tasks of their own, no gain
    both = {**ten, **others}
    base = snap(discriminating={k: v[0] for k, v in both.items()})
    final = snap(discriminating={k: v[1] for k, v in both.items()})
    tasks = intervals.task_keys({**{k: ["task:abc"] for k in ten}, **{k: [] for k in others}})
    report = {"baseline": base, "snapshots": [final]}
    summary = learning.learning_summary(report, sets={"new_tasks": list(both)}, tasks=tasks)
    d = summary["gains"]["heldout_new_tasks"]["discriminating"]
    assert d["n"] == 5
    assert d["delta"] == pytest.approx(0.5 / 5)  # per problem it would be 5 / 14
    line = learning.learn_lines(summary, [], None)[3]
    assert line.startswith("LEARN heldout_new_tasks base=0.400 final=0.500 ci95_delta=")
    assert line.endswith(" n=5")
    ungrouped = learning.learning_summary(report, sets={"new_tasks": list(both)})
    assert ungrouped["gains"]["heldout_new_tasks"]["discriminating"]["n"] == 14


def test_task_keys_fall_back_to_the_problems_own_id():
    tags = {"a": ["heldout:new_tasks", "task:k1"], "b": ["task:k1"], "HumanEval/0": ["humaneval"]}
    assert intervals.task_keys(tags) == {"a": "k1", "b": "k1", "HumanEval/0": "HumanEval/0"}


def test_task_gain_with_one_run_and_lone_instances_is_paired_delta():
    before, after = [0.1 * (i % 5) for i in range(12)], [0.1 * (i % 7) for i in range(12)]
    run = {f"p{i:02d}": [b, a] for i, (b, a) in enumerate(zip(before, after, strict=True))}
    d = intervals.task_gain([run])
    expected = intervals.paired_delta(before, after)
    assert {k: d[k] for k in ("n", "delta", "lo", "hi")} == {
        k: expected[k] for k in ("n", "delta", "lo", "hi")
    }
    assert d["seeds"] == 1


def test_task_gain_resamples_seeds_as_well_as_tasks():
    """Two runs, each with the same gain on every task (0.2 and 0.6): resampling tasks alone
    would give a zero-width interval at 0.4; resampling runs gives 0.2 (both draws run 1) to
    0.6 (both run 2), each a quarter of the draws."""
    runs = [{f"p{i}": [0.2, 0.2 + g] for i in range(8)} for g in (0.2, 0.6)]
    d = intervals.task_gain(runs)
    assert (d["n"], d["seeds"]) == (8, 2)
    assert d["delta"] == pytest.approx(0.4) and d["after"] == pytest.approx(0.6)
    assert d["lo"] == pytest.approx(0.2) and d["hi"] == pytest.approx(0.6)
    assert intervals.interval_text(d) == "ci95_delta=0.200,0.600 n=8 seeds=2"
    assert intervals.interval_text({**d, "n": 3}) == "ci95_delta=n/a (n=3) seeds=2"


def test_task_gain_refuses_runs_that_did_not_evaluate_alike():
    one = {"a": [0.2, 0.5], "b": [0.4, 0.4]}
    with pytest.raises(ValueError, match="run 2 and run 1 measured different problems"):
        intervals.task_gain([one, {"a": [0.2, 0.5]}])
    with pytest.raises(ValueError, match=r"base model's score on problem 'b' \(0.300 against"):
        intervals.task_gain([one, {"a": [0.2, 0.9], "b": [0.3, 0.4]}])


def test_control_gain_groups_tasks_and_pools_both_sides_runs():
    tasks = {f"p{i}": f"k{i // 3}" for i in range(15)}  # five tasks of three instances
    treatment = {f"p{i}": [0.2, 0.6] for i in range(15)}
    control = {f"p{i}": [0.2, 0.3] for i in range(15)}
    d = intervals.control_gain([treatment], [control], tasks)
    assert d["n"] == 5 and d["delta"] == pytest.approx(0.3)
    assert d["lo"] == pytest.approx(0.3) and d["hi"] == pytest.approx(0.3)
    more = {f"p{i}": [0.2, 0.7] for i in range(15)}
    pooled = intervals.control_gain([treatment, more], [control], tasks)
    assert (pooled["seeds"], pooled["control_seeds"]) == (2, 1)
    assert pooled["delta"] == pytest.approx(0.35)
    assert pooled["lo"] == pytest.approx(0.3) and pooled["hi"] == pytest.approx(0.4)


def test_control_gain_by_start_weighs_starts_and_resamples_runs_within_each():
    tasks = {f"p{i}": f"k{i}" for i in range(6)}
    # start A: base 0.0, treatment +0.4 over its control; start B: base 0.5, no difference
    a_treat = [{f"p{i}": [0.0, 0.6] for i in range(6)}, {f"p{i}": [0.0, 0.4] for i in range(6)}]
    a_ctrl = [{f"p{i}": [0.0, 0.1] for i in range(6)}]
    b_treat = [{f"p{i}": [0.5, 0.7] for i in range(6)}]
    b_ctrl = [{f"p{i}": [0.5, 0.7] for i in range(6)}, {f"p{i}": [0.5, 0.7] for i in range(6)}]
    d = intervals.control_gain_by_start([(a_treat, a_ctrl), (b_treat, b_ctrl)], tasks)
    assert (d["starts"], d["seeds"], d["control_seeds"], d["n"]) == (2, 3, 3, 6)
    assert d["delta"] == pytest.approx(0.2)  # (0.4 + 0.0) / 2, not weighted by runs
    # A's two treatment runs gain 0.6 and 0.4: drawing them with replacement moves the delta by
    # (0.6 - 0.5) / 2 either way, and nothing else varies
    assert d["lo"] == pytest.approx(0.15) and d["hi"] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="start 2 control run 1 and start 2 treatment run 1"):
        intervals.control_gain_by_start([(a_treat, a_ctrl), (a_treat, b_ctrl)], tasks)
    with pytest.raises(ValueError, match="start 2 measured other problems"):
        intervals.control_gain_by_start(
            [(a_treat, a_ctrl), ([{"q": [0.5, 0.7]}], [{"q": [0.5, 0.7]}])]
        )


def test_reward_vs_control_pairs_gains_over_tasks():
    ids = [f"p{i}" for i in range(8)]
    treatment = {i: [0.2, 0.6] for i in ids}
    control = {i: [0.2, 0.3] for i in ids}
    line = arms.reward_vs_control(treatment, control)
    assert line == "LEARN reward_vs_control delta=0.300 ci95_delta=0.300,0.300 n=8"
    worse = arms.reward_vs_control(control, treatment)
    assert worse.startswith("LEARN reward_vs_control delta=-0.300")
    one_task = arms.reward_vs_control(treatment, control, {i: "k" for i in ids})
    assert one_task == "LEARN reward_vs_control delta=0.300 ci95_delta=n/a (n=1)"
    assert arms.reward_vs_control({}, {}).endswith("ci95_delta=n/a (n=0)")
    with pytest.raises(ValueError, match="measured different problems"):
        arms.reward_vs_control(treatment | {"only_t": [0.0, 1.0]}, control)


def test_base_zone_share_is_the_first_validations_zone():
    runs = [
        ("r2-validate-tests", {"break_rate": 0.3, "zone_problems": 1.0, "zone_estimated": 8.0}),
        ("r1-validate-tests", {"break_rate": 0.6, "zone_problems": 6.0, "zone_estimated": 8.0}),
    ]
    summary, *_ = learning.from_phase_runs(runs)
    assert summary["base_zone_share"] == 0.75
    assert learning.from_phase_runs([])[0]["base_zone_share"] is None


def _heldout(reward, pairs, tasks=None, seed=0, set_name="new_tasks"):
    return heldout_record(
        {set_name: pairs},
        tasks or {},
        reward=reward,
        seed=seed,
        config_digest="d1",
        start=FRESH,
    )


def test_heldout_record_holds_what_pairing_and_pooling_check():
    record = _heldout("honest", {"a": [0.1, 0.5], "b": [0.2, 0.2]}, {"a": "k1"}, seed=3)
    assert record == {
        "format": 3,
        "config_digest": "d1",
        "seed": 3,
        "reward": "honest",
        "measure": "discriminating",
        "sets": {"new_tasks": {"a": [0.1, 0.5], "b": [0.2, 0.2]}},
        "tasks": {"a": "k1", "b": "b"},  # a problem without a task is its own
        "arm": {"rewards.answerer": "honest"},
        "measures": {},
        "start": FRESH,
        "code": "",
    }
    assert json.loads(json.dumps(record)) == record


def test_heldout_pair_pairs_the_every_test_measure_the_file_holds():
    def record(reward, share, strict):
        return heldout_record(
            {"new_tasks": share}, {}, reward=reward, seed=0, config_digest="d", start=FRESH,
            measures={"strict": {"new_tasks": strict}},
        )  # fmt: skip

    t = record("honest", {"a": [0.5, 0.75]}, {"a": [0.0, 1.0]})
    c = record("format_only", {"a": [0.5, 0.75]}, {"a": [0.0, 0.0]})
    assert arms.heldout_pair(t, c)[:2] == ({"a": [0.5, 0.75]}, {"a": [0.5, 0.75]})
    assert arms.heldout_pair(t, c, measure="strict")[:2] == (
        {"a": [0.0, 1.0]},
        {"a": [0.0, 0.0]},
    )
    older = _heldout("format_only", {"a": [0.5, 0.75]})
    with pytest.raises(ValueError, match="control: no strict measure in it"):
        arms.heldout_pair(t, older, measure="strict")


def test_heldout_pair_refuses_what_is_no_fair_pair():
    t = _heldout("honest", {"a": [0.1, 0.5], "b": [0.2, 0.2]}, {"a": "k", "b": "k"})
    c = _heldout("format_only", {"a": [0.1, 0.2], "b": [0.2, 0.1]}, {"a": "k", "b": "k"})
    assert arms.heldout_pair(t, c) == (
        {"a": [0.1, 0.5], "b": [0.2, 0.2]}, {"a": [0.1, 0.2], "b": [0.2, 0.1]},
        {"a": "k", "b": "k"},
    )  # fmt: skip
    with pytest.raises(ValueError, match="answerer reward 'honest'"):
        arms.heldout_pair(t, t)
    with pytest.raises(ValueError, match="no held-out set 'bundled'"):
        arms.heldout_pair(t, c, "bundled")
    with pytest.raises(ValueError, match="control: no 'sets'"):
        arms.heldout_pair(t, {"reward": "format_only"})
    with pytest.raises(ValueError, match="not \\[base, final\\]"):
        arms.heldout_pair(t, {"reward": "format_only", "sets": {"new_tasks": {"a": [0.1]}}})
    with pytest.raises(ValueError, match="control: no 'reward' field"):
        arms.heldout_pair(t, {"sets": c["sets"]})
    fewer = _heldout("format_only", {"a": [0.1, 0.2]})
    with pytest.raises(ValueError, match="control and treatment measured different problems"):
        arms.heldout_pair(t, fewer)
    other_base = _heldout("format_only", {"a": [0.1, 0.2], "b": [0.7, 0.1]})
    with pytest.raises(ValueError, match="base model's score on problem 'b'"):
        arms.heldout_pair(t, other_base)
    other_task = _heldout("format_only", c["sets"]["new_tasks"], {"a": "k", "b": "z"})
    with pytest.raises(ValueError, match="give problem 'b' different tasks"):
        arms.heldout_pair(t, other_task)


def test_an_arm_pair_differs_in_its_field_and_nowhere_else():
    """selfplay_vs_given pairs a run with a generator phase against one without (one config
    field apart, the same reward); two runs of one arm, or a file that does not say its arm,
    are refused."""
    sets = {"new_tasks": {str(i): [0.1, 0.5] for i in range(6)}}
    given_sets = {"new_tasks": {str(i): [0.1, 0.3] for i in range(6)}}

    def record(schedule, sets):
        return heldout_record(
            sets, {}, reward="honest", seed=0, config_digest="d", start=FRESH,
            arm={"phase_schedule": schedule, "data.given_tests": "3"},
        )  # fmt: skip

    selfplay, given = record("generator_answerer", sets), record("answerer", given_sets)
    t, c, tasks = arms.heldout_pair(selfplay, given, "new_tasks", "phase_schedule")
    line = arms.reward_vs_control(t, c, tasks, name="selfplay_vs_given")
    assert line == "LEARN selfplay_vs_given delta=0.200 ci95_delta=0.200,0.200 n=6"
    with pytest.raises(ValueError, match="both runs have phase_schedule=answerer"):
        arms.heldout_pair(given, given, "new_tasks", "phase_schedule")
    old = {k: v for k, v in given.items() if k != "arm"}
    with pytest.raises(ValueError, match="without phase_schedule in its 'arm'"):
        arms.heldout_pair(selfplay, old, "new_tasks", "phase_schedule")
    # the same reward is no refusal for an arm other than the control
    assert (
        arms.control_differences(
            {"phase_schedule": "answerer", "lora.r": "16"},
            {"phase_schedule": "generator_answerer", "lora.r": "16"},
            arm_field="phase_schedule",
        )
        == []
    )


def _write(path, data):
    path.write_text(json.dumps(data))
    return str(path)


def test_eval_control_prints_the_paired_line_and_refuses_bad_files(tmp_path, capsys):
    from sparring.cli.main import main

    ids = [f"p{i}" for i in range(6)]
    treat = _write(tmp_path / "treatment.json", _heldout("honest", {i: [0.2, 0.6] for i in ids}))
    ctrl = _write(tmp_path / "control.json", _heldout("format_only", {i: [0.2, 0.3] for i in ids}))
    assert main(["eval", "control", treat, ctrl]) == 0  # --set new_tasks by default
    out = capsys.readouterr().out.strip()
    assert out == "LEARN reward_vs_control delta=0.300 ci95_delta=0.300,0.300 n=6"
    assert main(["eval", "control", treat, treat]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: both runs trained") and err.count("\n") == 1
    (tmp_path / "bad.json").write_text("{")
    assert main(["eval", "control", treat, str(tmp_path / "bad.json")]) == 2
    assert "bad.json: not JSON" in capsys.readouterr().err
    assert main(["eval", "control", treat, str(tmp_path / "missing.json")]) == 2
    assert "missing.json: No such file" in capsys.readouterr().err


def test_eval_control_pairs_self_play_against_given_tests_on_every_test_passed(tmp_path, capsys):
    from sparring.cli.main import main

    def arm(schedule, share, strict):
        record = heldout_record(
            {"new_tasks": share}, {}, reward="honest", seed=0, config_digest="d", start=FRESH,
            arm={"phase_schedule": schedule}, measures={"strict": {"new_tasks": strict}},
        )  # fmt: skip
        return _write(tmp_path / f"{schedule}.json", record)

    ids = [f"p{i}" for i in range(6)]
    selfplay = arm("generator_answerer", {i: [0.5, 0.7] for i in ids}, {i: [0.0, 0.5] for i in ids})
    given = arm("answerer", {i: [0.5, 0.7] for i in ids}, {i: [0.0, 0.0] for i in ids})
    args = ["eval", "control", selfplay, given, "--arm", "selfplay_vs_given"]
    assert main([*args, "--measure", "strict"]) == 0
    out = capsys.readouterr().out.strip()
    assert out == "LEARN selfplay_vs_given_strict delta=0.500 ci95_delta=0.500,0.500 n=6"
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("LEARN selfplay_vs_given delta=0.000 ")
    assert main(["eval", "control", selfplay, selfplay, "--arm", "selfplay_vs_given"]) == 2
    assert "both runs have phase_schedule=generator_answerer" in capsys.readouterr().err


def test_eval_control_refuses_files_that_disagree_on_the_base_model(tmp_path, capsys):
    """Two files sharing one problem, scoring the base model differently and naming no reward:
    this printed `delta=1.400 ci95_delta=n/a (n=1)`; it is refused in one line."""
    from sparring.cli.main import main

    a = _write(tmp_path / "a.json", {"sets": {"new_tasks": {"p": [0.0, 1.0]}}})
    b = _write(tmp_path / "b.json", {"sets": {"new_tasks": {"p": [0.8, 0.4]}}})
    assert main(["eval", "control", a, b]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "error: treatment: no 'reward' field, so which answerer reward it trained is unknown; "
        "evaluate the run again to rewrite its heldout.json\n"
    )
    a = _write(tmp_path / "a.json", _heldout("honest", {"p": [0.0, 1.0]}))
    b = _write(tmp_path / "b.json", _heldout("format_only", {"p": [0.8, 0.4]}))
    assert main(["eval", "control", a, b]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "differ in the base model's score on problem 'p' (0.800 against 0.000)" in captured.err


def _pool_files(tmp_path, gains, reward="honest", name="run", base=0.2):
    """One heldout.json per gain: new_tasks of 12 instances in 6 tasks, and one bundled problem."""
    tasks = {f"p{i}": f"k{i // 2}" for i in range(12)}
    out = []
    for seed, gain in enumerate(gains):
        record = _heldout(reward, {pid: [base, base + gain] for pid in tasks}, tasks, seed=seed)
        record["sets"]["bundled"] = {"HumanEval/1": [0.5, 0.5]}
        out.append(_write(tmp_path / f"{name}{seed}.json", record))
    return out


def _loaded(paths):
    return [(p, json.loads(Path(p).read_text())) for p in paths]


def test_pool_lines_pool_seeds_and_tasks(tmp_path):
    runs = _loaded(_pool_files(tmp_path, [0.2, 0.6]))
    assert arms.pool_lines(runs) == [
        "LEARN heldout_new_tasks base=0.200 final=0.600 ci95_delta=0.200,0.600 n=6 seeds=2",
        "LEARN heldout_new_ops base=n/a final=n/a ci95_delta=n/a (n=0)",
        "LEARN heldout_new_families base=n/a final=n/a ci95_delta=n/a (n=0)",
        "LEARN heldout_trained_tasks base=n/a final=n/a ci95_delta=n/a (n=0)",
        "LEARN heldout_bundled base=0.500 final=0.500 ci95_delta=n/a (n=1) seeds=2",
    ]
    controls = _loaded(_pool_files(tmp_path, [0.1, 0.1, 0.1], "format_only", "control"))
    line = "LEARN reward_vs_control delta=0.300 ci95_delta=0.100,0.500 n=6 seeds=2 control_seeds=3"
    assert arms.pool_lines(runs, controls)[-1] == line
    # asked by a control run (its own runs first), the line is still honest minus control
    assert arms.pool_lines(controls, runs)[-1] == line


def test_pool_lines_refuse_runs_of_another_config(tmp_path):
    runs = _loaded(_pool_files(tmp_path, [0.2, 0.6]))
    other_base = _loaded(_pool_files(tmp_path, [0.2], name="x", base=0.3))
    with pytest.raises(ValueError, match=r"x0\.json and .*run0\.json differ in the base model"):
        arms.pool_lines([*runs, *other_base])
    with pytest.raises(ValueError, match=r"run1\.json is .*run0\.json again"):
        arms.pool_lines([runs[0], (runs[1][0], runs[0][1])])
    no_bundled = json.loads(json.dumps(runs[1][1]))
    del no_bundled["sets"]["bundled"]
    with pytest.raises(ValueError, match=r"nb\.json holds the held-out sets \['new_tasks'\]"):
        arms.pool_lines([runs[0], ("nb.json", no_bundled)])
    mixed = json.loads(json.dumps(runs[1][1]))
    mixed["reward"] = "format_only"
    with pytest.raises(ValueError, match="the runs trained with different answerer rewards"):
        arms.pool_lines([runs[0], ("m.json", mixed)])
    with pytest.raises(ValueError, match="a control trains with another"):
        arms.pool_lines(runs[:1], runs[1:])
    with pytest.raises(ValueError, match="no run to pool"):
        arms.pool_lines([])


def test_eval_pool_prints_pooled_lines_and_refuses_in_one_line(tmp_path, capsys):
    from sparring.cli.main import main

    runs = _pool_files(tmp_path, [0.2, 0.6])
    controls = _pool_files(tmp_path, [0.1, 0.1], "format_only", "control")
    assert main(["eval", "pool", *runs, "--control", *controls]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("ci95_delta=0.200,0.600 n=6 seeds=2")
    assert out[-1].startswith("LEARN reward_vs_control delta=0.300 ")
    other = _pool_files(tmp_path, [0.2], name="x", base=0.3)
    assert main(["eval", "pool", *runs, *other]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "differ in the base model's score" in captured.err


def test_task_overlap_comes_from_materialize_and_is_na_without_it():
    runs = [("r0-materialize", {"heldout_task_overlap": 3.0, "problems_val": 9.0})]
    summary, *_ = learning.from_phase_runs(runs)
    assert summary["task_overlap"] == 3.0
    assert "LEARN task_overlap 3" in learning.learn_lines(summary, [], None)
    assert "LEARN task_overlap n/a" in learning.learn_lines({}, [], None)


def test_pooling_and_pairing_refuse_a_run_that_did_not_start_from_its_base(tmp_path, capsys):
    """A chained run (it trained on from the champion an earlier run registered) shares the
    base scores every other check compares, so only its start record can tell: the pool, the
    pair and the CLI refuse it in one line naming the run."""
    from sparring.cli.main import main

    runs = _pool_files(tmp_path, [0.2, 0.6])
    chained = json.loads(Path(runs[1]).read_text())
    champion = {"name": "sparring-learn", "alias": "champion", "version": "3"}
    chained["start"] = {**FRESH, "model": "models:/sparring-learn@champion", "champion": champion}
    planted = _write(tmp_path / "chained.json", chained)
    with pytest.raises(
        ValueError, match=r"chained\.json: started from the champion sparring-learn"
    ):
        arms.pool_lines(_loaded([runs[0], planted]))
    assert main(["eval", "pool", runs[0], planted]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "chained.json: started from the champion" in err
    unknown = {k: v for k, v in chained.items() if k != "start"}
    with pytest.raises(ValueError, match=r"old\.json: records no start"):
        arms.pool_lines([*_loaded(runs[:1]), ("old.json", unknown)])
    other = {**chained, "start": {**FRESH, "weights": "w1"}}  # another model at the same name
    with pytest.raises(ValueError, match=r"started from different models \(weights w1 against w0"):
        arms.pool_lines([*_loaded(runs[:1]), ("other.json", other)])

    control = json.loads(Path(runs[0]).read_text())
    control["reward"] = "format_only"
    for bad, why in ((chained, "control: started from the champion"), (other, "different models")):
        with pytest.raises(ValueError, match=why):
            arms.heldout_pair(
                json.loads(Path(runs[0]).read_text()), {**bad, "reward": "format_only"}
            )
    assert arms.heldout_pair(json.loads(Path(runs[1]).read_text()), control)[2]

    fresh = _loaded(runs)
    with pytest.raises(ValueError, match=r"chained\.json: started from the champion"):
        arms.pooled_arm_line(
            "reward_vs_control", "rewards.answerer", fresh, "honest",
            [("chained.json", {**chained, "reward": "format_only"})], "format_only",
        )  # fmt: skip
    with pytest.raises(ValueError, match=r"chained\.json: started from the champion"):
        arms.pooled_by_start_line("selfplay_vs_given", [(fresh[:1], [("chained.json", chained)])])


def test_doctests_of_the_arms_module():
    """is_treatment, control_differences, heldout_pair, reward_vs_control, pooled_arm_line."""
    import doctest

    result = doctest.testmod(arms)
    assert result.attempted >= 10 and result.failed == 0

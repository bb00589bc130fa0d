"""Recurring training's pure parts: what a run inherits of a persisted bank
(sparring.rewards.bank.carry:
the refusal of another task space, the retirements), the run stamp, and the lines and table of
sparring.recurring."""

from __future__ import annotations

import doctest
import json

import pytest

from sparring import recurring
from sparring.errors import SparringError
from sparring.rewards import bank
from sparring.rewards.bank import BankRefused, carry, reference_digest, stamp_run, task_space

REF = {
    "p1": reference_digest("def f(x):\n    return x + 1\n"),
    "p2": reference_digest("def g(s): ..."),
}
SPACE = task_space(REF)


def row(pid: str, test: str, breaks: int = 1, **extra) -> dict:
    return {"problem_id": pid, "test": test, "round": 1, "breaks": breaks,
            "reference": REF[pid], "space": SPACE, **extra}  # fmt: skip


def test_doctests():
    assert doctest.testmod(recurring).failed == 0
    assert doctest.testmod(bank).failed == 0


def test_a_bank_of_another_task_space_is_refused_in_one_line_naming_both():
    other = task_space(["q1", "q2"])
    rows = [row("p1", "assert f(1) == 2"), {**row("p2", "assert g('a') == 'a'"), "space": other}]
    with pytest.raises(BankRefused) as refused:
        carry(rows, SPACE, REF, where="the bank at s3://b/bank.jsonl")
    text = str(refused.value)
    assert "\n" not in text and other in text and SPACE in text and "s3://b/bank.jsonl" in text
    # a bank of code before task spaces were recorded is refused too, never guessed at
    with pytest.raises(BankRefused, match="unrecorded"):
        carry([{"problem_id": "p1", "test": "assert f(1) == 2"}], SPACE, REF)
    assert carry([], SPACE, REF).rows == []  # no bank: nothing to refuse


def test_a_changed_reference_retires_its_tests_and_keeps_the_rest():
    stale = {**row("p1", "assert f(5) == 6"), "reference": reference_digest("def f(x): ...")}
    kept = row("p2", "assert g('b') == 'b'")
    out = carry([stale, kept], SPACE, REF)
    assert out.rows == [kept] and out.retired == {"reference_changed": 1} and out.inherited == 2


def test_duplicates_by_behaviour_keep_the_first_banked():
    first = row("p1", "assert f(3) == 4", run="run-a")
    same_call = row("p1", "assert f( 3 ) == (2 + 2)", run="run-b")  # one behaviour: f(3)
    other_call = row("p1", "assert f(4) == 5", run="run-b")
    other_problem = row("p2", "assert f(3) == 4")  # same text, another problem: kept
    out = carry([first, same_call, other_call, other_problem], SPACE, REF)
    assert out.rows == [first, other_call, other_problem]
    assert out.retired == {"duplicate": 1}
    assert out.runs == {"run-a": 1, "run-b": 1, "unrecorded": 1}


def test_the_cap_keeps_a_problems_most_breaking_tests_in_bank_order():
    rows = [row("p1", f"assert f({i}) == {i + 1}", breaks=i % 3) for i in range(7)]
    out = carry(rows, SPACE, REF, cap=3)
    # breaks 0,1,2,0,1,2,0: the two 2s and the first 1 stay, in the order they were banked
    assert [r["test"] for r in out.rows] == [
        "assert f(1) == 2",
        "assert f(2) == 3",
        "assert f(5) == 6",
    ]
    assert out.retired == {"over_cap": 4}


def test_stamp_run_marks_only_unstamped_tests():
    rows = [row("p1", "assert f(1) == 2"), row("p1", "assert f(2) == 3", run="older"), {"x": 1}]
    stamped = stamp_run(rows, "run-9")
    assert [r.get("run") for r in stamped] == ["run-9", "older", None]


def test_behaviour_key_falls_back_to_the_text_for_other_tests():
    assert bank.behaviour_key("assert f(1) > 0") != bank.behaviour_key("assert f(1) > 1")
    assert bank.behaviour_key("assert f(1)==2") == bank.behaviour_key("assert f(1) == 2")
    assert bank.behaviour_key("not python (") == bank.behaviour_key("not  python (")


def test_the_chain_table_reads_each_runs_lines():
    lines = [
        "START answerer=sparring-recur@champion version 1 (registered by run ab, trained from "
        "smollm2-135m) bank=4 tests (ab: 4)",
        "LEARN heldout_new_tasks base=0.200 final=0.300 ci95_delta=0.010,0.190 n=56",
        "LEARN heldout_new_tasks_vs_start base=0.280 final=0.300 ci95_delta=-0.050,0.090 n=56",
        "LEARN bank size=9 inherited=4 new=5 retired=0",
        "LEARN champion promoted=yes version=2 (sparring-recur)",
    ]
    cells = recurring.parse_run(lines)
    assert cells["bank"] == "size=9 inherited=4 new=5 retired=0"
    row = {"name": "recur-2", "training_seed": 1, "seconds": 750.0, **cells}
    table = recurring.chain_table([row])
    row_text = table.splitlines()[2]
    assert row_text.startswith("| recur-2 | 1 | ") and row_text.endswith(
        "| yes, v2 | size=9 inherited=4 new=5 retired=0 | 12.5 |"
    )
    assert "champion v1 of smollm2-135m" in row_text
    assert "0.200 -> 0.300" in row_text and "0.280 -> 0.300" in row_text
    assert "[-0.050,0.090], n=56" in row_text


def test_vs_start_line_is_n_a_when_not_measured():
    line = recurring.vs_start_line({})
    assert line.startswith("LEARN heldout_new_tasks_vs_start base=n/a final=n/a ci95_delta=n/a")
    gain = {"before": 0.25, "after": 0.3, "delta": 0.05, "lo": -0.01, "hi": 0.11, "n": 56}
    line = recurring.vs_start_line({"gains": {recurring.VS_START: {"discriminating": gain}}})
    assert (
        line
        == "LEARN heldout_new_tasks_vs_start base=0.250 final=0.300 ci95_delta=-0.010,0.110 n=56"
    )


def test_recur_and_schedule_default_to_the_recurring_config_and_refuse_a_fresh_one(
    tmp_path, monkeypatch, capsys
):
    import argparse

    from sparring.cli import pipeline
    from sparring.cli.main import main
    from sparring.config import load_config
    from tests.conftest import ROOT

    monkeypatch.chdir(ROOT)
    args = argparse.Namespace(config=None)
    pipeline._recurring_config(args)
    assert args.config == "configs/recur.yaml"
    recur = load_config(args.config)
    assert not recur.storage.start_fresh and recur.selection.registered_model == "sparring-recur"
    assert main(["recur", "--config", "configs/smoke.yaml", "--runs", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "storage.start_fresh is true" in err
    monkeypatch.chdir(tmp_path)  # no configs/ here: say what to pass
    with pytest.raises(SparringError, match="pass --config FILE"):
        pipeline._recurring_config(argparse.Namespace(config=None))


def test_the_parent_run_carries_both_gains_and_the_start_version():
    from sparring.evaluation import headline

    vs_base = {"before": 0.2, "after": 0.3, "delta": 0.1, "lo": 0.01, "hi": 0.19, "n": 47}
    vs_start = {"before": 0.28, "after": 0.3, "delta": 0.02, "lo": -0.05, "hi": 0.09, "n": 47}
    learning = {
        "gains": {"heldout_new_tasks": {"discriminating": vs_base},
                  recurring.VS_START: {"discriminating": vs_start}},
        "start": {"champion": {"name": "sparring-recur", "alias": "champion", "version": "2"}},
    }  # fmt: skip
    points = {k: v for k, v, _ in headline.from_report({"learning": learning}, {})}
    assert points["heldout.new_tasks.delta"] == 0.1 and points["heldout.new_tasks.n"] == 47
    assert points["heldout.new_tasks_vs_start.before"] == 0.28
    assert points["heldout.new_tasks_vs_start.lo"] == -0.05
    assert points["start.champion_version"] == 2
    assert set(points) <= set(headline.KEYS)
    fresh = {"gains": learning["gains"], "start": {"champion": None}}  # a start from the base
    assert "start.champion_version" not in {
        k for k, _, _ in headline.from_report({"learning": fresh}, {})
    }


def test_each_run_of_a_local_schedule_has_a_training_seed_of_its_own(tmp_path, monkeypatch):
    """Run k is `sparring run ... --set training_seed=<config's + k - 1>`: a run after one that
    was not promoted starts from the same champion and must not replay it."""
    import subprocess
    import sys

    real = subprocess.Popen
    echo = "import sys; print('START answerer=x bank=none'); print('ARGS', ' '.join(sys.argv[1:]))"

    def fake_run(cmd, **kwargs):  # the command `play` built, echoed by a real process
        return real([sys.executable, "-c", echo, *cmd[3:]], **kwargs)

    monkeypatch.setattr(recurring.subprocess, "Popen", fake_run)
    from tests.conftest import ROOT

    folder = recurring.play(str(ROOT / "configs/recur.yaml"), 2, str(tmp_path / "chain"), [])
    done = json.loads((folder / "chain.json").read_text())
    assert [r["training_seed"] for r in done] == [0, 1]
    assert all(isinstance(r["seconds"], float) for r in done)
    more = recurring.play(str(ROOT / "configs/recur.yaml"), 1, str(folder), [])  # continued
    assert [r["name"] for r in json.loads((more / "chain.json").read_text())][-1] == "recur-3"
    assert json.loads((more / "chain.json").read_text())[-1]["training_seed"] == 2


def test_every_config_whose_schedule_chains_validates_with_the_start_gate_on():
    """Each shipped config a schedule continues run after run from its champion (not
    start_fresh, not a game) loads and validates with the start gate on, the held-out samples
    it needs set, and held-out new tasks to measure (else the gate would refuse every run)."""
    from sparring.config import load_config
    from sparring.problems.families.sets import configured_sets
    from tests.conftest import ROOT

    chaining = {}
    for path in sorted((ROOT / "configs").rglob("*.yaml")):
        if path.parent.name == "study":  # a study's design (its base is a config here), no run's
            continue
        cfg = load_config(path)  # validates, the gate's own checks included
        if recurring.chains(cfg):
            chaining[path.name] = cfg
    assert set(chaining) == {"recur.yaml", "cluster-qwen7b.yaml", "cluster-multinode.yaml"}
    for name, cfg in chaining.items():
        assert cfg.selection.refuse_below_start, name
        assert cfg.data.val_samples >= 1, name
        assert configured_sets(cfg.data.families).heldout["new_tasks"], name
        assert recurring.gate_line(cfg).startswith("start gate: on"), name


def test_the_gate_line_says_what_a_schedule_does_with_a_run_below_its_start():
    from sparring.config import from_dict

    on = {"selection": {"refuse_below_start": True, "start_margin": 0.02},
          "data": {"val_samples": 1, "train": ["families"]}}  # fmt: skip
    line = recurring.gate_line(from_dict(on))
    assert "selection.start_margin (0.020) is not promoted" in line
    assert "the champion that stands" in line
    assert recurring.gate_line(from_dict({})).startswith("start gate: off")
    game = recurring.gate_line(from_dict({"game": {"name": "debate"}}))
    assert game == "start gate: n/a, every run starts from the base model (a game)"

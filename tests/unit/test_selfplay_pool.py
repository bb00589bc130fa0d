"""Issue 45's arms pooled over seeds from two starts (scripts/selfplay_pool.py) on planted run
files: the starts weigh equally whatever their number of runs, a start's runs must share its
base scores, and the generator's catch rate pools over the runs that kept their numbers."""

from __future__ import annotations

import json

from scripts import selfplay_pool as pool
from sparring.evaluation.heldout import heldout_record

# a run that started from its configured base model (sparring.backends.lineage.start_record's
# fields)
FRESH = {"configured": "smollm2-135m", "model": "smollm2-135m", "base": "smollm2-135m",
         "weights": "w0", "base_weights": "w0", "champion": None}  # fmt: skip
IDS = [f"p{i}" for i in range(6)]


def _run(tmp_path, name, schedule, base, strict, catch=None):
    record = heldout_record(
        {"new_tasks": {i: [0.4, 0.5] for i in IDS}}, {}, reward="honest", seed=0,
        config_digest="d", start=FRESH, arm={"phase_schedule": schedule},
        measures={"strict": {"new_tasks": {i: [base, strict] for i in IDS}}},
    )  # fmt: skip
    (tmp_path / f"{name}-heldout.json").write_text(json.dumps(record))
    if catch is not None:  # (base, final) catch rate on every problem, one wrong answer each
        side = {
            label: {i: {"wrong": 1, "catch_rate": rate} for i in IDS}
            for label, rate in zip(("base", "final"), catch, strict=True)
        }
        side["base"]["p0"] = {"wrong": 0, "catch_rate": None}  # no wrong answer: skipped
        (tmp_path / f"{name}-generator.json").write_text(json.dumps(side))
    return str(tmp_path / name)


def test_starts_weigh_equally_and_the_catch_rate_pools_a_starts_runs(tmp_path, capsys):
    old = {  # start A: base 0.0, self-play 0.4 over given, one run an arm
        "start": "A",
        "treatment": [_run(tmp_path, "a-sp", "generator_answerer", 0.0, 0.5)],
        "control": [_run(tmp_path, "a-given", "answerer", 0.0, 0.1)],
    }
    new = {  # start B: base 0.2, no difference, two runs an arm, generator numbers kept
        "start": "B",
        "treatment": [
            _run(tmp_path, f"b-sp{t}", "generator_answerer", 0.2, 0.3, catch=(0.25, 0.25 + t / 4))
            for t in (1, 2)
        ],
        "control": [_run(tmp_path, f"b-given{t}", "answerer", 0.2, 0.3) for t in (1, 2)],
    }
    manifest = tmp_path / "seeds.json"
    manifest.write_text(json.dumps({"starts": [old, new]}))
    assert pool.main([str(manifest)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "| A | self-play | a-sp | 0.500 |" in out
    strict = next(line for line in out if line.startswith("LEARN selfplay_vs_given_strict"))
    assert strict == (
        "LEARN selfplay_vs_given_strict delta=0.200 ci95_delta=0.200,0.200 n=6 seeds=3 "
        "control_seeds=3 starts=2"
    )
    catch = next(line for line in out if line.startswith("LEARN generator_catch_heldout"))
    # runs 1 and 2 raise the catch rate by 0.25 and 0.5 on the 5 problems with a wrong answer
    assert catch.startswith("LEARN generator_catch_heldout base=0.250 final=0.625 ")
    assert "n=5 seeds=2 start='B'" in catch
    png = tmp_path / "seeds.png"
    (tmp_path / "b-sp1-learn.txt").write_text(
        "LEARN generator_catch_heldout base=0.250 final=0.500 ci95_delta=0.1,0.4 n=5\n"
    )
    assert pool.learn_catch(str(tmp_path / "b-sp1")) == (0.25, 0.5)
    assert pool.learn_catch(str(tmp_path / "b-sp2")) is None  # no learn.txt kept
    assert pool.main([str(manifest), "--figure", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_start_whose_runs_differ_in_base_scores_is_refused(tmp_path, capsys):
    start = {
        "start": "A",
        "treatment": [_run(tmp_path, "sp", "generator_answerer", 0.0, 0.5)],
        "control": [_run(tmp_path, "given", "answerer", 0.3, 0.1)],
    }
    manifest = tmp_path / "seeds.json"
    manifest.write_text(json.dumps({"starts": [start]}))
    assert pool.main([str(manifest)]) == 1
    assert "differ in the base model's score" in capsys.readouterr().err

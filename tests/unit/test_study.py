"""The study of issue 62 (configs/study/2026-12-02.yaml) without a model: its table and
contrasts from planted heldout.json files (a clearly better arm, a null pair), its refusals (a
chained run, a run of other code), and the runner's resume rule through its plan, the way
`sparring study --dry-list` prints it."""

from __future__ import annotations

import doctest
import json
import random
from pathlib import Path

import pytest

from sparring.cli.main import main
from sparring.evaluation.heldout import Heldout
from sparring.experiments import filed_runs, sizing, study, study_runner
from sparring.experiments.study import StudyRun
from sparring.experiments.study_design import load_design

STUDY = "configs/study/2026-12-02.yaml"
DESIGN = load_design(STUDY)

TASKS = 10  # two renamed instances of each: the matrices count tasks, not problems
BASE = {f"p{t}-{i}": 0.1 + 0.05 * t + 0.02 * i for t in range(TASKS) for i in range(2)}
REPS = 1000


def start(seed: int, code: str = "c1", champion: dict | None = None) -> dict:
    return {
        "configured": "smollm2-135m", "model": "smollm2-135m", "base": "smollm2-135m",
        "weights": "w1", "base_weights": "w1", "champion": champion, "seed": 0,
        "training_seed": seed, "code": code,
    }  # fmt: skip


def heldout(final: dict[str, float], seed: int, **start_fields) -> dict:
    pairs = {pid: [BASE[pid], final[pid]] for pid in BASE}
    strict = {pid: [0.0, 1.0 if final[pid] > 0.5 else 0.0] for pid in BASE}
    begun = start(seed, **start_fields)
    return {
        "format": 3, "reward": "honest", "measure": "discriminating", "seed": 0,
        "config_digest": "x", "sets": {"new_tasks": pairs, "bundled": {"b1": [0.5, 0.5]}},
        "measures": {"strict": {"new_tasks": strict, "bundled": {"b1": [0.0, 0.0]}}},
        "tasks": {pid: pid.split("-")[0] for pid in BASE}, "start": begun,
        "code": begun["code"],
    }  # fmt: skip


def arm_runs(arm: str, gain: float, noise: float, rng: random.Random, **start_fields):
    runs = []
    for seed in (1, 2, 3):
        final = {pid: b + gain + rng.uniform(-noise, noise) for pid, b in BASE.items()}
        data = heldout(final, seed, **start_fields)
        runs.append(StudyRun(f"study-{arm}-t{seed}", arm, seed, data))
    return runs


@pytest.fixture
def clear_pair() -> list[StudyRun]:
    """D gains 0.40 per task, F 0.05, each seed within +-0.05: D is better on every task."""
    rng = random.Random(0)
    return arm_runs("D", 0.40, 0.05, rng) + arm_runs("F", 0.05, 0.05, rng)


def test_a_clearly_better_arm_shows_in_the_table_and_its_contrast(clear_pair):
    result = study.analyse(clear_pair, DESIGN, reps=REPS)
    d_f = next(
        c for c in result["contrasts"] if c["contrast"] == "D-F" and c["measure"] == "new_tasks"
    )
    assert d_f["n"] == TASKS and d_f["seeds"] == [1, 2, 3]
    assert 0.30 < d_f["delta"] < 0.40
    assert d_f["lo"] > 0.0, d_f  # the interval over seeds and tasks excludes 0
    assert d_f["probability_of_improvement"] > 0.9
    row = next(r for r in result["table"] if r["arm"] == "D" and r["measure"] == "new_tasks")
    assert row["base"] == pytest.approx(sum(BASE.values()) / len(BASE))
    assert row["gain_lo"] > 0.3 and row["final_lo"] < row["final"] < row["final_hi"]
    matrix = result["matrices"]["new_tasks"]
    assert len(matrix["tasks"]) == TASKS and len(matrix["arms"]["D"]["final"]) == 3
    table = study.table_text(result)
    assert "new_tasks (n=10)" in table and "| D | 1,2,3 |" in table
    line = next(s for s in study.contrast_lines(result) if s.startswith("STUDY D-F new_tasks "))
    assert "n=10 seeds=3" in line and "poi=1.000" in line
    assert d_f["shown"] and " shown (primary" in line
    assert 0.0 < d_f["smallest"] < d_f["delta"] and f"smallest={d_f['smallest']:.3f}" in line


def test_a_null_pair_has_an_interval_across_zero():
    """S holds G's per-seed scores in another seed order: the same distribution, delta 0."""
    rng = random.Random(1)
    given = arm_runs("G", 0.2, 0.15, rng)
    selfplay = [
        StudyRun(f"study-S-t{k}", "S", k, given[k % 3].heldout | {"start": start(k)})
        for k in (1, 2, 3)
    ]
    result = study.analyse(given + selfplay, DESIGN, reps=REPS)
    s_g = next(
        c for c in result["contrasts"] if c["contrast"] == "S-G" and c["measure"] == "new_tasks"
    )
    assert s_g["lo"] < 0.0 < s_g["hi"], s_g
    assert 0.3 < s_g["probability_of_improvement"] < 0.7
    skipped = {s["contrast"] for s in result["skipped"]}
    assert {"D-F", "G-F", "D-S", "D-B"} <= skipped
    assert not s_g["shown"] and s_g["smallest"] > 0.0
    line = next(s for s in study.contrast_lines(result) if s.startswith("STUDY S-G new_tasks "))
    assert " not shown (primary" in line


def test_the_interval_resamples_tasks_too():
    """One seed an arm: only resampling tasks can widen the interval around the delta."""
    rng = random.Random(2)
    runs = [arm_runs(arm, gain, 0.2, rng)[0] for arm, gain in (("D", 0.3), ("F", 0.1))]
    (d_f,) = [
        c
        for c in study.analyse(runs, DESIGN, reps=REPS)["contrasts"]
        if c["measure"] == "new_tasks"
    ]
    assert d_f["seeds"] == [1] and d_f["hi"] - d_f["lo"] > 0.05, d_f


def planted(offsets: list[float], sigma_task: float, tasks: int, arms: int, seed: int) -> dict:
    """A measure matrix whose runs are task effect + a run offset + normal task noise."""
    rng = random.Random(seed)
    effects = [rng.uniform(0.0, 1.0) for _ in range(tasks)]
    rows = {
        f"A{a}": {
            "seeds": list(range(1, len(offsets) + 1)),
            "final": [[e + u + rng.gauss(0.0, sigma_task) for e in effects] for u in offsets],
        }
        for a in range(arms)
    }
    return {"tasks": [f"t{i}" for i in range(tasks)], "base": effects, "arms": rows}


def test_the_seed_spread_recovers_a_planted_run_offset_and_task_noise():
    """Offsets -0.05, 0, +0.05 have an SD of 0.05. Over 20 tasks of noise SD 0.3 a run's mean
    carries noise of SD 0.067 too, which must be taken out: 0.05 comes back, not 0.084. Many
    arms pooled (400 degrees of freedom) make the estimate tight."""
    spread = sizing.seed_spread(planted([-0.05, 0.0, 0.05], 0.3, tasks=20, arms=200, seed=3))
    assert spread["sigma_seed"] == pytest.approx(0.05, abs=0.01), spread
    assert spread["sigma_task"] == pytest.approx(0.3, abs=0.01), spread
    assert (spread["df_seeds"], spread["df_tasks"], spread["n"]) == (400, 400 * 19, 20)
    # no run offset at all: what the runs' means spread is task noise, and none is left
    flat = sizing.seed_spread(planted([0.0, 0.0, 0.0], 0.3, tasks=20, arms=200, seed=4))
    assert flat["sigma_seed"] < 0.03, flat


def test_two_seeds_give_the_sizing_scripts_pair_arithmetic():
    """docs/learning-journal.md, "The study's sizing": sigma_task = SD(diff) / sqrt(2),
    sigma_seed^2 = max(0, (mean(diff)^2 - SD(diff)^2 / n) / 2)."""
    matrix = planted([0.0, 0.08], 0.2, tasks=30, arms=1, seed=5)
    first, second = matrix["arms"]["A0"]["final"]
    diffs = [b - a for a, b in zip(first, second, strict=True)]
    mean = sum(diffs) / len(diffs)
    sd2 = sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)
    spread = sizing.seed_spread(matrix)
    assert spread["sigma_task"] == pytest.approx((sd2 / 2) ** 0.5)
    assert spread["sigma_seed"] == pytest.approx(max(0.0, (mean**2 - sd2 / 30) / 2) ** 0.5)


def test_one_seed_an_arm_leaves_the_smallest_contrast_unmeasured():
    rng = random.Random(2)
    runs = [arm_runs(arm, gain, 0.2, rng)[0] for arm, gain in (("D", 0.3), ("F", 0.1))]
    result = study.analyse(runs, DESIGN, reps=100)
    assert result["spread"]["new_tasks"] is None
    lines = study.contrast_lines(result)
    assert "STUDY spread new_tasks n/a: no arm ran two seeds" in lines
    d_f = next(s for s in lines if s.startswith("STUDY D-F new_tasks "))
    assert " smallest=n/a " in d_f
    # one seed: its interval resamples tasks alone, so even a clear one is not shown
    (contrast,) = [c for c in result["contrasts"] if c["measure"] == "new_tasks"]
    assert contrast["lo"] > 0.0 and not contrast["shown"]
    assert " not shown: one seed (primary" in d_f


def test_a_chained_run_is_refused_by_name(clear_pair):
    chained = clear_pair[4]
    data = chained.heldout | {
        "start": start(2, champion={"name": "sparring-answerer", "alias": "champion", "version": 3})
    }
    runs = [*clear_pair[:4], StudyRun(chained.name, "F", 2, data), clear_pair[5]]
    with pytest.raises(ValueError, match=r"study-F-t2: started from the champion"):
        study.analyse(runs, DESIGN, reps=REPS)


def test_a_run_of_other_code_is_refused_by_name(clear_pair):
    odd = clear_pair[1]
    data = odd.heldout | {"start": start(2, code="c2"), "code": "c2"}
    runs = [clear_pair[0], StudyRun(odd.name, "D", 2, data), *clear_pair[2:]]
    with pytest.raises(ValueError, match=r"study-D-t2: code c2, not the c1 of 5"):
        study.analyse(runs, DESIGN, reps=REPS)


def test_a_run_whose_code_changed_during_it_is_refused_by_name(clear_pair):
    odd = clear_pair[3]
    runs = [
        *clear_pair[:3],
        StudyRun(odd.name, "F", 1, odd.heldout | {"code": "c2"}),
        *clear_pair[4:],
    ]
    with pytest.raises(ValueError, match=r"study-F-t1: started at code c1, evaluated at code c2"):
        study.analyse(runs, DESIGN, reps=REPS)


def test_a_measure_no_file_holds_is_listed_missing(clear_pair):
    result = study.analyse(clear_pair, DESIGN, reps=200)
    missing = {m["measure"]: m["why"] for m in result["missing"]}
    assert set(missing) == {"new_tasks_defining", "new_families"}
    assert "new_tasks_strict" in result["matrices"] and "bundled" in result["matrices"]
    assert any(
        s.startswith("STUDY new_tasks_defining missing") for s in study.contrast_lines(result)
    )


def test_the_share_among_defining_answers_is_read_on_the_problems_every_run_holds(clear_pair):
    """A problem without a defining answer before or after training is missing from a run's
    `defining` pairs, differently in each run: the matrix keeps the problems all runs hold
    (without that, the runs would be refused as measuring different problems)."""
    for i, run in enumerate(clear_pair):
        pairs = dict(run.heldout["sets"]["new_tasks"])
        del pairs[f"p{i % TASKS}-0"]  # each run lacks another problem
        run.heldout["measures"]["defining"] = {"new_tasks": pairs}
    matrix = study.measure_matrix(clear_pair, "new_tasks", "defining")
    assert len(matrix["tasks"]) == TASKS  # every task keeps its second instance
    assert len(matrix["arms"]["D"]["final"][0]) == TASKS


def file_run(out: Path, arm: str, seed: int, code: str, digest: str) -> None:
    folder = out / DESIGN.run_name(arm, seed)
    folder.mkdir(parents=True)
    (folder / "heldout.json").write_text(json.dumps(heldout(dict(BASE), seed)))
    record = {"name": folder.name, "arm": arm, "seed": seed, "code": code}
    record |= {"config_digest": digest, "finished": "2026-12-02T09:12:39+00:00"}
    (folder / "record.json").write_text(json.dumps(record))


def test_the_plan_interleaves_arms_and_keeps_only_runs_of_todays_code_and_config(tmp_path):
    def digest_of(sets):
        return "cfg-" + sets[0].removeprefix("name=")

    file_run(tmp_path, "F", 1, "today", "cfg-study-F-t1")  # kept
    file_run(tmp_path, "D", 1, "older", "cfg-study-D-t1")  # other code: run again
    file_run(tmp_path, "F", 2, "today", "cfg-before")  # other config: run again
    items = study_runner.plan(tmp_path, DESIGN, ["D", "F"], [2, 1], "today", digest_of)
    assert [(i.name, i.action) for i in items] == [
        ("study-F-t1", "keep"), ("study-D-t1", "run"), ("study-F-t2", "run"),
        ("study-D-t2", "run"),
    ]  # fmt: skip
    why = {i.name: i.why for i in items}
    assert why["study-D-t1"] == "ran at code older, the code is today now"
    assert why["study-F-t2"] == "ran config cfg-before, the config is cfg-study-F-t2 now"
    assert why["study-D-t2"] == "not run yet"
    sets = items[0].overrides
    assert sets[:3] == ("name=study-F-t1", "training_seed=1", "storage.start_fresh=true")
    assert "rewards.answerer=format_only" in sets


def test_a_filed_run_comes_back_to_a_fresh_out_and_is_kept(tmp_path):
    """A fresh clone: local_outputs is empty, the runs filed in docs/results are kept."""
    here, filed, fresh = tmp_path / "here", tmp_path / "filed", tmp_path / "fresh"
    file_run(here, "D", 1, "today", "cfg-study-D-t1")
    copies = filed_runs.file_run(here, "study-D-t1", filed)  # this run has no learn.txt
    names = ["study-D-t1-2026-12-02-heldout.json", "study-D-t1-2026-12-02-record.json"]
    assert [c.name for c in copies] == names
    lines = filed_runs.restore(filed, fresh, ["study-D-t1", "study-F-t1"])
    assert lines == [f"study: study-D-t1 restored from {filed}/study-D-t1-2026-12-02-*"]
    for part in ("heldout.json", "record.json"):
        copy, original = fresh / "study-D-t1" / part, here / "study-D-t1" / part
        assert copy.read_bytes() == original.read_bytes()
    items = study_runner.plan(fresh, DESIGN, ["D", "F"], [1], "today", lambda s: "cfg-" + s[0][5:])
    assert [(i.name, i.action) for i in items] == [("study-F-t1", "run"), ("study-D-t1", "keep")]


def test_restore_takes_the_latest_copy_and_never_replaces_a_run_here(tmp_path):
    filed, out = tmp_path / "filed", tmp_path / "out"
    filed.mkdir()
    for day, code in (("2026-12-01", "old"), ("2026-12-03", "new")):
        for part, text in (
            ("heldout.json", "{}"),
            ("record.json", json.dumps({"name": "study-G-t1", "code": code})),
        ):
            (filed / f"study-G-t1-{day}-{part}").write_text(text)
    # a torn copy (no heldout.json) is no run
    (filed / "study-S-t1-2026-12-04-record.json").write_text(json.dumps({"name": "study-S-t1"}))
    filed_runs.restore(filed, out, ["study-G-t1", "study-S-t1"])
    assert filed_runs.read_record(out / "study-G-t1")["code"] == "new"
    assert not (out / "study-S-t1").exists()
    file_run(out, "F", 1, "mine", "cfg")
    (filed / "study-F-t1-2026-12-09-heldout.json").write_text("{}")
    (filed / "study-F-t1-2026-12-09-record.json").write_text(
        json.dumps({"name": "study-F-t1", "code": "filed"})
    )
    assert filed_runs.restore(filed, out, ["study-F-t1"]) == []
    assert filed_runs.read_record(out / "study-F-t1")["code"] == "mine"


def test_dry_list_plans_from_the_real_config_and_runs_nothing(tmp_path, monkeypatch, capsys):
    from sparring.backends import lineage

    def no_run(*args, **kwargs):
        raise AssertionError("--dry-list ran a run")

    monkeypatch.setattr(study_runner, "run_one", no_run)
    sets = DESIGN.overrides("D", 1)
    elsewhere, filed, here = tmp_path / "elsewhere", tmp_path / "filed", tmp_path / "here"
    file_run(  # a run filed from another checkout: this one takes it back
        elsewhere, "D", 1, lineage.code_digest(),
        study_runner.config_digest("configs/learn.yaml", sets),
    )  # fmt: skip
    filed_runs.file_run(elsewhere, "study-D-t1", filed)
    file_run(  # the right config, other code
        here, "F", 1, "0123456789abcdef",
        study_runner.config_digest("configs/learn.yaml", DESIGN.overrides("F", 1)),
    )  # fmt: skip
    argv = ["study", "--study", STUDY, "--dry-list", "--arms", "F,D", "--seeds", "1"]
    argv += ["--out", str(here)]
    assert main([*argv, "--filed", str(filed)]) == 0
    out = capsys.readouterr().out
    assert f"study: study-D-t1 restored from {filed}/study-D-t1-2026-12-02-*" in out
    assert "study: 2 runs, 1 to run, 1 kept" in out
    assert "keep study-D-t1" in out
    assert "run  study-F-t1     ran at code 0123456789abcdef" in out


def test_every_run_the_study_finishes_is_filed(tmp_path, monkeypatch, capsys):
    def finish(item, config, out, threads=None, prefix=""):
        file_run(out, item.arm, item.seed, "today", item.config_digest)
        return filed_runs.read_record(out / item.name)

    monkeypatch.setattr(study_runner, "run_one", finish)
    filed = tmp_path / "filed"
    argv = ["study", "--study", STUDY, "--arms", "D", "--seeds", "1"]
    argv += ["--out", str(tmp_path / "out"), "--reps", "50", "--filed", str(filed)]
    argv += ["--results", str(tmp_path / "r.json"), "--image", str(tmp_path / "s.png")]
    assert main(argv) == 0
    assert "study: study-D-t1 filed as" in capsys.readouterr().out
    assert sorted(p.name for p in filed.iterdir()) == [
        "study-D-t1-2026-12-02-heldout.json", "study-D-t1-2026-12-02-record.json",
    ]  # fmt: skip


def test_every_arm_measures_humaneval_on_20_tasks():
    from sparring.config import load_config

    for arm in DESIGN.arms:
        cfg = load_config(DESIGN.base, list(DESIGN.overrides(arm, 1)))
        assert cfg.data.humaneval_limit == 20, arm


def test_the_values_are_read_from_record_json_and_an_old_files_from_its_learn_txt(tmp_path):
    """A run filed before record.json kept its values (the 2026-12-02 study's) has them in its
    learn.txt alone: read from there; a newer run's come from its record.json, and its
    learn.txt is never parsed."""
    file_run(tmp_path, "D", 1, "c1", "x")  # an old file: no values in its record
    (tmp_path / "study-D-t1" / "learn.txt").write_text(
        "LEARN humaneval_pass_at_1 base=0.050 final=0.100\nLEARN false_positive_rate 0.020\n"
    )
    file_run(tmp_path, "D", 2, "c1", "x")
    record_path = tmp_path / "study-D-t2" / "record.json"
    values = {"humaneval_pass_at_1_base": 0.05, "humaneval_pass_at_1_final": 0.0}
    record_path.write_text(json.dumps(json.loads(record_path.read_text()) | {"values": values}))
    (tmp_path / "study-D-t2" / "learn.txt").write_text("LEARN false_positive_rate 0.900\n")
    runs = [run for run, _ in study_runner.finished_runs(tmp_path, DESIGN, ["D"], [1, 2])]
    assert runs[0].values == {
        "humaneval_pass_at_1_base": 0.05, "humaneval_pass_at_1_final": 0.1,
        "false_positive_rate": 0.02,
    }  # fmt: skip
    assert runs[1].values == values
    by_arm = study.learn_by_arm(runs)
    assert by_arm["D"]["humaneval_pass_at_1_final"] == {"mean": 0.05, "seeds": [1, 2]}
    assert by_arm["D"]["false_positive_rate"] == {"mean": 0.02, "seeds": [1]}


def test_the_runner_refuses_to_move_what_it_sets_itself():
    with pytest.raises(Exception, match=r"the study sets storage\.start_fresh"):
        DESIGN.overrides("S", 1, ["storage.start_fresh=false"])


def test_the_report_files_every_run_and_draws_the_figure(clear_pair, tmp_path):
    result = study.analyse(clear_pair, DESIGN, reps=200)
    runs = [(run, {"name": run.name, "code": "c1"}) for run in clear_pair]
    path = study_runner.write_report(
        result, runs, DESIGN, tmp_path / "results" / "r.json", tmp_path / "study.png"
    )
    data = json.loads(path.read_text())
    assert [r["start"]["champion"] for r in data["runs"]] == [None] * 6
    assert data["matrices"]["new_tasks"]["arms"]["F"]["seeds"] == [1, 2, 3]
    assert (tmp_path / "study.png").stat().st_size > 10_000


def test_the_doc_examples():
    assert doctest.testmod(study).failed == 0
    assert doctest.testmod(sizing).failed == 0
    assert doctest.testmod(study_runner).failed == 0
    from sparring.experiments import study_jobs

    assert doctest.testmod(study_jobs).failed == 0


def test_a_finished_run_files_the_threads_and_cpu_kind_its_rerun_reads(tmp_path, monkeypatch):
    """run_one, the study's real filing with the run itself stubbed out (its subprocess and the
    MLflow fetch): the record names the torch thread count and the CPU's vector instruction set
    the run computed with, under the keys `sparring rerun` reads (`torch_threads`, which it
    sets in the rerun's environment, and `cpu_capability`, which it warns on)."""
    from sparring.backends import lineage
    from sparring.cli.rerun import filed_learn_path

    code = lineage.code_digest()
    data = Heldout.from_dict(heldout({pid: 0.5 for pid in BASE}, 1, code=code))
    learn = ["LEARN heldout_new_tasks base=0.1 final=0.5"]
    costs = {"r1-train-answerer": {"peak_rss_mb": 3100.0, "cpu_s": 90.0, "wall_s": 60.0}}
    monkeypatch.setattr(study_runner, "_stream", lambda cmd, env=None, prefix="": (0, learn))
    monkeypatch.setattr(study_runner, "fetch_run", lambda config, sets: (data, "p1", {}, costs))
    sets = (*DESIGN.overrides("D", 1), f"storage.pipeline_root={tmp_path / 'outputs'}")
    item = study_runner.Planned("study-D-t1", "D", 1, sets, "x", "run", "not yet run")
    record = study_runner.run_one(item, DESIGN.base, tmp_path / "out")
    assert record is not None
    filed = json.loads((tmp_path / "out" / "study-D-t1" / "record.json").read_text())
    assert filed == record
    assert filed["torch_threads"] == lineage.torch_threads() >= 1
    assert filed["cpu_capability"] == lineage.cpu_capability() != ""
    assert filed["phases"] == costs  # every phase's peak memory, CPU and wall seconds
    assert lineage.threads_env({}, filed["torch_threads"])["OMP_NUM_THREADS"] == str(
        lineage.torch_threads()
    )
    assert lineage.cpu_warning(filed["cpu_capability"], lineage.cpu_capability()) == ""
    learn_file = filed_learn_path(tmp_path / "out" / "study-D-t1" / "record.json")
    assert learn_file.read_text().splitlines() == learn


def test_jobs_run_the_studys_runs_at_once_one_thread_each_and_file_them_all(
    tmp_path, monkeypatch, capsys
):
    """--jobs 2: two runs are in flight together (each waits at a barrier that only the other
    can release), each with one torch thread and its name before its lines; both are filed."""
    import threading

    from sparring.experiments import study_jobs

    both = threading.Barrier(2, timeout=20)
    seen = []

    def finish(item, config, out, threads=None, prefix=""):
        both.wait()  # a BrokenBarrierError here: the runs went one at a time
        seen.append((item.name, threads, prefix))
        file_run(out, item.arm, item.seed, "today", item.config_digest)
        return filed_runs.read_record(out / item.name)

    monkeypatch.setattr(study_runner, "run_one", finish)
    monkeypatch.setattr(study_jobs, "available_mb", lambda: 64 * 1024.0)
    filed = tmp_path / "filed"
    argv = ["study", "--study", STUDY, "--arms", "D,F", "--seeds", "1", "--jobs", "2"]
    argv += ["--out", str(tmp_path / "out"), "--reps", "50", "--filed", str(filed)]
    argv += ["--results", str(tmp_path / "r.json"), "--image", str(tmp_path / "s.png")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "study: 2 runs at once, one torch thread each" in out
    assert sorted(seen) == [("study-D-t1", 1, "[study-D-t1] "), ("study-F-t1", 1, "[study-F-t1] ")]
    assert len(list(filed.glob("*-record.json"))) == 2


def test_jobs_start_no_more_runs_than_memory_holds(tmp_path, monkeypatch, capsys):
    """A finished run filed a 9 GiB phase: with 12 GiB available, --jobs 3 runs one at a time
    and says why."""
    from sparring.experiments import study_jobs

    started = []

    def finish(item, config, out, threads=None, prefix=""):
        started.append(threads)
        file_run(out, item.arm, item.seed, "today", item.config_digest)
        return filed_runs.read_record(out / item.name)

    out_dir = tmp_path / "out"
    file_run(out_dir, "D", 2, "old", "x")  # finished earlier, at other code: only its figures
    record = filed_runs.read_record(out_dir / "study-D-t2")
    record["phases"] = {"r1-train-generator": {"peak_rss_mb": 9 * 1024.0}}
    (out_dir / "study-D-t2" / "record.json").write_text(json.dumps(record))
    monkeypatch.setattr(study_runner, "run_one", finish)
    monkeypatch.setattr(study_jobs, "available_mb", lambda: 12 * 1024.0)
    argv = ["study", "--study", STUDY, "--arms", "D,F", "--seeds", "1", "--jobs", "3"]
    argv += ["--out", str(out_dir), "--reps", "50", "--filed", ""]
    argv += ["--results", str(tmp_path / "r.json"), "--image", str(tmp_path / "s.png")]
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert "a run needs up to 10.0 GiB (study-D-t2 r1-train-generator)" in said
    assert "--jobs 3: 1 runs at once fit (10.0 GiB a run and 12.0 GiB available)" in said
    assert started == [None, None]  # one at a time, with the machine's threads


def test_a_run_started_with_one_thread_computes_with_one(tmp_path):
    """run_one's environment for threads=1 reaches the run's process (torch reads it there)."""
    import os
    import sys

    from sparring.backends import lineage

    env = lineage.threads_env(os.environ, 1)
    cmd = [
        sys.executable,
        "-c",
        "import os; print('LEARN threads=' + os.environ['OMP_NUM_THREADS'])",
    ]
    code, learn = study_runner._stream(cmd, env, "[x] ")
    assert code == 0 and learn == ["LEARN threads=1"]

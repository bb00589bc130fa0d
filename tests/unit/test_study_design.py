"""A study as data (issue 74, item 3): configs/study/2026-12-02.yaml holds issue 62's design
exactly as the code held it, and rebuilds its report from the runs filed in docs/results, with
the first report's table and every contrast's point estimate; a study file's mistake is one
line naming the field; `make study` takes STUDY=<name>."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from stand_in import stand_in_venv

from sparring.cli.main import main
from sparring.config.fields import ConfigError
from sparring.errors import SparringError
from sparring.experiments import filed_runs, study, study_runner
from sparring.experiments.study_design import design_from_dict, load_design

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "configs" / "study" / "2026-12-02.yaml"
RESULTS = ROOT / "docs" / "results"
FIRST_REPORT = RESULTS / "study-2026-12-02.json"  # rliable's intervals, as filed 2026-12-02


def test_the_2026_12_02_study_is_issue_62s_design():
    """The arms and contrasts evaluation/study.py held as code (ARMS, COMMON, CONTRASTS)."""
    design = load_design(STUDY)
    assert (design.name, design.issue, design.base) == ("2026-12-02", 62, "configs/learn.yaml")
    assert {a: design.arms[a].overrides for a in design.arms} == {
        "F": ("rewards.answerer=format_only", "phase_schedule=answerer", "data.given_tests=0"),
        "D": ("phase_schedule=answerer", "data.given_tests=0"),
        "G": ("phase_schedule=answerer",),
        "S": ("data.generator_samples=4",),
        "B": ("rewards.answerer=all_tests", "phase_schedule=answerer", "data.given_tests=0"),
    }
    assert design.common == ("data.humaneval_limit=20",)
    assert [(c.label, c.rank) for c in design.contrasts] == [
        ("D-F", "primary"), ("S-G", "primary"), ("G-F", "secondary"), ("D-S", "secondary"),
        ("D-B", "secondary"),
    ]  # fmt: skip
    assert design.seeds == (1, 2, 3) and design.experiment == "sparring-study"
    assert design.overrides("S", 2)[:4] == (
        "name=study-S-t2", "training_seed=2", "storage.start_fresh=true",
        "tracking.experiment=sparring-study",
    )  # fmt: skip
    first = json.loads(FIRST_REPORT.read_text())
    assert {a: tuple(v["overrides"]) for a, v in first["arms"].items()} == {
        a: design.arms[a].overrides for a in design.arms
    }


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory) -> tuple[dict, list]:
    """The study's report rebuilt from its filed runs, as `--report --filed docs/results` does."""
    design = load_design(STUDY)
    out = tmp_path_factory.mktemp("out")
    names = [design.run_name(a, s) for s in design.seeds for a in design.arms]
    assert len(filed_runs.restore(RESULTS, out, names)) == 15
    runs = study_runner.finished_runs(out, design, list(design.arms), design.seeds)
    return study.analyse([run for run, _ in runs], design, reps=200), runs


def test_the_filed_runs_rebuild_the_first_reports_table_and_point_estimates(rebuilt):
    result, runs = rebuilt
    first = json.loads(FIRST_REPORT.read_text())
    assert len(runs) == 15 and result["matrices"] == first["matrices"]
    key = ("arm", "measure")
    table = {tuple(r[k] for k in key): r for r in result["table"]}
    assert set(table) == {tuple(r[k] for k in key) for r in first["table"]}
    for row in first["table"]:
        mine = table[tuple(row[k] for k in key)]
        for name in ("base", "final", "gain", "n", "seeds"):
            assert mine[name] == pytest.approx(row[name], abs=1e-12), (row["arm"], name)
    contrasts = {(c["contrast"], c["measure"]): c for c in result["contrasts"]}
    assert len(contrasts) == len(first["contrasts"]) == 25
    for c in first["contrasts"]:
        mine = contrasts[c["contrast"], c["measure"]]
        for name in ("delta", "probability_of_improvement", "n", "seeds"):
            assert mine[name] == pytest.approx(c[name], abs=1e-12), (c["contrast"], name)
    assert result["learn"] == first["learn"]  # from the old files' learn.txt


def test_the_filed_report_is_the_rebuilt_one(rebuilt):
    """docs/results/study-2026-12-02-seeds.json holds what the rebuild computes: the per-seed
    contrasts, their t-intervals and the spread do not depend on the resamples."""
    result, _ = rebuilt
    filed = json.loads((ROOT / load_design(STUDY).report).read_text())
    assert filed["reps"] == 10_000 and filed["matrices"] == result["matrices"]
    mine = {(c["contrast"], c["measure"]): c for c in result["contrasts"]}
    for c in filed["contrasts"]:
        for name in ("delta", "per_seed", "t_lo", "t_hi", "smallest", "shown"):
            assert mine[c["contrast"], c["measure"]][name] == pytest.approx(c[name]), name
    for label, spread in filed["spread"].items():
        assert spread.pop("arms") == pytest.approx(result["spread"][label]["arms"])
        assert spread == pytest.approx(
            {k: v for k, v in result["spread"][label].items() if k != "arms"}
        )
    s_g = next(
        c for c in filed["contrasts"] if c["contrast"] == "S-G" and c["measure"] == "new_tasks"
    )
    # the audit of issue 73: whole seeds and tasks resampled, -0.060 (-0.170..+0.037)
    assert (round(s_g["delta"], 3), round(s_g["lo"], 2), round(s_g["hi"], 2)) == (
        -0.06,
        -0.17,
        0.04,
    )
    assert [round(d, 3) for d in s_g["per_seed"].values()] == [-0.071, -0.144, 0.035]


VALID = yaml.safe_load(STUDY.read_text())
SG = {"treatment": "S", "control": "G", "rank": "primary", "question": "?"}


def _arm_g(**body):
    return lambda d: d["arms"].__setitem__("G", body)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(arms={}), r"arms: no arm: give at least one"),
        (lambda d: d.update(arm={}), r"arm: not a study field"),
        (lambda d: d.update(contrasts=[SG | {"treatment": "Q"}]),
         r"contrasts\[0\]\.treatment: 'Q' is not an arm \(F, D, G, S, B\)"),
        (lambda d: d.update(contrasts=[SG | {"treatment": "G"}]),
         r"contrasts\[0\]: G against itself"),
        (lambda d: d.update(contrasts=[SG | {"rank": "main"}]),
         r"contrasts\[0\]\.rank: 'main' is not one of primary, secondary"),
        (lambda d: d.update(contrasts=[SG, SG]), r"contrasts\[1\]: S-G is planned twice"),
        (lambda d: d.update(contrasts=[]), r"contrasts: no contrast"),
        (_arm_g(set=["phase_schedule answerer"]),
         r"arms\.G\.set\[0\]: 'phase_schedule answerer' is not key\.path=value"),
        (_arm_g(set=["training_seed=4"]),
         r"arms\.G\.set\[0\]: 'training_seed=4': the study sets training_seed of every run"),
        (_arm_g(sets=[]), r"arms\.G\.sets: not an arm field"),
        (lambda d: d.update(common=["data.given_tests=1", "data.given_tests=2"]),
         r"common\[1\]: 'data\.given_tests=2': data\.given_tests is set twice"),
        (lambda d: d.update(seeds=[1, 0]), r"seeds\[1\]: 0 is not a training seed of 1 or more"),
        (lambda d: d.update(seeds=[]), r"seeds: no training seed"),
        (lambda d: d.update(measures=[{"label": "x", "set": "new_task", "measure": "strict"}]),
         r"measures\[0\]\.set: 'new_task' is not a held-out set"),
        (lambda d: d.update(measures=[{"label": "x", "set": "new_tasks", "measure": "exact"}]),
         r"measures\[0\]\.measure: 'exact' is not one of discriminating, strict"),
        (lambda d: d.update(base="configs/nope.yaml"),
         r"base: configs/nope\.yaml: no such config file"),
        (lambda d: d.pop("name"), r"name: missing; give it"),
        (lambda d: d.update(analysis="sparring precheck select-report"),
         r"contrasts: the study's runs are compared by its analysis"),
    ],
)  # fmt: skip
def test_a_mistake_in_a_study_file_is_one_line_naming_the_field(change, message):
    data = copy.deepcopy(VALID)
    design_from_dict(copy.deepcopy(data), "my.yaml")  # the file itself is valid
    change(data)
    with pytest.raises(ConfigError, match=rf"^my\.yaml: {message}") as caught:
        design_from_dict(data, "my.yaml")
    assert "\n" not in str(caught.value)


def test_the_cli_says_a_bad_study_file_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(STUDY.read_text().replace("treatment: D\n", "treatment: Z\n", 1))
    assert main(["study", "--study", str(bad), "--report", "--filed", ""]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {bad}: contrasts[0].treatment: 'Z' is not an arm (F, D, G, S, B)\n"


def _make(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
    """`make <args>` through a stand-in `sparring` that writes down its arguments."""
    venv, calls = stand_in_venv(tmp_path)
    done = subprocess.run(
        ["make", "--no-print-directory", *args, f"VENV={venv}"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    lines = calls.read_text().splitlines() if calls.exists() else []
    return done, [json.loads(line) for line in lines]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_study_takes_the_study_file_by_name(tmp_path):
    done, calls = _make(tmp_path, "study")
    assert done.returncode != 0 and calls == []
    assert "give STUDY=<name> of configs/study/<name>.yaml" in done.stderr
    assert "2026-12-02" in done.stderr  # the studies there are named
    done, calls = _make(tmp_path, "study", "STUDY=2026-12-02", "STUDY_FLAGS=--report")
    assert done.returncode == 0, done.stderr
    assert calls == [["study", "--study", "configs/study/2026-12-02.yaml", "--report"]]


def test_every_run_records_its_study_arm_and_the_planned_contrasts():
    """What the LEARN pairing lines read to pair a study's runs only by a planned contrast
    (sparring.evaluation.study_pairs): the runner sets them on every run, quoted so that a study
    named by its date stays text, and neither an arm nor --set may move them."""
    import doctest

    from sparring.config import checks, load_config
    from sparring.evaluation import study_pairs

    design = load_design(STUDY)
    cfg = load_config(design.base, list(design.overrides("D", 2)))
    assert (cfg.tracking.study, cfg.tracking.arm) == ("2026-12-02", "D")
    assert cfg.tracking.contrasts == "D-F,S-G,G-F,D-S,D-B"
    with pytest.raises(ConfigError, match=r"the study sets tracking\.arm"):
        design.overrides("D", 1, ["tracking.arm=B"])
    with pytest.raises(ConfigError, match=r"tracking\.arm: 'D' without tracking\.study"):
        load_config(design.base, ["tracking.arm=D"])
    with pytest.raises(ConfigError, match=r"tracking\.contrasts: 'D_F' is not treatment-control"):
        load_config(design.base, ["tracking.study=s", "tracking.arm=D", "tracking.contrasts=D_F"])
    assert doctest.testmod(study_pairs).failed == 0
    assert doctest.testmod(checks).failed == 0


SELECTION = ROOT / "configs" / "study" / "2026-12-06-selection.yaml"


def test_a_study_compared_by_another_command_plans_no_contrast_and_says_so(tmp_path):
    """The selection study's runs are an answerer and writers, compared by `precheck select`:
    no contrast or measure between them, its runs say so (tracking.contrasts=none, so no LEARN
    line pairs two of them), and a study run naming no contrast by mistake still fails."""
    from sparring.config import load_config

    design = load_design(SELECTION)
    assert design.analysis and design.contrasts == () and design.measures == ()
    assert {a: design.arms[a].seeds or design.seeds for a in design.arms} == {
        "AG": (1,), "W": (1, 2, 3, 4),
    }  # fmt: skip
    cfg = load_config(design.base, list(design.overrides("W", 3)))
    assert (cfg.phase_schedule, cfg.rewards.generator, cfg.training_seed) == (
        "generator",
        "catch",
        3,
    )
    assert cfg.tracking.contrasts == "none"
    with pytest.raises(ConfigError, match=r"tracking\.contrasts: study s names no contrast"):
        load_config(design.base, ["tracking.study=s", "tracking.arm=D", "tracking.contrasts="])


def test_a_study_refuses_before_running_a_run_it_could_not_file(tmp_path):
    """No held-out samples, no heldout.json: the plan says so before hours of training."""
    design = load_design(SELECTION)
    with pytest.raises(SparringError, match=r"arm W \(selection-W-t1\): data\.val_samples is 0"):
        study_runner.plan(
            tmp_path, design, ["W"], [1], "code",
            lambda sets: study_runner.config_digest(design.base, sets), ["data.val_samples=0"],
        )  # fmt: skip


def test_runs_at_once_find_the_store_and_the_experiment_made(tmp_path, monkeypatch):
    """Two runs creating a fresh sqlite store together race on its migration (one died so on
    2026-12-06): the study makes the store and its experiment once before the runs start."""
    import mlflow

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    design = load_design(SELECTION)
    db = tmp_path / "mlflow.db"
    sets = [*design.overrides("W", 1), f"tracking.mlflow_uri=sqlite:///{db}"]
    first = study_runner.prepare_store(design.base, sets)
    assert db.is_file() and study_runner.prepare_store(design.base, sets) == first
    exp = mlflow.MlflowClient(f"sqlite:///{db}").get_experiment(first)
    assert exp.name == "sparring-study-selection"

"""Experiments are data: every shipped study file (configs/study/*.yaml) loads, and each of its
arms' runs loads on its base config; the experiments that were make targets (learn-control,
learn-given, learn-dense, learn-nobank, format-start, learn-arms, learn-search) are study files
marked historical, whose arms differ from their self-play arm only in the field each claims to
change, and the Makefile keeps none of those targets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparring.config import load_config
from sparring.experiments.study_design import RUNNER_FIELDS, load_design

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted((ROOT / "configs" / "study").glob("*.yaml"))
# the arms that were make targets: what each changes against the self-play arm S
CLAIMS = {
    "2026-11-29-canary-arms": {
        "S": set(),
        "C": {"rewards.answerer=format_only"},
        "G": {"phase_schedule=answerer"},
        "D": {"data.given_tests=100"},
        "N": {"rewards.answerer_bank=false"},
    },
    "2026-11-30-format-start": {
        "S": set(),
        "C": {"rewards.answerer=format_only"},
        "G": {"phase_schedule=answerer"},
        "D": {"data.given_tests=100"},
    },
}
# a start a study's runs need built first (its file says how): stood in for by the base model
BUILT_STARTS = {"2026-11-30-format-start": "models.answerer.name=smollm2-135m"}


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_every_study_file_loads_and_its_runs_load(path):
    design = load_design(path.relative_to(ROOT))
    assert design.name == path.stem, "a study's name is its file's"
    start = [BUILT_STARTS[design.name]] if design.name in BUILT_STARTS else []
    for arm in design.arms:
        seed = (design.arms[arm].seeds or design.seeds)[0]
        load_config(design.base, [*design.overrides(arm, seed), *start])


def test_the_old_make_targets_are_historical_study_files():
    for name in (*CLAIMS, "2026-11-26-search"):
        head = (ROOT / "configs" / "study" / f"{name}.yaml").read_text().splitlines()[0]
        assert head.startswith("# HISTORICAL:"), name
    makefile = (ROOT / "Makefile").read_text()
    gone = ("learn-control", "learn-given", "learn-dense", "learn-nobank", "format-start",
            "learn-arms", "learn-search")  # fmt: skip
    targets = set(re.findall(r"^([a-z-]+):", makefile, re.M))
    assert not targets & set(gone)
    assert {"learn", "study", "calibrate", "recur"} <= targets


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_the_arms_differ_only_in_what_they_claim(name):
    design = load_design(ROOT / "configs" / "study" / f"{name}.yaml")
    assert set(design.arms) == set(CLAIMS[name])
    shared = None
    for arm, claim in CLAIMS[name].items():
        sets = set(design.overrides(arm, 1)[len(RUNNER_FIELDS) :])  # the runner's come first
        assert claim <= sets, (arm, sets)
        rest = sets - claim
        shared = rest if shared is None else shared
        assert rest == shared, f"{arm} differs in {rest ^ shared}"
    assert shared == set(design.common)

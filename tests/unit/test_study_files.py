"""`make learn-arms` (issue 45): the arms' `sparring run` commands, read from `make -n`, differ
only in the field each arm claims to change and its run name, and all start from the
format-trained answerer `make format-start` builds."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from stand_in import stand_in_venv

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = {
    "learn": set(),
    "learn-given": {"phase_schedule=answerer"},
    "learn-dense": {"data.given_tests=100"},
    "learn-control": {"rewards.answerer=format_only"},
}


def _runs(tmp_path: Path, seeds: int) -> list[list[str]]:
    """Every `sparring` command `make learn-arms` runs, through a stand-in `sparring` that
    writes down its arguments."""
    venv, calls = stand_in_venv(tmp_path)
    subprocess.run(
        # a start of its own: one the checkout already built would not be built again
        ["make", "--no-print-directory", "learn-arms", f"SEEDS={seeds}", f"VENV={venv}",
         f"FORMAT_START_DIR={tmp_path / 'format-start'}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [json.loads(line) for line in calls.read_text().splitlines()]


def _sets(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_arms_differ_only_in_what_they_claim(tmp_path):
    calls = _runs(tmp_path, seeds=2)
    assert [c[:2] for c in calls[:2]] == [["phase", "materialize"], ["phase", "train-answerer"]]
    built = calls[1][calls[1].index("--workdir") + 1]
    assert "rewards.answerer=format_only" in _sets(calls[1])
    by_arm: dict[str, list[set[str]]] = {}
    for argv in calls[2:]:
        assert argv[0] == "run", argv
        sets = _sets(argv)
        name = next(s for s in sets if s.startswith("name="))
        arm = re.fullmatch(r"name=(learn(?:-\w+)?)-t\d", name).group(1)
        by_arm.setdefault(arm, []).append(set(sets) - {name})
    assert set(by_arm) == set(CLAIMS) and all(len(v) == 2 for v in by_arm.values())
    shared = None
    for arm, seeds in by_arm.items():
        for t, sets in enumerate(seeds, start=1):
            assert f"training_seed={t}" in sets, (arm, sets)
            assert CLAIMS[arm] <= sets, (arm, sets)
            rest = sets - CLAIMS[arm] - {f"training_seed={t}"}
            shared = rest if shared is None else shared
            assert rest == shared, f"{arm} differs in {rest ^ shared}"
    start = next(s for s in shared if s.startswith("models.answerer.name="))
    assert built == str(tmp_path / "format-start")
    assert start == f"models.answerer.name={built}/round-1/answerer"
    assert "data.families.levels=[2]" in shared

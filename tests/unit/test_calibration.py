"""Calibration summaries: the zone and the false-positive rate per family and level (pure)."""

from __future__ import annotations

import doctest

import pytest

from sparring.evaluation import calibration


def test_doctests():
    assert doctest.testmod(calibration).failed == 0


ROWS = [
    {"family": "f", "level": 0, "rewards": [1.0, 0.5], "strict": [1, 0], "false_positive": [1, 0]},
    {"family": "f", "level": 0, "rewards": [0.0, 0.0], "strict": [0, 0], "false_positive": [0, 0]},
    {"family": "g", "level": 0, "rewards": [1.0, 1.0], "strict": [1, 1], "false_positive": [1, 1]},
]


def test_the_false_positive_rate_is_the_share_of_flagged_samples_per_family_and_level():
    summary = calibration.summarize(ROWS)
    assert [s["false_positive_rate"] for s in summary] == [0.25, 1.0]
    # per level, weighted by samples: 3 of 6 flagged
    assert calibration.by_level(summary)[0]["false_positive_rate"] == pytest.approx(0.5)
    table = calibration.format_table(summary).splitlines()
    assert table[0].split()[-1] == "fp"
    assert table[1].split()[-1] == "0.250"
    assert "false_positive_rate=0.500" in table[3]


def test_without_a_false_positive_measure_the_table_has_no_fp_column():
    rows = [{k: v for k, v in r.items() if k != "false_positive"} for r in ROWS]
    summary = calibration.summarize(rows)
    assert all("false_positive_rate" not in s for s in summary)
    table = calibration.format_table(summary)
    assert " fp" not in table.splitlines()[0] and "false_positive_rate" not in table

"""Experiments on Sparring: what only the CLI and scripts use, never the library.

Modules: `study_design` (a study as a file, configs/study/<name>.yaml, checked), `study_runner`
(`sparring study`: plan, run and file a study's runs), `study` (a study's table and contrasts
from its filed runs), `seed_intervals` (intervals that resample whole seeds and tasks),
`sizing` (the seed spread and the smallest visible contrast) and `learn_diff` (`sparring rerun`:
a rerun's LEARN lines against the filed ones). Nothing under sparring outside the CLI imports
this package (tests/unit/test_layout.py holds it).
"""

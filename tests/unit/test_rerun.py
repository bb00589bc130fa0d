"""`sparring rerun` and its comparison: every LEARN measure of either side is reported, a changed
value or a missing line is a difference, and a record that cannot drive a rerun is one line."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
from pathlib import Path

from sparring.cli.rerun import filed_learn_path
from sparring.experiments import learn_diff

ROOT = Path(__file__).resolve().parents[2]
FILED = ROOT / "docs" / "results" / "study-S-t1-2026-12-02-learn.txt"


def test_doctests():
    assert doctest.testmod(learn_diff).failed == 0


def test_a_filed_run_compared_with_itself_has_no_difference():
    lines = learn_diff.learn_lines(FILED.read_text())
    assert len(lines) > 20 and "heldout_new_tasks" in lines
    report = learn_diff.report_lines(learn_diff.differences(lines, dict(lines)))
    assert report[-1] == f"RERUN 0 of {len(lines)} LEARN lines differ"


def test_the_issue_rerun_is_reported_line_by_line():
    """The rerun of issue 76 (study-S-t1 at 1133469): its bank and validity lines differ."""
    filed = learn_diff.learn_lines(FILED.read_text())
    rerun = dict(filed)
    rerun["bank"] = "size=22 inherited=0 new=22 retired=0"
    rerun["generator_validity"] = "base=0.438 final=0.381"
    del rerun["task_overlap"]
    rerun["new_measure"] = "1"
    report = learn_diff.report_lines(learn_diff.differences(filed, rerun))
    assert "RERUN differs bank: filed size=34 inherited=0 new=34 retired=0 | rerun size=22 " \
           "inherited=0 new=22 retired=0" in report  # fmt: skip
    assert "RERUN differs task_overlap: filed 0 | rerun (no line)" in report
    assert "RERUN differs new_measure: filed (no line) | rerun 1" in report
    assert "RERUN same heldout_new_tasks: base=0.227 final=0.387 ci95_delta=0.047,0.274 n=45" \
           in report  # fmt: skip
    assert report[-1] == f"RERUN 4 of {len(filed) + 1} LEARN lines differ"


def test_a_registry_version_is_not_a_difference_but_the_champion_is():
    """The W t3 rerun of 2026-12-07 registered into the filed run's store: version 5, not 3."""
    filed = {"champion": "promoted=yes version=3 (sparring-learn-writer)", "bank": "size=127"}
    rerun = {"champion": "promoted=yes version=5 (sparring-learn-writer)", "bank": "size=127"}
    report = learn_diff.report_lines(learn_diff.differences(filed, rerun))
    assert report[0] == ("RERUN same champion: promoted=yes version=3 (sparring-learn-writer) "
                         "(rerun: version=5, a registry counter, not compared)")  # fmt: skip
    assert report[-1] == "RERUN 0 of 2 LEARN lines differ"
    rerun["champion"] = "promoted=no (no promotable snapshot)"
    report = learn_diff.report_lines(learn_diff.differences(filed, rerun))
    assert report[-1] == "RERUN 1 of 2 LEARN lines differ"
    rerun["champion"] = "promoted=yes version=5 (sparring-learn)"
    assert learn_diff.report_lines(learn_diff.differences(filed, rerun))[-1].startswith("RERUN 1 ")
    other = {"bank": "size=3 version=1"}  # only the champion line's version is a counter
    assert learn_diff.differences(other, {"bank": "size=3 version=2"})[0].same is False


def test_the_filed_learn_lines_are_found_beside_the_record():
    record = ROOT / "docs" / "results" / "study-S-t1-2026-12-02-record.json"
    assert filed_learn_path(record) == FILED
    assert filed_learn_path(Path("local_outputs/study/x/record.json")).name == "learn.txt"


def _rerun(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "sparring.cli.main", "rerun", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_a_record_that_cannot_drive_a_rerun_is_one_line(tmp_path):
    not_json = tmp_path / "a-record.json"
    not_json.write_text("{")
    no_overrides = tmp_path / "b-record.json"
    no_overrides.write_text(json.dumps({"name": "b"}))
    no_learn = tmp_path / "c-record.json"
    no_learn.write_text(json.dumps({"overrides": ["name=c"]}))
    for path, words in [(not_json, "cannot read it as JSON"), (no_overrides, "no 'overrides'"),
                        (no_learn, "c-learn.txt")]:  # fmt: skip
        done = _rerun(str(path))
        assert done.returncode != 0 and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, done.stderr


def test_a_rerun_computes_with_the_filed_runs_torch_threads():
    """Completions depend on torch's thread count: the environment a rerun's processes get sets
    the filed run's, and torch started with it computes with that many; a record without the
    field leaves the environment as it is."""
    from sparring.backends import lineage

    env = lineage.threads_env({"PATH": "/bin"}, 1)
    assert env == {"PATH": "/bin", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert lineage.threads_env({"PATH": "/bin"}, None) == {"PATH": "/bin"}
    probe = "from sparring.backends import lineage; print(lineage.torch_threads())"
    for threads in (1, 2):
        child = lineage.threads_env(dict(os.environ), threads)
        done = subprocess.run([sys.executable, "-c", probe], env=child, capture_output=True,
                              text=True, timeout=120, check=True)  # fmt: skip
        assert done.stdout.strip() == str(threads)


def test_a_rerun_on_another_cpu_kind_is_warned_of():
    """The vector instruction set torch computes with can change samples as the thread count
    does: a record names it, and a rerun on another kind says so."""
    from sparring.backends import lineage

    assert doctest.testmod(lineage).failed == 0
    here = lineage.cpu_capability()
    assert here and here.isupper()
    assert lineage.cpu_warning(here, here) == ""
    assert "sampled completions may differ" in lineage.cpu_warning("SOME_OTHER_ISA", here)


def test_a_rerun_that_ran_elsewhere_is_compared_without_running(tmp_path):
    """`--compare LOG`: the LEARN lines of a rerun's saved output (a cluster's log, a copy
    started with the record's overrides) against the filed ones; nothing runs (it answers in
    seconds), and a missing log is one line."""
    record = ROOT / "docs" / "results" / "room-pilot-D-dev-t1-2026-12-04-record.json"
    filed = filed_learn_path(record)
    log = tmp_path / "rerun.log"
    log.write_text("[sparring] 12:00:00 progress\n" + filed.read_text())
    same = _rerun(str(record), "--compare", str(log))
    assert same.returncode == 0, same.stderr
    assert same.stdout.strip().splitlines()[-1] == "RERUN 0 of 27 LEARN lines differ"
    assert "rerun pilot-D3" not in same.stdout  # it did not start a run
    log.write_text(filed.read_text().replace("final=0.391", "final=0.400"))
    other = _rerun(str(record), "--compare", str(log))
    assert other.returncode == 1
    assert "RERUN differs heldout_new_tasks: filed base=0.098 final=0.391" in other.stdout
    missing = _rerun(str(record), "--compare", str(tmp_path / "none.log"))
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1 and "--compare" in missing.stderr

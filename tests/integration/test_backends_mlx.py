"""MLX backend on tiny-random: load + generate, a real GRPO update with LoRA, adapter round trip;
the shared policy-gradient step against a loss and gradient computed by hand with numpy.

Not skipped when mlx is missing on Linux/macOS: CI installs `mlx[cpu]` + `mlx-lm`, and a missing
install must fail here rather than pass silently.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

if sys.platform not in ("linux", "darwin"):
    pytest.skip("MLX runs on Linux and macOS only", allow_module_level=True)

from sparring.backends.mlx import generation as mlx_generation
from sparring.backends.mlx import grpo as mlx_grpo
from sparring.backends.mlx import models as mlx_models
from sparring.backends.mlx import step as mlx_step
from sparring.backends.torch.models import ModelError

MESSAGES = [
    [{"role": "user", "content": "Write a function add(a, b)."}],
    [{"role": "user", "content": "Reverse a string."}],
]
LORA = {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}


def _flat(model) -> dict:
    import numpy as np
    from mlx.utils import tree_flatten

    return {k: np.array(v) for k, v in tree_flatten(model.parameters())}


@pytest.fixture(scope="module")
def tiny():
    assert mlx_models.available(), "install mlx: pip install 'mlx[cpu]' mlx-lm"
    return mlx_models.load("tiny-random")


def test_generate_shape_and_greedy_determinism(tiny):
    model, tokenizer = tiny
    out = mlx_generation.generate(
        model, tokenizer, MESSAGES, max_new_tokens=6, temperature=1.0, num_samples=3, seed=1
    )
    assert len(out) == len(MESSAGES)
    assert all(len(group) == 3 and all(isinstance(t, str) for t in group) for group in out)
    greedy = [mlx_generation.generate(model, tokenizer, MESSAGES, max_new_tokens=6) for _ in "ab"]
    assert greedy[0] == greedy[1]
    assert all(len(group) == 1 for group in greedy[0])


def test_grpo_trains_lora_only_and_adapter_round_trips(tiny, tmp_path: Path):
    import numpy as np

    model, tokenizer = tiny
    before = _flat(model)
    rows = [{"prompt": m, "task_id": f"t{i}"} for i, m in enumerate(MESSAGES)]
    seen: dict = {}

    def prefer_short(prompts, completions, task_id, **kwargs):
        seen.update(n=len(completions), task_id=list(task_id), prompts=len(prompts))
        rewards = [-float(len(c[0]["content"])) for c in completions]
        rewards[-1] = None  # no signal: advantage 0, not in the group statistics
        return rewards

    history = mlx_grpo.train_grpo(
        model,
        tokenizer,
        rows,
        prefer_short,
        steps=2,
        num_generations=4,
        learning_rate=1e-2,
        epsilon=0.2,
        max_completion_length=8,
        temperature=1.0,
        seed=0,
        lora=LORA,
    )
    assert len(history) == 2
    keys = {"loss", "reward_mean", "reward_std", "frac_reward_zero_std", "step_time_s"}
    for metrics in history:
        assert keys | {"completion_length"} <= set(metrics)
        assert all(np.isfinite(v) for v in metrics.values())
        assert 0 < metrics["completion_length"] <= 8
    assert seen["n"] == 4 and seen["prompts"] == 4 and len(set(seen["task_id"])) == 1

    after = _flat(model)
    lora = {k: v for k, v in after.items() if k.rsplit(".", 1)[-1] in ("lora_a", "lora_b")}
    assert len(lora) == 2 * 2 * len(model.layers)  # q and v, a and b, every block
    assert any(np.abs(v).sum() > 0 for k, v in lora.items() if k.endswith("lora_b"))
    base_after = {k.replace(".linear.", "."): v for k, v in after.items() if k not in lora}
    assert base_after.keys() == before.keys()
    assert all(np.array_equal(before[k], base_after[k]) for k in before), "base weights changed"

    want = mlx_generation.generate(model, tokenizer, MESSAGES, max_new_tokens=8)
    out = tmp_path / "answerer"
    mlx_models.save_adapter(model, str(out), {"base": "tiny-random", "role": "answerer"})
    meta = json.loads((out / "sparring_model.json").read_text())
    assert meta["backend"] == "mlx" and meta["base"] == "tiny-random"
    assert meta["adapter"] == "adapters.safetensors" and meta["role"] == "answerer"
    assert (out / "adapter_config.json").is_file() and (out / "tokenizer.json").is_file()

    loaded, loaded_tok = mlx_models.load(str(out))
    assert all(np.array_equal(lora[k], v) for k, v in _flat(loaded).items() if k in lora)
    assert mlx_generation.generate(loaded, loaded_tok, MESSAGES, max_new_tokens=8) == want


def _bigram():
    """A model whose next-token logits depend on the current token only (embedding -> linear),
    so the step's loss and gradient can be written down with numpy; only the head's bias trains."""
    import mlx.core as mx
    import mlx.nn as nn

    class Bigram(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(5, 3)
            self.head = nn.Linear(3, 5)

        def __call__(self, x):
            return self.head(self.embed(x))

    mx.random.seed(3)
    model = Bigram()
    model.freeze()
    model.head.unfreeze(keys=["bias"])
    return model


@pytest.mark.parametrize(
    ("loss_type", "want"),
    [("dapo", -(3 * 1.0 - 0.5) / 4), ("grpo", (-1.0 + 0.5) / 2), ("dr_grpo", -(3 - 0.5) / 8)],
)
def test_policy_step_matches_a_hand_computed_loss_and_gradient(loss_type, want):
    """Ratio 1, so each completion token contributes -A to the loss and -A * w * d log p / d theta
    to the gradient (w: its aggregation weight); one SGD update moves the bias by -lr * grad."""
    import mlx.optimizers as optim
    import numpy as np

    model = _bigram()
    embed, weight = np.array(model.embed.weight), np.array(model.head.weight)
    bias = np.array(model.head.bias)
    prompts, completions, adv = [[1, 2], [3]], [[4, 0, 2], [1]], [1.0, -0.5]
    temperature, max_len = 0.7, 4
    # (input token, target token, advantage, weight) per completion token, by hand
    weights = {"dapo": [1 / 4] * 4, "grpo": [1 / 6] * 3 + [1 / 2], "dr_grpo": [1 / 8] * 4}
    tokens = [(2, 4, 1.0), (4, 0, 1.0), (0, 2, 1.0), (3, 1, -0.5)]
    grad = np.zeros(5)
    for (x, y, a), w in zip(tokens, weights[loss_type], strict=True):
        z = (weight @ embed[x] + bias) / temperature
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        grad += -a * w * (np.eye(5)[y] - p) / temperature

    out = mlx_step.policy_step(
        model, optim.SGD(learning_rate=0.1), prompts, completions, adv, pad=0,
        temperature=temperature, epsilon=0.2, loss_type=loss_type, max_completion_length=max_len,
        max_grad_norm=100.0,
    )  # fmt: skip
    assert out["loss"] == pytest.approx(want, abs=1e-6)
    assert out["grad_norm"] == pytest.approx(float(np.linalg.norm(grad)), rel=1e-4)
    np.testing.assert_allclose(np.array(model.head.bias), bias - 0.1 * grad, atol=1e-6)
    np.testing.assert_array_equal(np.array(model.head.weight), weight)  # frozen stays


def test_policy_step_clips_the_norm_and_zero_advantage_moves_nothing():
    import mlx.optimizers as optim
    import numpy as np

    model = _bigram()
    bias = np.array(model.head.bias)
    args = ([[1, 2]], [[4, 0]])
    kw = {"pad": 0, "temperature": 1.0, "epsilon": 0.2, "max_completion_length": 2}
    flat = mlx_step.policy_step(model, optim.Adam(learning_rate=0.1), *args, [0.0], **kw)
    assert flat == {"loss": 0.0, "grad_norm": 0.0}
    np.testing.assert_array_equal(np.array(model.head.bias), bias)
    free = mlx_step.policy_step(_bigram(), optim.SGD(learning_rate=1.0), *args, [1.0], **kw)
    clipped = mlx_step.policy_step(
        model, optim.SGD(learning_rate=1.0), *args, [1.0], **kw, max_grad_norm=1e-3
    )
    assert free["grad_norm"] > 1e-3  # the norm before clipping is reported
    assert clipped["grad_norm"] == pytest.approx(free["grad_norm"])
    assert float(np.linalg.norm(np.array(model.head.bias) - bias)) == pytest.approx(1e-3, rel=1e-3)
    with pytest.raises(ValueError, match="loss_type"):
        mlx_step.policy_step(model, optim.SGD(learning_rate=1.0), *args, [1.0], **kw, loss_type="x")


def test_load_errors_name_the_fix(tmp_path: Path):
    with pytest.raises(ModelError, match="built-in name"):
        mlx_models.load(str(tmp_path / "missing"))
    (tmp_path / "sparring_model.json").write_text('{"base": "tiny-random", "tuning_mode": "lora"}')
    with pytest.raises(ModelError, match="PEFT"):
        mlx_models.load(str(tmp_path))


def test_phases_run_on_the_mlx_backend(tmp_path, monkeypatch):
    """A generator phase against the frozen base, validation, then an answerer phase, all with
    backend: mlx; artifacts are MLX adapters that evaluation and inference can sample from.

    The random model's tests all earn the same reward (a flat group: no gradient), so the
    generator's GRPO step gets scripted rewards, 1 and 0 in turn (its real reward function still
    runs, for the phase's metrics): a step that ran moves the LoRA B matrices off their zeros."""
    import math

    import mlx.core as mx

    from sparring.backends.sampler import load_answerer, sample_answers
    from sparring.config import load_config
    from sparring.phases.answerer import train_answerer
    from sparring.phases.generator import train_generator
    from sparring.phases.materialize import materialize
    from sparring.phases.validate import validate_tests
    from sparring.problems import read_jsonl

    root = Path(__file__).resolve().parents[2]
    cfg = load_config(
        root / "configs/smoke.yaml",
        ["backend=mlx", "data.max_problems=6", "data.humaneval_limit=1", "sandbox.workers=2"],
    )
    data = tmp_path / "data"
    materialize(cfg, str(data))
    real_train = mlx_grpo.train_grpo
    steps = []

    def scripted(model, tokenizer, rows, reward_fn, **kwargs):
        def rewards(**batch):
            real = list(reward_fn(**batch))
            return [float(i % 2 == 0) for i in range(len(real))]

        return real_train(model, tokenizer, rows, rewards, on_step=lambda i, m: steps.append(m),
                          **kwargs)  # fmt: skip

    monkeypatch.setattr(mlx_grpo, "train_grpo", scripted)
    gen, tests, frozen = tmp_path / "gen", tmp_path / "tests.jsonl", tmp_path / "frozen.jsonl"
    metrics = train_generator(cfg, 1, str(data), "", None, str(gen), str(tests), str(frozen))
    monkeypatch.undo()
    # one real step per configured step, with a signal (no flat group) and a finite loss
    assert len(steps) == metrics["steps"] == cfg.steps.generator >= 1, (steps, metrics)
    assert all(m["frac_reward_zero_std"] == 0.0 for m in steps), steps
    assert math.isfinite(metrics["mlx/loss"]), f"the GRPO loss is {metrics['mlx/loss']}"
    assert metrics["mlx/loss"] == sum(m["loss"] for m in steps) / len(steps)
    lora_b = {k: v for k, v in mx.load(str(gen / "adapters.safetensors")).items() if "lora_b" in k}
    assert lora_b and any(float(mx.abs(v).sum()) > 0 for v in lora_b.values()), (
        "the generator's GRPO step left its LoRA B matrices at zero: no update was applied"
    )
    assert json.loads((gen / "sparring_model.json").read_text())["backend"] == "mlx"
    bank = tmp_path / "bank.jsonl"
    validate_tests(cfg, 1, str(data), str(tests), str(frozen), str(data / "bank.jsonl"), str(bank))
    ans = tmp_path / "ans"
    train_answerer(cfg, 1, str(data), str(bank), None, str(ans))
    meta = json.loads((ans / "sparring_model.json").read_text())
    assert (meta["backend"], meta["role"], meta["base"]) == ("mlx", "answerer", "tiny-random")
    # the next round starts from the adapter, and evaluation samples from it
    train_answerer(cfg, 2, str(data), str(bank), str(ans), str(tmp_path / "ans2"))
    problems = read_jsonl(data / "val.jsonl")[:1]
    answerer = load_answerer(str(tmp_path / "ans2"))
    (completions,) = sample_answers(answerer, problems, max_new_tokens=8).texts
    assert len(completions) == 1 and isinstance(completions[0], str)


def test_engine_policy_trains_each_role_from_records_and_reloads(tmp_path):
    """The engine's records train MLX adapters too: a step moves only the trained role's LoRA,
    zero advantages move nothing, and saved adapters load back as the policy's starting point."""
    import numpy as np

    from sparring.backends.mlx.policy import MlxPolicy
    from sparring.config import load_config
    from sparring.engine.core import TrainingRecord

    cfg = load_config(overrides=["backend=mlx", "grpo.learning_rate=0.01"])
    policy = MlxPolicy(cfg, "tiny-random", ["solver", "critic"])
    records = [
        TrainingRecord("solver", MESSAGES[i % 2], text, adv)
        for i, (text, adv) in enumerate([("def add(a, b): return a + b", 1.0), ("no", -1.0)])
    ]
    before = {role: _flat(m) for role, m in policy.models.items()}
    metrics = policy.train(records)
    assert metrics["grad_norm/solver"] > 0 and policy.version == 1
    after = {role: _flat(m) for role, m in policy.models.items()}
    assert any(not np.array_equal(after["solver"][k], v) for k, v in before["solver"].items())
    assert all(np.array_equal(after["critic"][k], v) for k, v in before["critic"].items())
    flat = [TrainingRecord("solver", MESSAGES[0], "x", 0.0)]
    assert policy.train(flat)["grad_norm/solver"] == 0.0
    policy.save(str(tmp_path / "adapters"), {"game": "test"})
    again = MlxPolicy(cfg, "tiny-random", ["solver", "critic"], str(tmp_path / "adapters"))
    reloaded = _flat(again.models["solver"])
    for key, value in _flat(policy.models["solver"]).items():
        if key.endswith(("lora_a", "lora_b")):
            np.testing.assert_allclose(reloaded[key], value, rtol=1e-6)
    texts = again.sample(
        [MESSAGES[0]], adapter=None, temperature=0.0, top_p=1.0, max_tokens=4,
        stop_at_fence=False, seed=0,
    )  # fmt: skip
    assert len(texts) == 1

"""The one entry point (`sparring.cluster.entry`) in 1 and 2 real processes on the CPU.

Two processes are started by `torchrun --standalone` (gloo), the way a TrainJob node starts
them; each runs real GRPO steps on the tiny random model. The answerer's reward is the
completion's length (tests/integration/entry_length_reward.py): the real reward is 0 for a random
model, and identical zero-gradient replicas would prove nothing about keeping them in sync.

Covered: both ranks finish with bit-identical adapters that did learn, in the file layout a
single process writes; (slow) FSDP full fine-tuning over 2 processes saves the same full
weights as DDP; (slow) the generator phase samples the frozen answerer once across both
processes and writes every problem's row in order.
Not covered: NCCL/GPUs, several nodes (a TrainJob's job; its spec is checked in tests/deploy).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import sparring
from sparring.config import load_config
from tests.conftest import kill_group

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 420  # each run takes 15-40 s here
WRAPPER = Path(__file__).with_name("entry_length_reward.py")
TRAIN = [
    "--set", "grpo.mask_truncated_completions=false",  # tiny-random never ends a completion
    "--set", "grpo.learning_rate=0.05",
    "--set", "steps.answerer=2",
]  # fmt: skip


def _env() -> dict[str, str]:
    src = str(Path(sparring.__file__).resolve().parents[1])  # the tree this test imports
    path = os.pathsep.join(p for p in (src, str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return dict(
        os.environ, PYTHONPATH=path, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS="1",
    )  # fmt: skip


def run_entry(args: list[str], processes: int, log: Path, script: Path = WRAPPER) -> str:
    """Run the entry point in 1 process (python) or N (torchrun --standalone); its output."""
    if processes == 1:
        cmd = [sys.executable, str(script), *args]
    else:
        cmd = [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={processes}", str(script), *args,
        ]  # fmt: skip
    # Its own session, so a hang (ranks waiting on mismatched collectives) is killed whole and
    # reported with its output before pytest-timeout's 600 s, which would leave the ranks running.
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        text, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        text, _ = proc.communicate()
        log.write_text(text)
        pytest.fail(f"no exit after {RUN_TIMEOUT_S} s, killed; its output:\n{text[-4000:]}")
    log.write_text(text)
    assert proc.returncode == 0, text[-4000:]
    return text


def layout(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    from sparring.phases.materialize import materialize

    out = tmp_path_factory.mktemp("cluster") / "data"
    materialize(load_config(ROOT / "configs/smoke.yaml"), str(out))
    return out


def answerer_args(data_dir: Path, out: Path, work: Path, extra=()) -> list[str]:
    return [
        "train-answerer", "--config", "configs/smoke.yaml", *TRAIN, *extra,
        "--data", str(data_dir), "--bank", str(data_dir), "--out", str(out),
        "--workdir", str(work),
    ]  # fmt: skip


@pytest.mark.slow  # two torchrun processes (~35 s): CI's slow tier keeps make test under 15 min
def test_two_processes_train_identical_adapters_in_the_single_process_layout(data_dir, tmp_path):
    single, multi = tmp_path / "single", tmp_path / "multi"
    run_entry(answerer_args(data_dir, single, tmp_path / "w1"), 1, tmp_path / "single.log")
    text = run_entry(answerer_args(data_dir, multi, tmp_path / "w2"), 2, tmp_path / "multi.log")
    assert "done on 2 process(es), 1 node(s)" in text

    # the same files, the same record, the same metric names
    assert layout(multi) == layout(single)
    assert "model/adapter_model.safetensors" in layout(single)
    meta = [json.loads((d / "model/sparring_model.json").read_text()) for d in (single, multi)]
    assert meta[0] == meta[1]
    m1, m2 = (json.loads((d / "metrics.json").read_text()) for d in (single, multi))
    assert set(m1) == set(m2) and m1["world_size"] == 1 and m2["world_size"] == 2
    assert m2["steps"] == 2 and m2["nodes"] == 1
    ranks = json.loads((multi / "distributed.json").read_text())
    assert ranks["world_size"] == 2 and not ranks["sharded"]
    assert len(ranks["fingerprints"]) == 2 and len(set(ranks["fingerprints"])) == 1

    # rank 1 kept its own copy: tensor for tensor the same as rank 0's, and it learned
    rank0 = load_file(multi / "model/adapter_model.safetensors")
    rank1 = load_file(tmp_path / "w2/rank-1/out/model/adapter_model.safetensors")
    assert set(rank0) == set(rank1) and rank0
    for key, value in rank0.items():
        assert torch.equal(value, rank1[key]), key
    lora_b = [v for k, v in rank0.items() if "lora_B" in k]
    assert lora_b and any(v.abs().sum() > 0 for v in lora_b), "the adapter did not learn"
    # one progress line per step, from rank 0 only
    assert text.count("train step 2/2") == 1


@pytest.mark.slow
def test_fsdp_full_fine_tuning_saves_the_weights_ddp_trains(data_dir, tmp_path):
    """Sharded over 2 processes, the full weights gathered for saving equal DDP's replicas."""
    full = ["--set", "tuning_mode=full", "--set", "grpo.learning_rate=0.01"]
    outs = {}
    for strategy in ("ddp", "fsdp"):
        out = tmp_path / strategy
        extra = [*full, "--set", f"distributed.strategy={strategy}"]
        run_entry(
            answerer_args(data_dir, out, tmp_path / f"w-{strategy}", extra), 2,
            tmp_path / f"{strategy}.log",
        )  # fmt: skip
        outs[strategy] = out
    assert layout(outs["ddp"]) == layout(outs["fsdp"])
    report = json.loads((outs["fsdp"] / "distributed.json").read_text())
    assert report["sharded"] and report["strategy"] == "fsdp"
    ddp = load_file(outs["ddp"] / "model/model.safetensors")
    fsdp = load_file(outs["fsdp"] / "model/model.safetensors")
    assert set(ddp) == set(fsdp)
    from sparring.backends.torch.models import load_model

    base, _ = load_model("tiny-random")
    before = base.state_dict()
    moved = [k for k in ddp if k in before and not torch.equal(ddp[k], before[k])]
    assert len(moved) > len(ddp) // 2, "full fine-tuning moved too few tensors"
    for key in ddp:
        assert torch.allclose(ddp[key], fsdp[key], atol=1e-5), key


@pytest.mark.slow
def test_generator_samples_the_frozen_answerer_once_across_processes(data_dir, tmp_path):
    args = [
        "train-generator", "--config", "configs/smoke.yaml", *TRAIN,
        "--data", str(data_dir), "--frozen-answerer", "tiny-random",
    ]  # fmt: skip
    single, multi = tmp_path / "single", tmp_path / "multi"
    entry = Path(sparring.__file__).parent / "cluster" / "entry.py"
    run_entry([*args, "--out", str(single), "--workdir", str(tmp_path / "w1")], 1,
              tmp_path / "g1.log", entry)  # fmt: skip
    run_entry([*args, "--out", str(multi), "--workdir", str(tmp_path / "w2")], 2,
              tmp_path / "g2.log", entry)  # fmt: skip
    assert layout(multi) == layout(single)
    rows = [
        [json.loads(line) for line in (d / "frozen_solutions.jsonl").read_text().splitlines()]
        for d in (single, multi, tmp_path / "w2/rank-1/out")
    ]
    cfg = load_config(ROOT / "configs/smoke.yaml")
    ids = [r["problem_id"] for r in rows[0]]
    assert len(ids) == cfg.steps.problems_per_phase
    assert [r["problem_id"] for r in rows[1]] == ids  # every problem, in the phase's order
    assert all(len(r["solutions"]) == cfg.steps.frozen_samples for r in rows[1])
    assert rows[2] == rows[1]  # rank 1 holds the very rows rank 0 wrote (sampled once)
    tests = [json.loads(line) for line in (multi / "tests.jsonl").read_text().splitlines()]
    assert [t["problem_id"] for t in tests] == ids

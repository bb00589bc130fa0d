"""Model helpers that need no weights: device/dtype choice, LoRA config, error messages."""

import os

import pytest

from sparring.backends.torch import models
from sparring.config import from_dict


def test_resolve_device_and_dtype():
    import torch

    dev = models.resolve_device("auto")
    assert dev in ("cpu", "cuda", "mps")
    assert models.resolve_device("cpu") == "cpu"
    assert models.resolve_dtype("auto", "cpu") is torch.float32
    assert models.resolve_dtype("bfloat16", "cpu") is torch.bfloat16
    with pytest.raises(models.ModelError):
        models.resolve_device("tpu")


def test_lora_config_from_cfg():
    cfg = from_dict({"lora": {"r": 4, "alpha": 8, "target_modules": ["q_proj"]}})
    lc = models.peft_lora_config(cfg.lora)
    assert lc.r == 4 and lc.lora_alpha == 8 and set(lc.target_modules) == {"q_proj"}


def test_missing_folder_and_offline_hub_id_are_one_line_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(models.ModelError, match="no such folder"):
        models.load_model(str(tmp_path / "nope"))
    with pytest.raises(models.ModelError, match="nobody/no-such-model") as exc:
        models.load_model("nobody/no-such-model")
    assert "\n" not in str(exc.value)


def test_cache_dir_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARRING_CACHE", str(tmp_path))
    assert models.cache_dir() == tmp_path / "models"
    assert os.fspath(models.cache_dir()).startswith(str(tmp_path))


def test_fit_prompts_drops_rows_longer_than_the_limit():
    from datasets import Dataset

    from sparring.backends.torch.grpo import fit_prompts
    from sparring.backends.torch.models import load_model

    _, tok = load_model("tiny-random")
    short = [{"role": "user", "content": "add"}]
    long = [{"role": "user", "content": "word " * 400}]
    data = Dataset.from_list([{"prompt": short, "id": 1}, {"prompt": long, "id": 2}])
    kept, dropped = fit_prompts(data, tok, 64)
    assert dropped == 1 and kept["id"] == [1]
    kept, dropped = fit_prompts(data, tok, 4096)
    assert dropped == 0 and len(kept) == 2


def test_sampling_with_the_lora_merged_matches_and_leaves_the_weights_as_they_were():
    import torch
    from peft import LoraConfig, get_peft_model

    from sparring.backends.torch.generation import FenceStop, decode

    base, tok = models.load_model("tiny-random")
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"])
    model = get_peft_model(base, lora)
    torch.manual_seed(0)
    for name, param in model.named_parameters():
        if "lora_B" in name:  # a fresh adapter adds nothing: make it count
            torch.nn.init.normal_(param, std=0.5)
    model.eval()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    prompts = [tok("def f(x):")["input_ids"], tok("Write code")["input_ids"]]

    def greedy() -> list[list[int]]:
        stop = FenceStop(tok, eos_token_ids=[tok.eos_token_id])
        stop.start(len(prompts))
        with torch.inference_mode():
            return decode(model, prompts, max_new_tokens=12, batch_size=2, temperature=0.0,
                          top_p=1.0, stop=stop, pad_token_id=tok.pad_token_id)  # fmt: skip

    unmerged = greedy()
    with models.lora_merged(model) as merged:
        assert merged
        layer = model.base_model.model.model.layers[0].self_attn.q_proj
        assert layer.merged  # the decode below runs on the folded weights
        assert greedy() == unmerged
    after = dict(model.named_parameters())
    changed = [n for n, w in before.items() if not torch.equal(w, after[n])]
    assert changed == []  # bit for bit: unmerging alone leaves rounding drift
    assert not any(m.merged for m in model.modules() if hasattr(m, "merged"))

    with pytest.raises(RuntimeError), models.lora_merged(model):
        raise RuntimeError("a failed decode")
    assert all(torch.equal(w, after[n]) for n, w in before.items())  # restored on errors too
    with models.lora_merged(base.model) as merged:  # no adapter there: nothing to do
        assert not merged

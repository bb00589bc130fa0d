"""The completion cache's key: what makes two sampling calls the same (sparring.evaluation.
completion_cache). A key that misses a cause of different answers serves stale ones to every
later run, silently: the weights under an adapter, and the decoding code itself."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from sparring.evaluation import completion_cache as cc

PACKAGE = Path(cc.__file__).resolve().parents[1]


def _touch(path: Path, data: bytes, mtime_ns: int) -> None:
    path.write_bytes(data)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def test_an_adapter_over_other_base_weights_is_another_model(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    _touch(base / "model.safetensors", b"base weights", 10**18)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    _touch(adapter / "adapter_model.safetensors", b"lora", 10**18)
    meta = {"base": str(base), "tuning_mode": "lora"}
    (adapter / "sparring_model.json").write_text(json.dumps(meta))
    os.utime(adapter / "sparring_model.json", ns=(10**18, 10**18))
    before = cc.model_identity(str(adapter))
    assert cc.model_identity(str(adapter)) == before  # stable while nothing changes
    _touch(base / "model.safetensors", b"BASE weights", 10**18 + 1)  # rebuilt base, same path
    assert cc.model_identity(str(adapter)) != before


def test_a_folder_is_its_contents_wherever_it_lies(tmp_path):
    """The final snapshot of run 1 and the champion version run 2 downloads are the same bytes
    at two paths and other modification times: one model, so run 2's measure against its start
    reads run 1's sampled answers. One byte of the weights changed: another model."""
    snapshot = tmp_path / "run1" / "snapshot"
    snapshot.mkdir(parents=True)
    _touch(snapshot / "adapter_model.safetensors", b"lora weights", 10**18)
    (snapshot / "sparring_model.json").write_text(json.dumps({"base": "tiny-random"}))
    champion = tmp_path / "download" / "champion"
    shutil.copytree(snapshot, champion)
    os.utime(champion / "adapter_model.safetensors", ns=(2 * 10**18, 2 * 10**18))
    assert cc.model_identity(str(champion)) == cc.model_identity(str(snapshot))
    _touch(champion / "adapter_model.safetensors", b"lora weightz", 10**18)
    assert cc.model_identity(str(champion)) != cc.model_identity(str(snapshot))


def test_a_change_to_the_decoding_code_is_a_new_key(tmp_path, monkeypatch):
    for rel in cc.DECODER_MODULES:
        assert (PACKAGE / rel).is_file(), f"{rel}: listed as decoding code, not in the package"
    copy = tmp_path / "sparring"
    for rel in cc.DECODER_MODULES:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PACKAGE / rel, copy / rel)
    assert cc.decoder_digest(copy) == cc.decoder_digest()
    slot = copy / "backends/torch/slot_decoder.py"
    slot.write_text(slot.read_text() + "\n# one line more\n")
    assert cc.decoder_digest(copy) != cc.decoder_digest()

    key = cc.call_key("m", [[{"role": "user", "content": "hi"}]], {"seed": 0})
    monkeypatch.setattr(cc, "decoder_digest", lambda root=None: "another decoder")
    assert cc.call_key("m", [[{"role": "user", "content": "hi"}]], {"seed": 0}) != key


def test_every_decoder_module_of_a_backend_is_listed():
    """A new decoding module must join DECODER_MODULES, or its changes would not miss."""
    for backend in ("torch", "mlx"):
        for path in (PACKAGE / "backends" / backend).glob("*.py"):
            if path.name.startswith("grpo"):
                continue  # the trainer's rollouts and sampling order: training, not a cached call
            if any(word in path.name for word in ("generat", "decod", "sampl")):
                assert f"backends/{backend}/{path.name}" in cc.DECODER_MODULES, path.name

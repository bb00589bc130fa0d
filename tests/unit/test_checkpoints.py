"""Checkpoint writing, the completion marker, latest and best selection (files only, fast)."""

import json

import pytest

from sparring.plain_runner import checkpoints as ck


def write(root, name, index, reward=None, validity=None, model_dir=None):
    meta = {"phase_index": index, "answerer_reward": reward, "test_validity": validity}
    return ck.write_checkpoint(root, name, meta, {"answerer": model_dir, "generator": None}, None)


def test_write_and_load(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "w.bin").write_bytes(b"123")
    c = write(tmp_path / "ck", "r01-p01-generator", 1, 0.5, 0.5, str(model))
    assert (c.path / ck.MARKER).is_file()
    assert (c.path / "answerer" / "w.bin").read_bytes() == b"123"
    assert c.model("answerer") == str(c.path / "answerer") and c.model("generator") is None
    assert c.bank.read_text() == ""
    loaded = ck.load_checkpoint(c.path)
    assert loaded.meta["phase_index"] == 1 and "time" in loaded.meta
    assert not [p for p in (tmp_path / "ck").iterdir() if p.name.startswith(".")]


def test_incomplete_checkpoint_is_ignored(tmp_path):
    root = tmp_path / "ck"
    write(root, "r00-p00-materialize", 0)
    broken = root / "r01-p01-generator"
    broken.mkdir()
    (broken / "checkpoint.json").write_text(json.dumps({"phase_index": 1}))
    assert [c.index for c in ck.list_checkpoints(root)] == [0]
    assert ck.latest(root).index == 0
    with pytest.raises(ck.CheckpointError, match="incomplete"):
        ck.load_checkpoint(broken)


def test_best_by_checkpoint_score(tmp_path):
    root = tmp_path / "ck"
    write(root, "a", 0)
    write(root, "b", 1, reward=0.9, validity=0.0)  # 0.63
    write(root, "c", 2, reward=0.5, validity=1.0)  # 0.65
    best = ck.select_best(ck.list_checkpoints(root))
    assert best.path.name == "c"
    only_reward = {"answerer_reward": 1.0, "test_validity": 0.0}
    assert ck.select_best(ck.list_checkpoints(root), only_reward).path.name == "b"
    assert ck.select_best([]) is None


def test_atomic_dir_leaves_the_old_folder_when_the_block_fails(tmp_path):
    from sparring.storage import atomic_dir

    out = tmp_path / "model"
    with atomic_dir(out) as tmp:
        (tmp / "weights").write_text("v1")
    try:
        with atomic_dir(out) as tmp:
            (tmp / "weights").write_text("half")
            raise RuntimeError("crash mid-write")
    except RuntimeError:
        pass
    assert (out / "weights").read_text() == "v1"
    assert [p.name for p in tmp_path.iterdir()] == ["model"], "no temp folder left behind"


def test_atomic_dir_swaps_a_folder_in_whole(tmp_path):
    """Replacing an existing folder is one exchange: the new version is complete and no old
    file survives in it."""
    from sparring.storage import atomic_dir

    out = tmp_path / "ckpt"
    with atomic_dir(out) as tmp:
        (tmp / "old-only").write_text("1")
        (tmp / "COMPLETE").write_text("v1")
    with atomic_dir(out) as tmp:
        (tmp / "COMPLETE").write_text("v2")
    assert sorted(p.name for p in out.iterdir()) == ["COMPLETE"]
    assert (out / "COMPLETE").read_text() == "v2"
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]


def test_leftovers_of_a_killed_writer_are_swept(tmp_path):
    (tmp_path / ".r01-p01-generator-abc123").mkdir(parents=True)
    (tmp_path / ".r01-p01-generator-abc123" / "checkpoint.json").write_text("{")
    c = ck.write_checkpoint(tmp_path, "r01-p01-generator", {"phase_index": 1}, {}, None)
    assert ck.is_complete(c.path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r01-p01-generator"]


def test_mirror_reads_only_finished_uploads(tmp_path):
    """`latest_remote` skips a mirrored checkpoint whose manifest never landed."""
    from sparring import storage

    root, mirror = tmp_path / "ck", str(tmp_path / "mirror")
    first = ck.write_checkpoint(root, "r01-p01-generator", {"phase_index": 1}, {}, None)
    second = ck.write_checkpoint(root, "r01-p02-validate", {"phase_index": 2}, {}, None)
    ck.upload(first, mirror)
    ck.upload(second, mirror)
    (tmp_path / "mirror" / "checkpoints" / "r01-p02-validate" / storage.MANIFEST).unlink()
    uri, meta = ck.latest_remote(mirror)
    assert uri.endswith("r01-p01-generator") and meta["phase_index"] == 1
    got = ck.download(uri, tmp_path / "restored")
    assert got.index == 1 and ck.is_complete(got.path)


def test_a_writers_finished_temp_copy_is_not_a_checkpoint(tmp_path):
    """A writer killed after writing COMPLETE into its temporary folder but before renaming it
    into place leaves a complete-looking hidden folder; resuming from it would skip a phase
    (found by the faults tier's SIGKILL test)."""
    ck.write_checkpoint(tmp_path, "r00-p00-materialize", {"phase_index": 0}, {}, None)
    hidden = tmp_path / ".r01-p01-generator-x1"
    ck.write_checkpoint(tmp_path, "x", {"phase_index": 1}, {}, None).path.rename(hidden)
    assert ck.is_complete(hidden)
    assert [c.index for c in ck.list_checkpoints(tmp_path)] == [0]
    assert ck.latest(tmp_path).path.name == "r00-p00-materialize"

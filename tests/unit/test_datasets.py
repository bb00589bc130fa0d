"""sparring.problems.datasets: the materialized problem files as MLflow datasets (name, digest,
source)."""

from __future__ import annotations

import json

from sparring.config import load_config
from sparring.problems import datasets


def test_sources_say_where_problems_came_from(tmp_path):
    s3 = datasets.source_of(["s3://bucket/problems.jsonl"])
    assert s3._get_source_type() == "s3" and json.loads(s3.to_json())["uri"].startswith("s3://")
    local = datasets.source_of([str(tmp_path / "mine.jsonl")])
    assert local._get_source_type() == "local"
    assert json.loads(local.to_json())["uri"] == str(tmp_path / "mine.jsonl")
    mixed = datasets.source_of(["bundled", "s3://bucket/more.jsonl"])
    assert mixed._get_source_type() == "code"
    assert "bundled,s3://bucket/more.jsonl" in mixed.to_json()


def test_inputs_name_digest_and_context(tmp_path):
    cfg = load_config("configs/smoke.yaml")
    (tmp_path / "train.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n')
    (tmp_path / "eval.jsonl").write_text('{"id": "h"}\n')
    found = {i.dataset.name: i for i in datasets.inputs(cfg, tmp_path)}
    assert set(found) == {"train", "humaneval"}  # no val.jsonl: no held-out dataset
    train = found["train"]
    assert json.loads(train.dataset.profile) == {"num_rows": 2}
    assert [(t.key, t.value) for t in train.tags] == [("mlflow.data.context", "training")]
    assert train.dataset.digest == datasets.digest(tmp_path / "train.jsonl")
    (tmp_path / "train.jsonl").write_text('{"id": "a"}\n')  # other problems: another digest
    again = datasets.inputs(cfg, tmp_path, datasets.TRAINING)
    assert [i.dataset.name for i in again] == ["train"]
    assert again[0].dataset.digest != train.dataset.digest

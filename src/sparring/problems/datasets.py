"""The problem sets of a run as MLflow datasets: what a run trained on and was measured on.

Covers: `problem_datasets` (the training, held-out and evaluation (HumanEval) problem files that
materialize wrote, each as an `mlflow.entities.Dataset`: a stable name, a digest of the file's
content, the source it was loaded from (bundled, a file or folder, `s3://`) and its row count)
and `inputs` (those datasets as run inputs tagged with MLflow's context: training or
evaluation). The Dataset column of MLflow's runs table shows them; two runs with the same digest
saw the same problems.

Does not cover: logging them (sparring.tracking.buffer.PhaseRun.log_inputs, buffered through an
outage) or loading problems (sparring.problems).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

# name -> (file materialize writes, MLflow context). The names are the same in every run, so
# the runs table compares like with like; the digest says whether the content differed.
SETS = {
    "train": ("train.jsonl", "training"),
    "held-out": ("val.jsonl", "evaluation"),
    "eval": ("eval.jsonl", "evaluation"),
}
TRAINING = ("train",)
EVALUATION = ("held-out", "eval")
SETS_ALL = tuple(SETS)


def digest(path: Path) -> str:
    """The first 16 hex digits of the file's SHA-256 (MLflow shows digests short)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _registered_source(source_type: str) -> Any:
    """MLflow's dataset source class of a type ("s3", "local"): MLflow builds its artifact
    sources at import time, one per artifact scheme, so they are found, not imported."""
    from mlflow.data.dataset_source_registry import get_registered_sources

    return next(s for s in get_registered_sources() if s._get_source_type() == source_type)


def source_of(uris: list[str]) -> Any:
    """An MLflow dataset source for where problems came from: one `s3://` URI or one local
    path as MLflow's S3/local artifact sources; `bundled`, `humaneval` and mixes as a code
    source naming them (they ship inside installed packages, not at a URI a reader can open)."""
    from mlflow.data.code_dataset_source import CodeDatasetSource

    if len(uris) == 1 and uris[0].startswith("s3://"):
        return _registered_source("s3")(uris[0])
    if len(uris) == 1 and uris[0] not in ("bundled", "humaneval"):
        return _registered_source("local")(str(Path(uris[0]).expanduser().resolve()))
    return CodeDatasetSource({"sparring.sources": ",".join(uris)})


def _name(cfg: Any, key: str) -> str:
    """The eval set is named for what it is: `humaneval`, else `eval`."""
    return "humaneval" if key == "eval" and cfg.data.eval == "humaneval" else key


def problem_datasets(cfg: Any, data_dir: str | Path) -> dict[str, Any]:
    """{set key: mlflow.entities.Dataset} for the problem files present in `data_dir`."""
    from mlflow.entities import Dataset

    out = {}
    for key, (filename, _) in SETS.items():
        path = Path(data_dir) / filename
        if not path.is_file():
            continue
        uris = list(cfg.data.train) if key != "eval" else [cfg.data.eval]
        source = source_of(uris)
        rows = sum(1 for line in path.read_text().splitlines() if line.strip())
        out[key] = Dataset(
            name=_name(cfg, key),
            digest=digest(path),
            source_type=source._get_source_type(),
            source=source.to_json(),
            profile=json.dumps({"num_rows": rows}),
        )
    return out


def inputs(cfg: Any, data_dir: str | Path, keys: tuple[str, ...] = SETS_ALL) -> list[Any]:
    """The `keys` problem sets of `data_dir` as MLflow run inputs with their context tag."""
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    found = problem_datasets(cfg, data_dir)
    return [
        DatasetInput(found[k], tags=[InputTag(MLFLOW_DATASET_CONTEXT, SETS[k][1])])
        for k in keys
        if k in found
    ]

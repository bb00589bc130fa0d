"""What a KFP training component does when its phase runs as a TrainJob.

`run_phase` stages the resolved config in S3 beside the task's output artifact, creates the
TrainJob (`sparring.cluster.trainjob.trainjob_spec`; an existing one of the same name, from an
earlier attempt of this task, is waited for instead), waits for it (`sparring.cluster.wait`),
streaming its state and rank 0's log into the task's log and into the phase's MLflow run (tags
`sparring.trainjob*`, the log as the artifact `trainjob/<name>.log`), then copies the outputs
(`model/`, the generator's files) from S3 into the task's local output paths, where the KFP
launcher uploads them as usual, and returns the phase's metrics (`metrics.json`).
A failed or timed-out TrainJob raises with its reason, which fails the task.

Does not cover: the training (`sparring.cluster.entry`), the spec (`.trainjob`).
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparring import storage
from sparring.cluster.kube import KubeClient, KubeError, pod_namespace
from sparring.cluster.trainjob import (
    METRICS_FILE,
    PHASE_OUTPUTS,
    TrainJobState,
    entry_args,
    job_timeout_s,
    staging_uri,
    trainjob_name,
    trainjob_spec,
)
from sparring.cluster.wait import wait_for_trainjob
from sparring.config import Config, dump_yaml
from sparring.errors import SparringError

LOG_LINES_KEPT = 20000  # the tail of rank 0's log kept for MLflow


def _active_run_id() -> str:
    try:
        import mlflow
    except ImportError:  # pragma: no cover
        return ""
    run = mlflow.active_run()
    return run.info.run_id if run else ""


def _tag(key: str, value: str) -> None:
    if _active_run_id():
        import mlflow

        mlflow.set_tag(key, value[:5000])


def create_or_adopt(client: KubeClient, namespace: str, obj: dict[str, Any]) -> bool:
    """Create the TrainJob; True if created, False if one of that name already exists (an
    earlier attempt of the same task: it is waited for, not duplicated)."""
    try:
        client.create_trainjob(namespace, obj)
        return True
    except KubeError as exc:
        if exc.status == 409:
            return False
        raise


def fetch_outputs(phase: str, out_uri: str, outputs: dict[str, str]) -> None:
    """Copy each output of the phase from the TrainJob's prefix to the task's local path. The
    entry uploads its whole output folder with one manifest, so the folder is read (and
    checked) as a whole: a TrainJob killed mid-upload is never taken for a finished one."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "out"
        storage.download_dir(out_uri, local)
        for name in PHASE_OUTPUTS[phase]:
            src, dst = local / name, Path(outputs[name])
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True)
            else:
                shutil.copyfile(src, dst)


def run_phase(
    cfg: Config,
    phase: str,
    round_index: int,
    *,
    inputs: dict[str, str],
    outputs: dict[str, str],
    output_uri: str,
    phase_name: str = "",
    client: KubeClient | None = None,
    namespace: str = "",
    say: Callable[[str], Any] = print,
) -> dict[str, Any]:
    """Run `phase` of round `round_index` as a TrainJob; returns its metrics (see module doc).

    `inputs`: artifact URIs by input name; `outputs`: local paths by output name
    (`PHASE_OUTPUTS`); `output_uri`: the URI of the task's first output artifact; `phase_name`:
    the phase's `Phase.name` (its steps and seeds), "" for the phase function's default."""
    staging = staging_uri(output_uri)
    config_uri, out_uri = f"{staging}/config.yaml", f"{staging}/out"
    storage.write_text(config_uri, dump_yaml(cfg))
    name = trainjob_name(phase, round_index, staging)
    client = client or KubeClient.in_cluster()
    namespace = namespace or pod_namespace(cfg.kubernetes.namespace)
    args = entry_args(
        phase, config_uri=config_uri, round_index=round_index, inputs=inputs, out_uri=out_uri,
        phase_name=phase_name, mlflow_run_id=_active_run_id(),
    )  # fmt: skip
    obj = trainjob_spec(
        cfg, name=name, namespace=namespace, phase=phase, round_index=round_index, args=args,
        annotations={"sparring.io/staging": staging},
    )  # fmt: skip
    where = f"{namespace}/{name}"
    tr = cfg.kubernetes.trainer
    created = create_or_adopt(client, namespace, obj)
    say(
        f"TrainJob {where}: {'created' if created else 'exists already; waiting for it'} "
        f"({tr.nodes} nodes x {obj['spec']['trainer']['numProcPerNode']} processes, "
        f"runtime {tr.runtime})"
    )
    _tag("sparring.trainjob", where)
    lines: collections.deque[str] = collections.deque(maxlen=LOG_LINES_KEPT)

    def on_state(state: TrainJobState) -> None:
        say(f"TrainJob {where}: {state.line()}")
        _tag("sparring.trainjob.state", state.phase)
        if state.reason:
            _tag("sparring.trainjob.reason", state.line())

    def on_log(line: str) -> None:
        say(f"[{name}] {line}")
        lines.append(line)

    try:
        wait_for_trainjob(
            client, namespace, name, timeout_s=job_timeout_s(cfg), poll_s=tr.poll_s,
            on_state=on_state, on_log=on_log,
        )  # fmt: skip
    except SparringError as exc:
        _tag("sparring.trainjob.error", str(exc))
        raise
    finally:
        if lines and _active_run_id():
            import mlflow

            mlflow.log_text("\n".join(lines) + "\n", f"trainjob/{name}.log")
    fetch_outputs(phase, out_uri, outputs)
    return json.loads(storage.read_text(f"{out_uri}/{METRICS_FILE}"))

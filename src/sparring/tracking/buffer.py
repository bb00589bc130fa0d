"""The connection to MLflow that survives an outage: the tracking URI, and `PhaseRun`, a phase's
child run fed from a buffer.

Covers: `tracking_uri` (`MLFLOW_TRACKING_URI` wins over `tracking.mlflow_uri`; relative
`sqlite:///` paths are made absolute so every KFP task process sees the same database),
`connect` (MLflow pointed at it, failing fast so Sparring's own deadline counts), `metric_name`,
`ensure_experiment` (get or create, tagged as a fine-tuning experiment), and `PhaseRun`: metric
values, files, params and tags, dataset inputs and metrics for the parent run queued in memory
and sent (metrics with the time they were logged) whenever MLflow answers (the run is created
then if it could not be at the start); at the phase's end it waits up to
`SPARRING_MLFLOW_WAIT_SECONDS` and names what was not logged.

Does not cover: opening and closing phases (sparring.tracking.phase_run), the parent run and the
registry (sparring.tracking), the retry rules (sparring.tracking.retry); values lost when the
process itself dies while MLflow is down (the buffer lives in memory).
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path
from typing import Any

from sparring.tracking import retry

log = logging.getLogger(__name__)


def tracking_uri(cfg) -> str:
    """MLFLOW_TRACKING_URI if set, else `tracking.mlflow_uri` (relative sqlite paths: absolute)."""
    uri = os.environ.get("MLFLOW_TRACKING_URI") or cfg.tracking.mlflow_uri or "sqlite:///mlflow.db"
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        uri = prefix + str(Path(uri[len(prefix) :]).resolve())
    return uri


def connect(cfg):
    """MLflow pointed at the tracking URI of `cfg`, its HTTP client set to fail fast."""
    import mlflow

    retry.quick_failures()
    mlflow.set_tracking_uri(tracking_uri(cfg))
    return mlflow


EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
# Sparring fine-tunes pretrained code LLMs (GRPO, LoRA or full): "finetuning" names that. Any
# training kind makes MLflow 3.17's UI open the experiment on its runs table instead of the
# GenAI tracing overview it shows an experiment without the tag.
EXPERIMENT_KIND = "finetuning"


def ensure_experiment(client: Any, name: str) -> str:
    """The id of the experiment `name`, created if missing, tagged as a fine-tuning experiment
    (also when an older Sparring created it untagged). One attempt: callers retry."""
    exp = client.get_experiment_by_name(name)
    if exp is None:
        return client.create_experiment(name, tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND})
    if not exp.tags.get(EXPERIMENT_KIND_TAG):  # a user's own choice of kind is kept
        client.set_experiment_tag(exp.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    return exp.experiment_id


def metric_name(key: str) -> str:
    """An MLflow-legal metric name: `pass@1` -> `pass_at_1`; other odd characters -> `_`."""
    key = str(key).replace("@", "_at_")
    return re.sub(r"[^A-Za-z0-9_\-. :/]", "_", key)


def numeric(metrics: dict[str, Any]) -> dict[str, float]:
    return {
        metric_name(k): float(v)
        for k, v in (metrics or {}).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


class PhaseRun:
    """The child run `r{round}-{name}` of one phase, fed from a buffer.

    `log(metrics)` logs the numeric entries and keeps them for the line printed when the phase
    is done; `log_metrics` and `log_artifact` queue values and files, `log_params` params and
    tags, `log_inputs` dataset inputs (of this run or the parent), `log_to` metrics of another
    run. Each call tries to send
    what is queued (creating the run first if MLflow did not answer at the start); while the
    server is down it retries no more often than every 1, 2, 4 ... 30 s, so training is not
    slowed, and says once that it is buffering. `close` waits up to `wait_seconds()` for the
    rest and ends the run; what could not be sent by then is named in one line (`unlogged`).
    Nothing here raises because of tracking."""

    def __init__(self, cfg: Any, parent_run_id: str, name: str, round_index: int) -> None:
        self.cfg, self.parent_run_id = cfg, parent_run_id
        self.name, self.round_index = name, round_index
        self.metrics: dict[str, Any] = {}
        self.run_id = ""
        self.start_ms = int(time.time() * 1000)
        self.pending: list[Any] = []  # mlflow.entities.Metric, in logging order
        self._last_stamp: dict[tuple[str, int], int] = {}  # (key, step) -> last timestamp
        self.files: list[tuple[str, str | None]] = []
        # (kind, target run id or "" for this run, payload): dataset inputs, and metrics for
        # another run (the parent's headline numbers), sent through the same buffer
        self.extra: list[tuple[str, str, Any]] = []
        self.logged = 0  # values handed to log_metrics
        self.sent = 0
        self.dropped = 0
        self.unlogged = ""  # set by close(): what did not reach MLflow
        self._retry_at = 0.0
        self._delay = 1.0
        self._down_since = 0.0
        self._given_up = False

    @property
    def label(self) -> str:
        return f"r{self.round_index} {self.name}"

    def log(self, metrics: dict[str, Any] | None) -> dict[str, Any]:
        self.metrics = dict(metrics or {})
        self.log_metrics(self.metrics)
        return self.metrics

    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        from mlflow.entities import Metric

        now_ms = int(time.time() * 1000)
        for key, value in numeric(metrics).items():
            # A value logged again for the same key and step within the same millisecond gets the
            # next one: MLflow keeps one value per (key, step, timestamp), so it would be lost.
            at = (key, int(step or 0))
            stamp = max(now_ms, self._last_stamp.get(at, -1) + 1)
            self._last_stamp[at] = stamp
            self.pending.append(Metric(key, value, stamp, at[1]))
            self.logged += 1
        self.flush()

    def log_artifact(self, path: str, artifact_path: str | None = None) -> None:
        self.files.append((str(path), artifact_path))
        self.flush()

    def log_params(
        self, params: dict[str, Any], tags: dict[str, Any] | None = None, run_id: str = ""
    ) -> None:
        """Queue params and tags of this run, or of `run_id` (the parent run), values as
        strings. MLflow keeps a param's first value: logging it again with the same value is
        fine, with another one it is refused."""
        params = {k: str(v) for k, v in params.items()}
        tags = {k: str(v) for k, v in (tags or {}).items()}
        if params or tags:
            self.extra.append(("params", run_id, (params, tags)))
            self.flush()

    def log_inputs(self, datasets: list[Any], run_id: str = "") -> None:
        """Queue MLflow `DatasetInput`s for this run, or for `run_id` (the parent run)."""
        if datasets:
            self.extra.append(("inputs", run_id, list(datasets)))
            self.flush()

    def log_to(self, run_id: str, metrics: list[Any]) -> None:
        """Queue `mlflow.entities.Metric`s for another run (the parent run's headline metrics):
        the parent run has no buffer of its own, and these are logged from inside a phase."""
        if metrics:
            self.extra.append(("metrics", run_id, list(metrics)))
            self.flush()

    def flush(self, now: bool = False) -> bool:
        """Send what is queued if MLflow answers (at once with `now`, else not before the
        backoff allows); True when nothing is left to send."""
        if self._given_up:
            return False
        if self.run_id and not self.pending and not self.files and not self.extra:
            return True
        clock = time.monotonic()
        if not now and clock < self._retry_at:
            return False
        from sparring import progress

        try:
            self._send()
        except Exception as exc:
            if not retry.transient(exc):
                # refused for good (a bad value, a deleted parent): drop it, keep training
                self.dropped += len(self.pending) + len(self.files) + len(self.extra)
                self.pending.clear()
                self.files.clear()
                self.extra.clear()
                self._given_up = not self.run_id
                log.warning("MLflow refused the values of %s: %s", self.label, retry.one_line(exc))
                return False
            if not self._down_since:
                self._down_since = clock
                progress.say(
                    f"{self.label}: MLflow at {tracking_uri(self.cfg)} unreachable "
                    f"({retry.one_line(exc, 80)}); the phase goes on, metrics wait in memory"
                )
            self._retry_at = clock + self._delay
            self._delay = min(self._delay * 2, 30.0)
            return False
        if self._down_since:
            progress.say(
                f"{self.label}: MLflow answers again after {clock - self._down_since:.0f}s; "
                f"buffered values sent ({self.sent} so far)"
            )
        self._down_since = 0.0
        self._delay = 1.0
        return True

    def _send(self) -> None:
        from mlflow import MlflowClient

        connect(self.cfg)
        client = MlflowClient()
        if not self.run_id:
            if self.parent_run_id:
                exp_id = client.get_run(self.parent_run_id).info.experiment_id
            else:
                exp_id = ensure_experiment(client, self.cfg.tracking.experiment)
            tags = {"sparring.round": str(self.round_index), "sparring.phase": self.name}
            if self.parent_run_id:
                tags["mlflow.parentRunId"] = self.parent_run_id
            run_name = f"r{self.round_index}-{self.name}"
            run = client.create_run(exp_id, start_time=self.start_ms, tags=tags, run_name=run_name)
            self.run_id = run.info.run_id
        while self.pending:
            batch = self.pending[:1000]
            client.log_batch(self.run_id, metrics=batch)
            self.sent += len(batch)
            del self.pending[:1000]
        while self.files:
            path, artifact_path = self.files[0]
            client.log_artifact(self.run_id, path, artifact_path)
            self.files.pop(0)
        while self.extra:
            kind, target, payload = self.extra[0]
            if kind == "inputs":
                client.log_inputs(target or self.run_id, datasets=payload)
            elif kind == "params":
                from mlflow.entities import Param, RunTag

                params, tags = payload
                client.log_batch(
                    target or self.run_id,
                    params=[Param(k, v) for k, v in params.items()],
                    tags=[RunTag(k, v) for k, v in tags.items()],
                )
            else:
                client.log_batch(target or self.run_id, metrics=payload)
            self.extra.pop(0)

    def close(self, status: str = "FINISHED") -> None:
        """Send what is left (waiting up to `wait_seconds()` for MLflow) and end the run; else
        record in `unlogged`, and print, what did not reach MLflow."""
        from mlflow import MlflowClient

        from sparring import progress

        deadline = time.monotonic() + retry.wait_seconds()
        ended = False
        while True:
            if self.flush(now=True):
                try:
                    MlflowClient().set_terminated(self.run_id, status=status)
                    ended = True
                    break
                except Exception as exc:
                    if not retry.transient(exc):
                        log.warning("could not end %s: %s", self.label, retry.one_line(exc))
                        break
            if self._given_up or time.monotonic() >= deadline:
                break
            time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
        if ended and not self.dropped:
            return
        missing = []
        if self.pending:
            keys = sorted({m.key for m in self.pending})
            steps = sorted({m.step for m in self.pending})
            shown = ", ".join(keys[:6]) + (", ..." if len(keys) > 6 else "")
            missing.append(
                f"{len(self.pending)} metric values ({shown}; steps {steps[0]}-{steps[-1]})"
            )
        if self.files:
            missing.append(f"{len(self.files)} files")
        if self.extra:
            missing.append(
                f"{len(self.extra)} batches of params, dataset inputs or parent-run metrics"
            )
        if self.dropped:
            missing.append(f"{self.dropped} values MLflow refused")
        if not ended:
            missing.append("the run's end" if self.run_id else "the run itself")
        self.unlogged = "; ".join(missing)
        progress.say(
            f"{self.label}: MLflow at {tracking_uri(self.cfg)} did not take everything: not "
            f"logged: {self.unlogged}; the phase's outputs are intact"
        )

"""Waiting for a TrainJob: poll its status until it completes, fails or runs out of time,
streaming the log of rank 0's pod meanwhile.

Covers: `LogFollower` (finds the pod of node rank 0 by the JobSet's labels and prints each new
log line once, across polls, from `sinceTime` with timestamps) and `wait_for_trainjob` (state
changes and log lines to callbacks; a Failed condition raises `TrainJobFailed` with its reason
and message; past the timeout the TrainJob is deleted and `TrainJobTimeout` raised; a TrainJob
deleted by someone else, or a refused request (401/403), ends the wait at once; other API
errors are retried on the next poll, up to `max_errors` in a row).
Does not cover: creating the TrainJob or fetching its outputs (`sparring.cluster.launch`).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any

from sparring.cluster.kube import KubeClient, KubeError
from sparring.cluster.trainjob import (
    COMPLETION_INDEX_LABEL,
    JOBSET_NAME_LABEL,
    NODE,
    TrainJobState,
    read_state,
)
from sparring.errors import SparringError

RJOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"


class TrainJobFailed(SparringError):
    """The TrainJob ended Failed; the message carries the condition's reason and message."""

    def __init__(self, message: str, state: TrainJobState):
        super().__init__(message)
        self.state = state


class TrainJobTimeout(SparringError):
    """The TrainJob did not end in time (it has been deleted)."""


def _ts_key(stamp: str) -> tuple[str, int] | None:
    """(whole seconds, nanoseconds) of an RFC 3339 log timestamp, comparable; None if odd."""
    if not stamp.endswith("Z") or "T" not in stamp:
        return None
    body = stamp[:-1]
    seconds, _, frac = body.partition(".")
    if not frac.isdigit() and frac:
        return None
    try:
        dt.datetime.strptime(seconds, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    return seconds, int((frac or "0").ljust(9, "0")[:9])


class LogFollower:
    """The log of a TrainJob's node-rank-0 pod, each line delivered once across polls."""

    def __init__(self, client: KubeClient, namespace: str, name: str):
        self.client, self.namespace, self.name = client, namespace, name
        self.pod = ""
        self.last: tuple[str, int] | None = None
        self.selector = f"{JOBSET_NAME_LABEL}={name},{RJOB_LABEL}={NODE},{COMPLETION_INDEX_LABEL}=0"

    def _find_pod(self) -> str:
        pods = self.client.list_pods(self.namespace, self.selector)
        pods.sort(key=lambda p: p.get("metadata", {}).get("creationTimestamp", ""))
        return pods[-1]["metadata"]["name"] if pods else ""

    def poll(self, sink: Callable[[str], Any]) -> int:
        """Deliver the lines logged since the last poll; returns how many. API errors (pod not
        yet started, gone, or the server briefly away) deliver nothing."""
        try:
            pod = self._find_pod()
            if not pod:
                return 0
            if pod != self.pod:  # first pod, or a replacement: its log starts afresh
                self.pod, self.last = pod, None
            since = f"{self.last[0]}Z" if self.last else ""
            text = self.client.pod_log(self.namespace, pod, NODE, since_time=since)
        except KubeError:
            return 0
        count = 0
        for line in text.splitlines():
            stamp, _, message = line.partition(" ")
            key = _ts_key(stamp)
            if key is None:  # not a timestamped line: deliver it whole
                message = line
            elif self.last is not None and key <= self.last:
                continue
            else:
                self.last = key
            sink(message)
            count += 1
        return count


def wait_for_trainjob(
    client: KubeClient,
    namespace: str,
    name: str,
    *,
    timeout_s: float,
    poll_s: float,
    on_state: Callable[[TrainJobState], Any] = lambda s: None,
    on_log: Callable[[str], Any] = lambda line: None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Any] = time.sleep,
    max_errors: int = 30,
) -> TrainJobState:
    """Poll TrainJob `namespace/name` until it is Complete (returned), Failed (raises
    TrainJobFailed) or `timeout_s` passes (deletes it, raises TrainJobTimeout)."""
    where = f"TrainJob {namespace}/{name}"
    deadline = clock() + timeout_s
    logs = LogFollower(client, namespace, name)
    last: TrainJobState | None = None
    errors = 0
    while True:
        try:
            state = read_state(client.get_trainjob(namespace, name))
            errors = 0
        except KubeError as exc:
            if exc.status == 404:
                raise SparringError(f"{where} is gone: deleted while this task waited") from None
            if exc.status in (401, 403):
                raise
            errors += 1
            if errors >= max_errors:
                raise SparringError(
                    f"{where}: {errors} status reads failed in a row: {exc}"
                ) from None
            state = last
        if state is not None and state != last:
            on_state(state)
            last = state
        logs.poll(on_log)
        if last is not None and last.done:
            if last.phase == "Failed":
                raise TrainJobFailed(f"{where} failed: {last.line()}", last)
            return last
        remaining = deadline - clock()
        if remaining <= 0:
            try:
                client.delete_trainjob(namespace, name)
                what = "deleted it"
            except KubeError as exc:
                what = f"could not delete it ({exc})"
            raise TrainJobTimeout(
                f"{where} did not finish within {timeout_s:g} s "
                f"(kubernetes.trainer.timeout_s; last state {last.line() if last else 'unknown'}); "
                f"{what}"
            )
        sleep(min(poll_s, remaining))

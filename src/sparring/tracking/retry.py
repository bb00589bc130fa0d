"""How Sparring waits for an MLflow server that is down: which failures are worth retrying, and
retrying them with a deadline.

Covers: `TrackingUnavailable` (a SparringError: one line naming the tracking URI and what was
being done), `wait_seconds` (`SPARRING_MLFLOW_WAIT_SECONDS`, default 60: how long a call that
must succeed keeps retrying, and how long a phase waits at its end to send buffered metrics),
`transient` (connection refused or reset, timeouts, 5xx and 429 answers; not a 4xx such as a
missing run) and `call` (retry `fn` until it succeeds, fails for another reason, or the wait is
over; the loop is sparring.retrying's). `quick_failures` makes MLflow's client fail fast
(MLflow's own default is 7 retries with backoff, about four minutes per call), so that
Sparring's deadline is the one that counts and a metric logged while the server is down costs
milliseconds, not minutes.

Does not cover: buffering metrics during an outage (sparring.tracking.PhaseRun), or a server
that accepts connections and never answers (each attempt then waits
MLFLOW_HTTP_REQUEST_TIMEOUT, 120 s by default).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TypeVar

from sparring.errors import SparringError
from sparring.retrying import one_line, seconds_from_env, with_deadline

log = logging.getLogger(__name__)
T = TypeVar("T")

WAIT_ENV = "SPARRING_MLFLOW_WAIT_SECONDS"
DEFAULT_WAIT_SECONDS = 60.0
_TRANSIENT_CODES = {"TEMPORARILY_UNAVAILABLE", "REQUEST_LIMIT_EXCEEDED", "INTERNAL_ERROR"}


class TrackingUnavailable(SparringError):
    """MLflow did not answer within the wait."""


def wait_seconds() -> float:
    """How long Sparring waits for an MLflow server that does not answer."""
    return seconds_from_env(WAIT_ENV, DEFAULT_WAIT_SECONDS)


def quick_failures() -> None:
    """Let MLflow's HTTP client give up at once on a dead server (unless the user set
    MLFLOW_HTTP_REQUEST_MAX_RETRIES): Sparring retries with its own deadline."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")


def transient(exc: BaseException) -> bool:
    """True when the server is down, restarting, overloaded or rate limiting."""
    import requests
    from mlflow.exceptions import MlflowException, RestException

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, (requests.ConnectionError, requests.Timeout)):
            return True
        if isinstance(seen, (ConnectionError, TimeoutError)):
            return True
        if isinstance(seen, MlflowException):
            message = str(seen.message)
            if message.startswith("API request to") and (
                "failed with exception" in message
                or "failed with timeout" in message
                or "failed with error code 5" in message
                or "failed with error code 429" in message
            ):
                return True
            if isinstance(seen, RestException) and seen.error_code in _TRANSIENT_CODES:
                return True
        seen = seen.__cause__ or seen.__context__
    return False


def call(uri: str, what: str, fn: Callable[[], T], wait: float | None = None) -> T:
    """`fn()`, retried while it fails transiently for up to `wait` seconds (default
    `wait_seconds()`) from the first failure; then TrackingUnavailable naming `uri` and `what`."""

    def first_failure(exc: BaseException) -> None:
        log.warning("MLflow at %s failed while %s (%s); retrying", uri, what, one_line(exc))

    def give_up(waited: float, exc: BaseException) -> Exception:
        return TrackingUnavailable(
            f"MLflow at {uri} unreachable for {waited:.0f}s while {what} "
            f"({one_line(exc)}); {WAIT_ENV} sets the wait"
        )

    limit = wait_seconds() if wait is None else wait
    return with_deadline(fn, transient, limit, first_failure, give_up)

"""Retrying a call that fails while a server is down, with a deadline: the loop S3 storage and
MLflow tracking share.

Covers: `seconds_from_env` (a wait in seconds read from an environment variable, one-line error
when it is not a number), `one_line` (an exception as one short line) and `with_deadline` (call
`fn` until it succeeds, fails for a reason `transient` does not accept, or `window` seconds have
passed since the first failure; backoff 0.5 s doubling to 5 s).

Does not cover: which failures are transient (each caller knows its client: sparring.storage for
boto3, sparring.tracking.retry for MLflow) or the error raised at the deadline (the caller's).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

from sparring.errors import SparringError

T = TypeVar("T")


def seconds_from_env(name: str, default: float) -> float:
    """A non-negative number of seconds from `$name`, `default` when unset."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return max(0.0, float(raw))
    except ValueError:
        raise SparringError(f"{name}={raw!r}: not a number of seconds") from None


def one_line(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def with_deadline(
    fn: Callable[[], T],
    transient: Callable[[BaseException], bool],
    window: float,
    on_first_failure: Callable[[BaseException], None],
    give_up: Callable[[float, BaseException], Exception],
) -> T:
    """`fn()`, retried while it fails transiently, for up to `window` seconds from the first
    failure (`on_first_failure` is told of it once); then `give_up(waited, exc)` is raised.
    Failures `transient` does not accept pass through unchanged."""
    first = 0.0
    delay = 0.5
    while True:
        try:
            return fn()
        except Exception as exc:
            if not transient(exc):
                raise
            now = time.monotonic()
            if not first:
                first = now
                on_first_failure(exc)
            waited = now - first
            if waited >= window:
                raise give_up(waited, exc) from None
            time.sleep(min(delay, window - waited))
            delay = min(delay * 2, 5.0)

"""Scoring overlapped with sampling: completions are scored while the rest of their batch
still decodes, so a GRPO step costs about max(sampling, scoring) rather than their sum.

Covers `Prefetcher`: one worker thread that, each time it is free, takes every row finished
since its last call (in the order they finished) and hands them to `warm(rows)` in one call, so
rows that finish while a call runs wait for the next one and the sandbox pool gets batches, not
single rows; `close()` scores what is left, waits, and reports each call's start and end (the
overlap is observable: a call that ended before sampling did) and the seconds spent waiting.

`warm` only fills a cache; for GRPO it is the answerer reward's (solution, test) cache
(`AnswererRewardFn.prefetch`), and the reward is computed afterwards from that cache exactly as
without overlap, so rewards, metrics and their order do not depend on it. A `warm` that raises
stops the prefetching (later rows are drained unscored) and `close()` returns the exception: the
reward call then scores those rows itself, and meets the same error where it is reported today.

Does not cover: which rows are finished (the decoders' `on_done`), the sandbox, more than one
worker (the sandbox pool already runs one call's tests in parallel).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PrefetchReport:
    calls: list[tuple[float, float, int]]  # (start, end, rows) of each warm call, perf_counter
    waited_s: float  # seconds close() waited for the scoring left after sampling
    error: BaseException | None  # what stopped the prefetching, if anything


class Prefetcher:
    """Calls `warm(rows)` in a background thread for the rows `submit`ted so far."""

    def __init__(self, warm: Callable[[Sequence[int]], None]) -> None:
        self._warm = warm
        self._pending: list[int] = []
        self._closed = False
        self._cond = threading.Condition()
        self._calls: list[tuple[float, float, int]] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="sparring-prefetch", daemon=True)
        self._thread.start()

    def submit(self, row: int) -> None:
        with self._cond:
            if self._closed:
                raise RuntimeError("Prefetcher.submit after close()")
            self._pending.append(row)
            self._cond.notify()

    def close(self) -> PrefetchReport:
        """Score what was submitted and not yet scored, wait for it, stop the thread."""
        start = time.perf_counter()
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()
        return PrefetchReport(list(self._calls), time.perf_counter() - start, self._error)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return
                rows, self._pending = self._pending, []
            if self._error is not None:
                continue
            start = time.perf_counter()
            try:
                self._warm(rows)
            except Exception as exc:  # the reward call will meet it again and report it
                self._error = exc
            self._calls.append((start, time.perf_counter(), len(rows)))

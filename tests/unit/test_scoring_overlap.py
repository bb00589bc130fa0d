"""The prefetching thread of scoring overlapped with sampling (sparring.backends.scoring_overlap):
rows
submitted while a call runs go together into the next one, close() scores what is left and
waits, a failing call stops it and is reported. Real threads, milliseconds."""

import threading
import time

import pytest

from sparring.backends.scoring_overlap import Prefetcher


def test_rows_finished_during_a_call_are_scored_together_in_the_next():
    started, release = threading.Event(), threading.Event()
    seen: list[list[int]] = []

    def warm(rows):
        seen.append(list(rows))
        started.set()
        release.wait(5)

    p = Prefetcher(warm)
    p.submit(3)
    assert started.wait(5)  # the first row is scored at once, while the others still "sample"
    for i in (0, 2, 1):
        p.submit(i)
    release.set()
    report = p.close()
    assert seen == [[3], [0, 2, 1]]
    assert [rows for _, _, rows in report.calls] == [1, 3] and report.error is None


def test_close_waits_for_the_rows_left_and_reports_the_wait():
    done: list[int] = []

    def warm(rows):
        time.sleep(0.05)
        done.extend(rows)

    p = Prefetcher(warm)
    for i in range(4):
        p.submit(i)
    report = p.close()
    assert sorted(done) == [0, 1, 2, 3]  # nothing submitted is left unscored
    assert report.waited_s > 0 and all(end >= start for start, end, _ in report.calls)


def test_a_failing_call_stops_prefetching_and_is_reported():
    calls: list[list[int]] = []

    def warm(rows):
        calls.append(list(rows))
        raise OSError("sandbox gone")

    p = Prefetcher(warm)
    p.submit(0)
    time.sleep(0.05)
    p.submit(1)
    report = p.close()
    assert calls == [[0]]  # after the failure, rows are drained unscored
    assert isinstance(report.error, OSError)
    with pytest.raises(RuntimeError, match="after close"):
        p.submit(2)

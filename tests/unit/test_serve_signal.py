"""`sparring serve` stops on SIGTERM: sparring.serving.launch.run_until_signal with a real child
process standing in for the engine and a real signal sent to this process.

The hang this guards against (2026-12-07): the handler called threading.Event.set, which takes
the lock Event.wait holds for a few instructions of every 0.5 s loop; a signal landing there
left `sparring serve` waiting on that lock forever (seen in a gdb backtrace of the hung
process). That race is too narrow to hit on demand; this test pins what the fixed loop must do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading

import pytest

from sparring.serving.launch import run_until_signal


class _Engine:
    """The part of sparring.serving.engines.EngineProcess the loop uses, over a real process."""

    log_path = "engine.log"

    def __init__(self) -> None:
        self.proc = subprocess.Popen(["sleep", "60"])
        self.stops = 0

    def stop(self) -> int | None:
        self.stops += 1
        self.proc.terminate()
        return self.proc.wait(timeout=10)


@pytest.mark.timeout(30)  # a loop that misses the signal hangs: fail in 30 s, not 600
def test_sigterm_stops_the_engine_and_restores_the_handlers():
    engine = _Engine()
    before = signal.getsignal(signal.SIGTERM)
    sender = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGTERM))
    sender.start()
    try:
        assert run_until_signal(engine, "serving") == 0
    finally:
        sender.cancel()
        engine.proc.kill()
    assert engine.stops == 1 and engine.proc.poll() is not None
    assert signal.getsignal(signal.SIGTERM) is before


def test_an_engine_that_exits_ends_the_loop_with_its_code():
    engine = _Engine()
    engine.proc.kill()
    engine.proc.wait()
    assert run_until_signal(engine) == -signal.SIGKILL  # the engine's own code, never 0

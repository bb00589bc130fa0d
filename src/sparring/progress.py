"""What a user watching a local run sees: one line per phase and per training step.

Covers: `say` (a progress line, marked so the runner can pick it out of everything a task
prints), `ConsoleFilter` (the local runner's stdout: every byte goes to the run's log file, only
marked lines reach the console), and `step_callback` (a TRL/transformers callback printing one
line per optimizer step: reward or loss, useful groups, clipped completions, time left).

`Countdown` says a line per part of a long, non-training job (the evaluate phase, `sparring
eval`, `sparring infer --batch`) with the time left. `heartbeat` (around every phase) says a
line whenever none was said for `HEARTBEAT_S`, with the last thing said: a step or a chunk of
answers can take minutes on a CPU, and a silent phase looks hung.

`failure_excerpt` picks the failed task and its traceback out of a run's log.

Does not cover: MLflow (every number here is also logged there) or the cluster, where each task
pod's log holds the same lines.
"""

from __future__ import annotations

import contextlib
import io
import re
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

MARK = "[sparring]"
LABEL = ""  # the phase running in this process (`r1 train-answerer`), set by the phase runner


HEARTBEAT_S = 50.0  # a phase silent this long says it is still working (under a line a minute)
_LAST: dict = {"at": time.monotonic(), "text": "", "text_at": time.monotonic()}  # said, quoted


def say(text: str) -> None:
    """Print one progress line (flushed at once: the runner streams it line by line)."""
    _LAST["at"] = _LAST["text_at"] = time.monotonic()
    _LAST["text"] = text
    print(f"{MARK} {time.strftime('%H:%M:%S')} {text}", flush=True)


def still_working(now: float, started: float, interval: float = HEARTBEAT_S) -> str | None:
    """The heartbeat's line when nothing was said for `interval` seconds before `now` (counted
    from the phase's start, `started`, at the latest), else None: the phase, how long it has
    run, and the last line said in it (none when nothing was said since it started)."""
    if now - max(_LAST["at"], started) < interval:
        return None
    last = str(_LAST["text"]) if _LAST.get("text_at", _LAST["at"]) >= started else ""
    if LABEL and last.startswith(LABEL):
        last = last[len(LABEL) :].lstrip(" :")
    text = f"{LABEL or 'sparring'}: still working, {fmt_seconds(now - started)} in"
    return f"{text}; last: {last}" if last else text


@contextlib.contextmanager
def heartbeat(interval: float = HEARTBEAT_S) -> Iterator[None]:
    """Say `still_working` from a daemon thread whenever nothing was said for `interval`."""
    started = time.monotonic()
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(min(5.0, interval / 4)):
            line = still_working(time.monotonic(), started, interval)
            if line is not None:
                quoted = (_LAST["text"], _LAST.get("text_at", _LAST["at"]))
                say(line)
                # the next beat quotes the phase's last real line, not this one
                _LAST["text"], _LAST["text_at"] = quoted

    thread = threading.Thread(target=beat, name="sparring-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def fmt_seconds(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


class Countdown:
    """Progress lines for work of a known size in units of unequal cost (answers to generate,
    tests to run): `done(text, units)` says `text` with the time left, estimated from the time
    per unit so far. `label` prefixes every line (default: the phase running, LABEL)."""

    def __init__(self, total: float, label: str = "") -> None:
        self.total, self.finished = float(total), 0.0
        self.label = label
        self.start = time.perf_counter()

    def left(self) -> float:
        """Seconds left at the pace so far (0 before any unit is done: nothing to go by)."""
        if self.finished <= 0:
            return 0.0
        elapsed = time.perf_counter() - self.start
        return elapsed / self.finished * max(0.0, self.total - self.finished)

    def done(self, text: str, units: float = 0.0) -> None:
        """`units` more are finished; say `text` and the time left."""
        self.finished += units
        name = self.label or LABEL or "sparring"
        say(f"{name} {text} left~{fmt_seconds(self.left())}")


class ConsoleFilter(io.TextIOBase):
    """A stdout replacement: writes everything to `log`, and to `console` only the lines that
    carry MARK (with what precedes the mark, e.g. kfp.local's indentation, removed)."""

    def __init__(self, console: TextIO, log: TextIO) -> None:
        self.console, self.log = console, log
        self._line = ""

    def write(self, text: str) -> int:
        self.log.write(text)
        if "\n" in text:
            self.log.flush()  # `tail -f` on the log follows the run
        self._line += text
        while "\n" in self._line:
            line, self._line = self._line.split("\n", 1)
            if MARK in line:
                self.console.write(line[line.index(MARK) :] + "\n")
                self.console.flush()
        return len(text)

    def flush(self) -> None:
        self.log.flush()
        self.console.flush()

    def writable(self) -> bool:
        return True


def step_callback(total_steps: int, label: str = "") -> Any:
    """A TrainerCallback printing one line per logged optimizer step: for GRPO the reward,
    useful groups, clipped share and grad norm; for SFT (the warm start) the loss."""
    from transformers import TrainerCallback

    class StepProgress(TrainerCallback):
        def __init__(self) -> None:
            self.start = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or not ("reward" in logs or "loss" in logs):
                return
            if not getattr(state, "is_world_process_zero", True):  # several processes: rank 0 says
                return
            step = max(1, state.global_step)
            elapsed = time.perf_counter() - self.start
            left = elapsed / step * max(0, total_steps - step)
            name = label or LABEL or "train"
            parts = [f"{name} step {step}/{total_steps}"]
            if "reward" in logs:
                parts.append(f"reward={logs['reward']:.3f}")
            elif "loss" in logs:
                parts.append(f"loss={logs['loss']:.3f}")
            if "sparring/useful_group_share" in logs:
                parts.append(f"useful_groups={logs['sparring/useful_group_share']:.2f}")
            if "completions/clipped_ratio" in logs:
                parts.append(f"clipped={logs['completions/clipped_ratio']:.2f}")
            if "grad_norm" in logs:
                parts.append(f"grad_norm={logs['grad_norm']:.3g}")
            parts.append(f"left~{fmt_seconds(left)}")
            say(" ".join(parts))

    return StepProgress()


def brief(metrics: dict[str, Any]) -> str:
    """The few numbers a phase's done-line shows."""
    keys = (
        "reward",
        "discriminating_pass_rate",
        "trivial_share",
        "useful_group_share",
        "validity",
        "break_rate",
        "new_tests",
        "bank_size",
        "loss_first",
        "loss_last",
        "problems_train",
        "problems_val",
    )
    return " ".join(
        f"{k}={metrics[k]:.3g}"
        for k in keys
        if isinstance(metrics.get(k), (int, float)) and not isinstance(metrics.get(k), bool)
    )


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FAILED_TASK = re.compile(r"Task '([^']+)' finished with status FAILURE")


def failure_excerpt(log_text: str, max_lines: int = 60) -> tuple[str, str, list[str]]:
    """(failed task, its error line, its traceback) from a kfp.local run's log; the task is ""
    when none failed, the traceback empty when the task printed none. The first task that
    failed is the cause: the exit task may fail after it for the same reason (MLflow down)."""
    lines = [_ANSI.sub("", line).rstrip() for line in log_text.splitlines()]
    for i in range(len(lines)):
        match = _FAILED_TASK.search(lines[i])
        if not match:
            continue
        start = i
        while start > 0 and "Traceback (most recent call last)" not in lines[start]:
            if "Executing task" in lines[start]:
                break  # this task's log holds no traceback
            start -= 1
        if "Traceback (most recent call last)" not in lines[start]:
            return match.group(1), "", []
        trace = [line.strip() for line in lines[start:i] if line.strip()]
        return match.group(1), trace[-1] if trace else "", trace[-max_lines:]
    return "", "", []

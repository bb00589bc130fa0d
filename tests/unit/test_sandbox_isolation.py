"""The bwrap command line and the seccomp program (pure; no process started)."""

from sparring.sandbox import isolation
from sparring.sandbox.worker import seccomp_program


def test_bwrap_command_isolates():
    cmd = isolation.bwrap_command("/usr/bin/python3")
    for flag in (
        "--unshare-pid",
        "--unshare-net",
        "--die-with-parent",
        "--clearenv",
        "--new-session",
        "--cap-drop",
    ):
        assert flag in cmd
    assert cmd[cmd.index("--cap-drop") + 1] == "ALL"
    assert cmd[cmd.index("--tmpfs") - 2] == "--size"
    # no writable bind of the host, no bind of the whole root
    assert "--bind" not in cmd
    assert not any(cmd[i] == "--ro-bind" and cmd[i + 1] == "/" for i in range(len(cmd) - 1))
    assert cmd[-5:] == ["-B", "/sandbox/worker.py", "--pidns", "--base", "/tmp"]


def test_worker_env_has_no_secrets():
    assert set(isolation.WORKER_ENV) == {"PATH", "LANG"}


def test_seccomp_program_is_well_formed():
    prog = seccomp_program(1234)
    assert len(prog) < 256
    assert prog[-1] == (0x06, 0, 0, 0x7FFF0000)  # default allow
    for code, jt, jf, _k in prog:
        assert code in (0x20, 0x15, 0x35, 0x45, 0x06)
        assert 0 <= jt < 256 and 0 <= jf < 256
    for i, (code, jt, jf, _k) in enumerate(prog):  # jumps stay inside the program
        if code != 0x06 and code != 0x20:
            assert i + 1 + max(jt, jf) < len(prog)

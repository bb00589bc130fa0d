"""The bwrap command line and the seccomp program (pure; no process started)."""

import pytest

from sparring.sandbox import isolation
from sparring.sandbox.worker import base_program, child_program


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
    assert "-S" in cmd[cmd.index("/sandbox/worker.py") - 3 :]  # no site: see WORKER_PYTHON_FLAGS
    assert "--as-pid-1" in cmd


def test_worker_env_has_no_secrets():
    assert set(isolation.WORKER_ENV) == {"PATH", "LANG", "PYTHONHASHSEED"}


@pytest.mark.parametrize(
    "prog", [base_program(), child_program(), child_program(1234)], ids=["base", "child", "pid"]
)
def test_seccomp_programs_are_well_formed(prog):
    assert len(prog) < 256
    assert prog[:3] == [(0x20, 0, 0, 4), (0x15, 1, 0, 0xC000003E), (0x06, 0, 0, 0x80000000)]
    assert prog[-1] == (0x06, 0, 0, 0x7FFF0000)  # default allow
    for code, jt, jf, _k in prog:
        assert code in (0x20, 0x15, 0x35, 0x45, 0x06)
        assert 0 <= jt < 256 and 0 <= jf < 256
    for i, (code, jt, jf, _k) in enumerate(prog):  # jumps stay inside the program
        if code != 0x06 and code != 0x20:
            assert i + 1 + max(jt, jf) < len(prog)


def test_child_filter_guards_signals_only_without_a_pid_namespace():
    assert len(child_program(1234)) > len(child_program())
    assert any(k == 1234 for *_, k in child_program(1234))
    assert not any(k == 62 for *_, k in child_program())  # kill: the worker is init there


def test_python_roots_are_bound_after_the_scratch_tmpfs():
    """A checkout or venv under /tmp must stay visible inside the sandbox (CI clones there)."""
    from sparring.sandbox.isolation import _python_roots, bwrap_command

    cmd = bwrap_command()
    tmpfs = cmd.index("/tmp", cmd.index("--tmpfs"))
    for root in _python_roots():
        bind = next(i for i in range(len(cmd) - 2) if cmd[i : i + 3] == ["--ro-bind", root, root])
        assert bind > tmpfs, root


def test_wipe_spares_mount_points_and_clears_the_rest(tmp_path):
    from sparring.sandbox.worker import _wipe

    venv = tmp_path / "checkout" / ".venv"
    venv.mkdir(parents=True)
    (venv / "python").write_text("keep")
    (tmp_path / "checkout" / "junk").write_text("x")
    (tmp_path / "junk").write_text("x")
    mounts = (frozenset({str(venv)}), frozenset({str(tmp_path / "checkout")}))
    _wipe(str(tmp_path), mounts=mounts)
    assert (venv / "python").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.rglob("*")) == [".venv", "checkout", "python"]


def test_root_callers_get_an_unprivileged_uid_with_readable_folders():
    from sparring.sandbox.isolation import SANDBOX_UIDS, _python_roots, bwrap_command

    assert "--uid" not in bwrap_command() and "--cap-add" not in bwrap_command()
    uid = SANDBOX_UIDS.start
    cmd = bwrap_command(uid=uid)
    assert cmd[-2:] == ["--uid", str(uid)]
    added = [cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i] == "--cap-add"]
    assert added == ["CAP_SETUID", "CAP_SETGID"]  # the worker's one switch, which drops them
    assert cmd[cmd.index("--cap-drop") + 1] == "ALL"
    dirs = {cmd[i + 1] for i in range(2, len(cmd) - 1) if cmd[i] == "--dir"}
    for i in range(2, len(cmd) - 1):  # every folder bwrap makes is world-readable
        if cmd[i] == "--dir":
            assert cmd[i - 2 : i] == ["--perms", "0755"], cmd[i + 1]
    for root in _python_roots():
        parent = root.rsplit("/", 1)[0]
        assert not parent or parent in dirs
    tmp = cmd.index("/tmp", cmd.index("--tmpfs") - 1)
    assert cmd[tmp - 5 : tmp - 3] == ["--perms", "1777"]  # then --size N --tmpfs

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

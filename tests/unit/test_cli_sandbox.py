"""`sandbox exec` / `sandbox validate` in-process, and once through `python -m`."""

import argparse
import json
import subprocess
import sys

import pytest

from sparring.cli.sandbox import add_commands

SOL = "def f(x):\n    return x + 1\n"


@pytest.fixture
def parser():
    p = argparse.ArgumentParser(prog="sparring")
    add_commands(p.add_subparsers(dest="command"))
    return p


@pytest.fixture
def files(tmp_path):
    (tmp_path / "sol.py").write_text(SOL)
    (tmp_path / "bad.py").write_text("def f(x):\n    return 0\n")
    (tmp_path / "tests.txt").write_text(
        "# tests\nassert f(1) == 2\n\nassert f(1) == 5\nassert f(1)==2\n"
    )
    (tmp_path / "problem.json").write_text(json.dumps({"reference_solution": SOL}))
    return tmp_path


ROOMY = ["--timeout", "5"]  # a wall limit that a loaded machine keeps for tests that must pass


def run(parser, argv):
    """Run one command in-process, isolated (auto: no "running WITHOUT bubblewrap" warning)."""
    args = parser.parse_args(argv if "--timeout" in argv else [*argv, *ROOMY])
    return args.func(args)


def test_exec_json(parser, files, capsys):
    argv = ["sandbox", "exec", "--solution", str(files / "sol.py"), "--tests"]
    assert run(parser, [*argv, str(files / "tests.txt"), "--json", *ROOMY]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["outcome"] for r in out["results"]] == ["passed", "failed", "passed"]
    assert out["passed"] == 2 and out["total"] == 3
    assert set(out["results"][0]) == {"test", "outcome", "detail"}


def test_exec_table(parser, files, capsys):
    argv = [
        "sandbox",
        "exec",
        "--solution",
        str(files / "sol.py"),
        "--tests",
        str(files / "tests.txt"),
    ]
    assert run(parser, argv) == 0
    assert "passed 2/3" in capsys.readouterr().out


def test_exec_missing_file(parser, files, capsys):
    argv = [
        "sandbox",
        "exec",
        "--solution",
        str(files / "nope.py"),
        "--tests",
        str(files / "tests.txt"),
    ]
    assert run(parser, argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.py" in err and "Traceback" not in err


def test_validate_json(parser, files, capsys):
    argv = ["sandbox", "validate", "--problem", str(files / "problem.json")]
    argv += ["--tests", str(files / "tests.txt"), "--solutions", str(files / "bad.py"), "--json"]
    assert run(parser, argv) == 0
    out = json.loads(capsys.readouterr().out)
    v = out["verdicts"]
    assert [x["valid"] for x in v] == [True, False, False]
    assert v[0]["breaks"] == [0] and v[2]["duplicate"] is True
    assert out["validity"] == pytest.approx(1 / 3) and out["discrimination"] == 1.0


def test_validate_bad_problem(parser, files, capsys):
    (files / "p2.json").write_text('{"x": 1}')
    argv = [
        "sandbox",
        "validate",
        "--problem",
        str(files / "p2.json"),
        "--tests",
        str(files / "tests.txt"),
    ]
    assert run(parser, argv) == 2
    assert "reference_solution" in capsys.readouterr().err


def test_module_entry_point(files):
    cmd = [sys.executable, "-m", "sparring.cli.sandbox", "sandbox", "exec", "--solution"]
    cmd += [str(files / "sol.py"), "--tests", str(files / "tests.txt"), "--json", *ROOMY]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["passed"] == 2


def test_exec_without_isolation_warns(parser, files, capsys):
    """`--isolation none` runs, and says it runs unisolated (a RuntimeWarning the test expects)."""
    argv = ["sandbox", "exec", "--solution", str(files / "sol.py"), "--tests"]
    argv += [str(files / "tests.txt"), "--json", "--isolation", "none"]
    with pytest.warns(RuntimeWarning, match="WITHOUT bubblewrap isolation"):
        assert run(parser, argv) == 0
    assert json.loads(capsys.readouterr().out)["passed"] == 2


def test_bare_group_prints_its_help_like_every_other_group(capsys):
    from sparring.cli.main import main

    assert main(["sandbox"]) == 2
    out = capsys.readouterr().out
    assert "SUBCOMMAND" in out and "exec" in out and "validate" in out

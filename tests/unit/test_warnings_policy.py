"""The test run's warning policy (pyproject.toml, [tool.pytest.ini_options] filterwarnings): a
warning of Sparring's own that a test does not expect fails it; third-party deprecations do not."""

from __future__ import annotations

import warnings

import pytest

from sparring.sandbox import Sandbox, SandboxLimits


def test_the_sandbox_warning_is_an_error_unless_expected():
    # unexpected: the pool refuses to start unisolated without a sound (no worker was started)
    with pytest.raises(RuntimeWarning, match="WITHOUT bubblewrap isolation"):
        Sandbox(SandboxLimits(isolation="none", workers=1))
    # expected: the test says so, and the pool runs
    with pytest.warns(RuntimeWarning, match="WITHOUT bubblewrap isolation"):
        box = Sandbox(SandboxLimits(isolation="none", workers=1))
    with box:
        assert box.isolation == "none"
        assert box.run("def f():\n    return 1\n", ["assert f() == 1"]).passed == 1


def test_a_plain_warning_from_a_sparring_module_is_an_error():
    source = compile("import warnings\nwarnings.warn('something odd')\n", "<sparring>", "exec")
    with pytest.raises(UserWarning, match="something odd"):
        exec(source, {"__name__": "sparring.example"})


def test_third_party_deprecations_stay_warnings():
    with warnings.catch_warnings(record=True) as seen:
        exec(  # a library's deprecation, attributed to the library's module
            compile("import warnings\nwarnings.warn('old', DeprecationWarning)\n", "<lib>", "exec"),
            {"__name__": "mlflow.example"},
        )
    assert [str(w.message) for w in seen] == ["old"]

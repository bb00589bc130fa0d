"""Hostile cases shared by the sandbox suites (test_sandbox_hostile.py: the system bwrap;
test_sandbox_bwrap_fallback.py: the bundled one), so both check the same thing the same way.

Each takes the suite's `run1(sandbox, solution, test) -> (outcome, detail)`: the hostile suite's
marks every solution so leftover processes can be found on the host.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest

Run1 = Callable[[Any, str, str], tuple[str, str]]


def assert_loopback_unreachable(run1: Run1, sb: Any, connect_timeout_s: float) -> None:
    """A server listening on the host's 127.0.0.1: code in the sandbox gets "connection
    refused" (its own network namespace, with nothing listening), and the server never sees a
    connection."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    srv.settimeout(0.3)
    port = srv.getsockname()[1]
    sol = f"""
        import socket
        def f(x):
            s = socket.socket()
            s.settimeout({connect_timeout_s})
            s.connect(("127.0.0.1", {port}))
            return "connected"
    """
    try:
        outcome, detail = run1(sb, sol, "assert f(1) == 'connected'")
        assert outcome == "error" and "refused" in detail.lower(), detail
        with pytest.raises(socket.timeout):
            srv.accept()
    finally:
        srv.close()

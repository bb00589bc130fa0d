"""Running untrusted, model-written Python code against tests, and validating generated tests.

Public API: `SandboxLimits`, `TestResult`, `RunReport`, `Sandbox`, `run_tests`, `TestVerdict`,
`ValidationReport`, `validate_tests`, `parse_tests_file`. See the module docstrings of `plan`
(trusted pass/fail), `worker` (inside the sandbox), `isolation` (bwrap), `gate` (the isolation
check a phase passes first), `pool` (workers) and `validation`. Not covered here: reward
computation (sparring.rewards) and Kubernetes pod isolation.
"""

from sparring.sandbox.limits import (
    OUTCOMES,
    RunReport,
    SandboxLimits,
    TestResult,
    trusted_limits,
    untrusted_limits,
)
from sparring.sandbox.plan import normalize, parse_tests_file
from sparring.sandbox.pool import InfraError, Sandbox, run_tests, shared_sandbox
from sparring.sandbox.validation import TestVerdict, ValidationReport, validate_tests

__all__ = [
    "OUTCOMES",
    "InfraError",
    "RunReport",
    "Sandbox",
    "SandboxLimits",
    "TestResult",
    "TestVerdict",
    "ValidationReport",
    "normalize",
    "parse_tests_file",
    "run_tests",
    "shared_sandbox",
    "trusted_limits",
    "untrusted_limits",
    "validate_tests",
]

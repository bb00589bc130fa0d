"""Validation of generated tests: validity against the reference solution, discrimination, dedup.

A candidate test is valid when it parses as a single assert, is at most `max_test_chars` long, is
not a duplicate of an earlier candidate (same `ast.dump`, so whitespace variants collapse), and
passes the reference solution in the sandbox. For each valid test, `breaks` lists the indices of
the given solutions it does not pass (infra errors excluded). Duplicates count as invalid, so
spamming the same test lowers `validity`.

`judge_tests` is the rule the validate phase banks by and evaluation gates by, one rule for both:
with `reference_expected` each equality test first takes its expected value from the reference
(sparring.sandbox.oracle), and a test the reference passes is still invalid when it calls the
function with literals outside the parameters' declared types
(sparring.sandbox.domain.fits_signature).

Covers: `TestVerdict`, `ValidationReport`, `validate_tests`, `judge_tests`. Does not cover:
rewards built on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparring.sandbox import limits as L
from sparring.sandbox.domain import fits_signature
from sparring.sandbox.oracle import with_reference_expected
from sparring.sandbox.plan import InvalidTest, normalize, parse_test
from sparring.sandbox.pool import Sandbox, shared_sandbox


@dataclass(frozen=True)
class TestVerdict:
    __test__ = False

    test: str
    valid: bool
    reason: str
    breaks: list[int] = field(default_factory=list)
    duplicate: bool = False


@dataclass(frozen=True)
class ValidationReport:
    verdicts: list[TestVerdict]
    infra_error: str | None = None

    @property
    def valid_tests(self) -> list[str]:
        return [v.test for v in self.verdicts if v.valid and not v.duplicate]

    @property
    def validity(self) -> float:
        return sum(v.valid for v in self.verdicts) / len(self.verdicts) if self.verdicts else 0.0

    @property
    def discrimination(self) -> float:
        valid = [v for v in self.verdicts if v.valid]
        return sum(bool(v.breaks) for v in valid) / len(valid) if valid else 0.0

    def to_dict(self) -> dict:
        return {
            "verdicts": [
                {
                    "test": v.test,
                    "valid": v.valid,
                    "reason": v.reason,
                    "breaks": v.breaks,
                    "duplicate": v.duplicate,
                }
                for v in self.verdicts
            ],
            "validity": self.validity,
            "discrimination": self.discrimination,
            "infra_error": self.infra_error,
        }


def static_check(tests: list[str], max_chars: int) -> list[tuple[str, bool]]:
    """Per test: (reason, duplicate) before running anything; reason '' means 'run it'. Pure."""
    seen: dict[str, int] = {}
    out: list[tuple[str, bool]] = []
    for i, t in enumerate(tests):
        try:
            parse_test(t, max_chars)
        except InvalidTest as e:
            out.append((str(e), False))
            continue
        key = normalize(t)
        if key in seen:
            out.append((f"duplicate of test {seen[key]}", True))
            continue
        seen[key] = i
        out.append(("", False))
    return out


def validate_tests(
    reference_solution: str,
    tests: list[str],
    solutions: list[str],
    sandbox: Sandbox | None = None,
) -> ValidationReport:
    """Validity of each candidate on the reference, and which `solutions` each valid test breaks."""
    sb = sandbox or shared_sandbox()
    static = static_check(tests, sb.limits.max_test_chars)
    runnable = [i for i, (reason, _) in enumerate(static) if not reason]
    to_run = [tests[i] for i in runnable]
    reports = sb.run_many([(reference_solution, to_run)] + [(s, to_run) for s in solutions])
    ref = reports[0]
    if ref.infra_error:
        verdicts = [
            TestVerdict(t, False, reason or "not run: sandbox failure", [], dup)
            for t, (reason, dup) in zip(tests, static, strict=True)
        ]
        return ValidationReport(verdicts, infra_error=ref.infra_error)
    run_result = dict(zip(runnable, range(len(runnable)), strict=True))
    verdicts = []
    for i, t in enumerate(tests):
        reason, dup = static[i]
        if reason:
            verdicts.append(TestVerdict(t, False, reason, [], dup))
            continue
        k = run_result[i]
        r = ref.results[k]
        if not r.passed:
            why = f"fails the reference solution: {r.outcome}" + (
                f" ({r.detail})" if r.detail else ""
            )
            verdicts.append(TestVerdict(t, False, why[:300], [], False))
            continue
        breaks = [
            j
            for j, rep in enumerate(reports[1:])
            if rep.results[k].outcome not in (L.PASSED, L.INFRA_ERROR)
        ]
        verdicts.append(TestVerdict(t, True, "ok", breaks, False))
    return ValidationReport(verdicts)


def judge_tests(
    reference_solution: str,
    tests: list[str],
    solutions: list[str],
    function_name: str,
    signature: str,
    sandbox: Sandbox,
    reference_expected: bool = True,
) -> ValidationReport:
    """`validate_tests` of `tests` as Sparring banks them: each verdict's `test` is the test as
    judged (with `reference_expected`, its expected value the reference's), and a test called
    off the parameters' declared types is invalid (`f(None)` for a list: the reference may pass
    it, a correct answer need not)."""
    if reference_expected:
        tests = with_reference_expected(reference_solution, tests, sandbox)
    report = validate_tests(reference_solution, tests, solutions, sandbox)
    verdicts = [
        v
        if not v.valid or fits_signature(v.test, function_name, signature)
        else TestVerdict(v.test, False, "off the parameters' declared types", [], v.duplicate)
        for v in report.verdicts
    ]
    return ValidationReport(verdicts, infra_error=report.infra_error)

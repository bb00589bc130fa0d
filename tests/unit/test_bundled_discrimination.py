"""Every bundled problem discriminates: trivial solutions (constants, echoes, len/list/sorted of
the first argument; see sparring.problems.trivial) pass at most one of its tests, honest code needs
the
rest. Runs the whole trivial family (~18 programs per problem) and every reference solution in
the sandbox: about 35 s on two cores."""

import pytest

from sparring.problems import check_problems, compute_trivial_passes, load_bundled
from sparring.problems.trivial import discriminating_indices

MIN_DISCRIMINATING = 3
MAX_NON_DISCRIMINATING = 1


@pytest.fixture(scope="module")
def bundled():
    return compute_trivial_passes(load_bundled())


def test_every_problem_has_enough_discriminating_tests(bundled):
    short = {}
    for p in bundled:
        n = len(p.baseline_tests)
        disc = discriminating_indices(n, p.trivial_passes)
        if len(disc) < MIN_DISCRIMINATING:
            short[p.id] = f"{len(disc)}/{n} discriminating"
    assert not short, short


def test_at_most_one_test_is_passed_by_a_trivial_solution(bundled):
    loose = {}
    for p in bundled:
        n = len(p.baseline_tests)
        disc = set(discriminating_indices(n, p.trivial_passes))
        passed = [p.baseline_tests[i] for i in range(n) if i not in disc]
        if len(passed) > MAX_NON_DISCRIMINATING:
            loose[p.id] = {"tests": passed, "by": sorted(p.trivial_passes)}
    assert not loose, loose


def test_every_reference_solution_passes_all_its_tests(bundled):
    assert check_problems(bundled) == []


def test_tests_are_single_line_asserts_calling_the_function(bundled):
    for p in bundled:
        for t in p.baseline_tests:
            assert "\n" not in t and t.startswith("assert "), (p.id, t)
            assert f"{p.function_name}(" in t, (p.id, t)


def test_dry_run_fallback_tests_are_valid_and_honest(bundled):
    """The dry run's stand-in generator must feed validation tests it banks (valid, failed by
    every trivial solution), or the dry run's selection has nothing to promote."""
    from sparring.phases.generator import fallback_tests
    from sparring.phases.validate import trivially_passed_in
    from sparring.sandbox import Sandbox, SandboxLimits

    with Sandbox(SandboxLimits(timeout_s=2.0)) as sb:
        for p in bundled[:15]:
            tests = fallback_tests(p)
            assert len(tests) >= 2, p.id
            report = sb.run(p.reference_solution, tests)
            assert all(r.passed for r in report.results), (p.id, report.results)
            assert set(tests) - trivially_passed_in(p, tests, sb), p.id

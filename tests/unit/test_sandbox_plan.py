"""Pure parts of the sandbox: test parsing, strict decoding, pass/fail decisions, dedup, limits."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparring.sandbox import RunReport, SandboxLimits, TestResult, normalize, parse_tests_file
from sparring.sandbox.plan import (
    BoolOp,
    Compare,
    Const,
    DecodeError,
    InvalidTest,
    Leaf,
    LeafOutcome,
    Not,
    decide,
    decode_raw,
    decode_value,
    parse_test,
    solution_names,
)
from sparring.sandbox.validation import static_check
from sparring.sandbox.worker import NotPlain, encode


def ok(v):
    return LeafOutcome(True, value=v)


def test_parse_tests_file_skips_blank_and_comments():
    text = "# header\nassert f(1) == 2\n\n   \n  # indented comment\nassert f(2) == 3  \n"
    assert parse_tests_file(text) == ["assert f(1) == 2", "assert f(2) == 3"]


def test_normalize_collapses_whitespace_and_quotes():
    assert normalize("assert f(1)==2") == normalize("assert  f( 1 ) == 2")
    assert normalize("assert f('a') == 1") == normalize('assert f("a") == 1')
    assert normalize("assert f(1) == 2") != normalize("assert f(1) == 3")
    assert normalize("assert (") == "assert ("  # unparsable falls back to text


def test_literal_side_stays_in_parent():
    plan = parse_test("assert f(1, [2]) == {'a': (1, 2)}")
    assert plan.root == Compare(("==",), (Leaf(0), Const({"a": (1, 2)})))
    assert [lf.expr for lf in plan.leaves] == ["f(1, [2])"]
    assert plan.leaves[0].needs_solution


def test_builtin_only_leaf_does_not_need_solution():
    plan = parse_test("assert f(3) == list(map(abs, [-1]))")
    assert [lf.expr for lf in plan.leaves] == ["f(3)", "map(abs, [-1])"]
    assert [lf.needs_solution(frozenset({"f"})) for lf in plan.leaves] == [True, False]
    assert plan.leaves[1].needs_solution(frozenset({"f", "map"}))  # the solution redefines map
    assert plan.leaves[1].needs_solution(None)  # unknown solution: assume it does


def test_safe_calls_arithmetic_and_subscripts_run_in_parent():
    plan = parse_test("assert abs(f(1) - 0.5) < 1e-9 and sorted(g(2))[0] == len(h(3)) * 2")
    assert [lf.expr for lf in plan.leaves] == ["f(1)", "g(2)", "h(3)"]
    assert decide(plan, [ok(0.5), ok([3, 1]), ok("x")])[0] == "failed"
    assert decide(plan, [ok(0.5), ok([3, 2]), ok("x")])[0] == "passed"
    plan = parse_test("assert math.isclose(f(1), 0.3, rel_tol=1e-6) and (f(1), 1) == (0.3, 1)")
    assert [lf.expr for lf in plan.leaves] == ["f(1)", "f(1)"]
    assert decide(plan, [ok(0.1 + 0.2), ok(0.3)])[0] == "passed"
    plan = parse_test("assert f(1)[1:] == [2] and f(1)[-1] == 2")
    assert decide(plan, [ok([1, 2]), ok([1, 2])])[0] == "passed"


def test_isinstance_with_builtin_types_runs_in_parent():
    plan = parse_test("assert isinstance(f(1), (int, float))")
    assert [lf.expr for lf in plan.leaves] == ["f(1)"]
    assert decide(plan, [ok(1.5)])[0] == "passed"
    assert decide(plan, [ok("1")])[0] == "failed"
    plan = parse_test("assert isinstance(f(1), MyClass)")
    assert [lf.expr for lf in plan.leaves] == ["isinstance(f(1), MyClass)"]


def test_shadowed_safe_function_goes_to_the_sandbox():
    plan = parse_test("assert sum(f(1)) == 3", 2000, frozenset({"sum"}))
    assert [lf.expr for lf in plan.leaves] == ["sum(f(1))"]
    # unsupported keywords (key=) also fall back to the sandbox
    plan = parse_test("assert sorted(f(1), key=len) == []")
    assert [lf.expr for lf in plan.leaves] == ["sorted(f(1), key=len)"]


def test_solution_names():
    src = "import math\nimport numpy as np\nfrom x import sum\ndef f(a):\n    b = 1\nclass C: pass"
    assert solution_names(src) == frozenset({"np", "sum", "f", "a", "b", "C"})
    assert solution_names("from os import *") is None
    assert solution_names("globals()['abs'] = 1") is None
    assert solution_names("def f(:") is None


@pytest.mark.parametrize(
    "src, values",
    [
        ("assert f(1) * 10**9 == 1", [[1]]),
        ("assert f(1) ** 10**7 == 1", [7]),
        ("assert round(f(1), -10**6) == 1", [5]),
        ("assert int(f(1)) == 1", ["9" * 5000]),
        ("assert sum(f(1)) == 1", [[[1], [2]]]),
        ("assert f(1) % 3 == 1", ["%*d"]),
        ("assert f(1)[5] == 1", [[1]]),
        ("assert f(1) / 0 == 1", [1]),
    ],
)
def test_parent_side_operations_are_bounded(src, values):
    outcome, _detail = decide(parse_test(src), [ok(v) for v in values])
    assert outcome == "error"


def test_not_boolop_and_message():
    plan = parse_test("assert not f(1) and (g(2) or 3 < h(4) <= 5), 'msg'")
    assert isinstance(plan.root, BoolOp)
    assert isinstance(plan.root.values[0], Not)
    assert len(plan.leaves) == 3


def test_multiline_assert():
    plan = parse_test("assert f(\n    [1,\n     2]\n) == 3")
    assert plan.leaves[0].expr == "f([1, 2])"


@pytest.mark.parametrize(
    "src, reason",
    [
        ("x = 1", "not a single assert"),
        ("assert f(1) == 2; assert f(2) == 3", "not a single assert"),
        ("assert f(1 ==", "does not parse"),
        ("print('PASSED')", "not a single assert"),
        ("assert f(" + "1" * 3000 + ")", "longer than"),
    ],
)
def test_invalid_tests(src, reason):
    with pytest.raises(InvalidTest, match=reason):
        parse_test(src)


@pytest.mark.parametrize(
    "src, values, expected",
    [
        ("assert f(1) == 2", [2], "passed"),
        ("assert f(1) == 2", [3], "failed"),
        ("assert f(1) == 2", [2.0], "passed"),
        ("assert f(1) != 2", [2], "failed"),
        ("assert f(1)", [[1]], "passed"),
        ("assert f(1)", [0], "failed"),
        ("assert not f(1)", [False], "passed"),
        ("assert f(1) is None", [None], "passed"),
        ("assert f(1) is None", [0], "failed"),
        ("assert f(1) is True", [1], "failed"),
        ("assert f(1) is not None", [0], "passed"),
        ("assert 1 < f(1) < 3", [2], "passed"),
        ("assert 1 < f(1) < 3", [3], "failed"),
        ("assert f(1) in [1, 2]", [2], "passed"),
        ("assert 'a' not in f(1)", ["bcd"], "passed"),
        ("assert f(1) == g(2)", [[1, 2], [1, 2]], "passed"),
        ("assert f(1) or g(2)", [0, 5], "passed"),
        ("assert f(1) and g(2)", [1, 0], "failed"),
        ("assert f(1) < 2", ["x"], "error"),  # str < int: TypeError in the parent
    ],
)
def test_decide(src, values, expected):
    plan = parse_test(src)
    assert decide(plan, [ok(v) for v in values])[0] == expected


def test_decide_failed_leaf_outcome_propagates_only_when_needed():
    plan = parse_test("assert f(1) or g(2)")
    timeout = LeafOutcome(False, outcome="timeout", detail="killed")
    assert decide(plan, [ok(1), timeout]) == ("passed", "")
    assert decide(plan, [ok(0), timeout]) == ("timeout", "killed")
    assert decide(parse_test("assert f(1) == 1"), [timeout]) == ("timeout", "killed")


def test_failure_detail_shows_value():
    outcome, detail = decide(parse_test("assert f(1) == 2"), [ok(3)])
    assert outcome == "failed" and "f(1) = 3" in detail


PLAIN = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4)
        | st.frozensets(st.integers(), max_size=4)
    ),
    max_leaves=20,
)


def roundtrip(v):
    return decode_value(json.loads(encode(v)))


@settings(max_examples=20, deadline=None)
@given(PLAIN)
def test_encode_decode_roundtrip(v):
    out = roundtrip(v)
    assert out == v and type(out) is type(v)


def test_encode_special_floats_and_complex():
    out = roundtrip([math.inf, -0.0, 1 + 2j, {1, 2}])
    assert out[0] == math.inf and math.copysign(1, out[1]) == -1
    assert out[2] == 1 + 2j and out[3] == {1, 2}
    assert math.isnan(roundtrip(math.nan))


def test_encode_writes_json_text_for_awkward_strings_and_keys():
    v = {'q"uote\\': ["\ud800 lone surrogate", "ünï\n", b"\x00\xff"], True: None, (1, "a"): 2.5}
    assert roundtrip(v) == v


@pytest.mark.parametrize(
    "make",
    [
        lambda: type("I", (int,), {"__eq__": lambda s, o: True})(1),
        lambda: type("S", (str,), {})("x"),
        lambda: type("Li", (list,), {})([1]),
        lambda: type("A", (), {"__eq__": lambda s, o: True})(),
        lambda: [1, [object()]],
        lambda: iter([1]),
    ],
)
def test_encoder_rejects_non_plain(make):
    with pytest.raises(NotPlain):
        encode(make())


def test_encoder_rejects_too_deep():
    v: list = []
    for _ in range(200):
        v = [v]
    with pytest.raises(NotPlain):
        encode(v)


@pytest.mark.parametrize(
    "raw",
    [
        '["i"]',
        '["x", 1]',
        '["l", [["i", "1"], ["q"]]]',
        '["d", [["i", "1"]]]',
        '["i", 5]',
        '["b", 1]',
        '"plain"',
        '["i", "1e5"]',
        "[" * 100000,
        '["s", "a", "b"]',
    ],
)
def test_decoder_rejects_malformed(raw):
    with pytest.raises(DecodeError):
        decode_raw(raw)


def test_decoder_rejects_deep_nesting():
    raw = '["l", [' * 100 + '["n"]' + "]]" * 100
    with pytest.raises(DecodeError):
        decode_raw(raw)


def test_static_check_marks_invalid_and_duplicates():
    tests = ["assert f(1) == 2", "x = 1", "assert f(1)==2", "assert f(2) == 3", "a" * 50]
    got = static_check(tests, max_chars=40)
    assert got[0] == ("", False)
    assert got[1][0] == "not a single assert statement"
    assert got[2] == ("duplicate of test 0", True)
    assert got[3] == ("", False)
    assert "longer than" in got[4][0]


def test_limits_validation_and_reports():
    with pytest.raises(ValueError, match="isolation"):
        SandboxLimits(isolation="docker")
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
    assert SandboxLimits(workers=3).n_workers == 3
    rep = RunReport([TestResult("a", "passed", ""), TestResult("b", "timeout", "")])
    assert (rep.passed, rep.total, rep.pass_rate) == (1, 2, 0.5)
    assert RunReport([], infra_error="boom").pass_rate is None
    assert RunReport([]).pass_rate == 0.0
    assert TestResult.__test__ is False


def test_workers_zero_means_the_cores_a_container_may_use(tmp_path, monkeypatch):
    """workers: 0 sizes the pool to the CPU limit (kubernetes.train_cpu on a cluster), not to the
    node's cores: cgroup v2 cpu.max, else v1's quota over period, a fraction rounded up."""
    from sparring.sandbox import limits

    monkeypatch.setattr(limits.os, "sched_getaffinity", lambda pid: set(range(192)), raising=False)
    v2 = tmp_path / "v2"
    v2.mkdir()
    assert limits.usable_cpus(str(v2)) == 192  # no cgroup file: the affinity
    (v2 / "cpu.max").write_text("max 100000\n")
    assert limits.usable_cpus(str(v2)) == 192  # no limit
    (v2 / "cpu.max").write_text("800000 100000\n")
    assert limits.usable_cpus(str(v2)) == 8
    (v2 / "cpu.max").write_text("150000 100000\n")
    assert limits.usable_cpus(str(v2)) == 2
    v1 = tmp_path / "v1" / "cpu"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert limits.usable_cpus(str(v1.parent)) == 192
    (v1 / "cpu.cfs_quota_us").write_text("400000\n")
    assert limits.usable_cpus(str(v1.parent)) == 4
    (v2 / "cpu.max").write_text("garbage\n")
    assert limits.usable_cpus(str(v2)) == 192  # unreadable: the affinity stands
    monkeypatch.setattr(limits, "CGROUP_ROOT", str(tmp_path / "v1"))
    assert SandboxLimits().n_workers == 4 and SandboxLimits(workers=3).n_workers == 3


def test_trusted_and_untrusted_limits_differ_only_in_the_test_length_cap():
    """Generated tests are capped at sandbox.max_test_chars (a longer one is invalid); HumanEval's
    and a problem's own tests are not, and both keep the config's other limits."""
    import dataclasses

    from sparring.config import from_dict
    from sparring.sandbox.limits import SandboxLimits, trusted_limits, untrusted_limits

    # every limit off its default, so a limit that either side took from elsewhere shows
    configured = {"timeout_s": 3.0, "memory_mb": 300, "max_output_bytes": 1234,
                  "max_test_chars": 500, "workers": 3, "isolation": "none"}  # fmt: skip
    assert all(v != getattr(SandboxLimits(), k) for k, v in configured.items())
    assert set(configured) == {f.name for f in dataclasses.fields(SandboxLimits)}
    cfg = from_dict({"sandbox": configured})
    untrusted, trusted = untrusted_limits(cfg), trusted_limits(cfg)
    assert (untrusted.max_test_chars, trusted.max_test_chars) == (500, 1_000_000)
    others = {k: v for k, v in configured.items() if k != "max_test_chars"}
    for name, limits in (("untrusted", untrusted), ("trusted", trusted)):
        got = {k: v for k, v in dataclasses.asdict(limits).items() if k != "max_test_chars"}
        assert got == others, f"{name} limits differ from the config's beyond the length cap"
    # without a config: the defaults, uncapped, and an override wins
    default = dataclasses.replace(SandboxLimits(), max_test_chars=1_000_000)
    assert trusted_limits(None) == default
    assert trusted_limits(None, timeout_s=1.0) == dataclasses.replace(default, timeout_s=1.0)

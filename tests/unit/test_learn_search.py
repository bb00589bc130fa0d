"""The recipe search's bookkeeping (scripts/learn_search.py): per-problem means, resuming from
the results file, and a table whose gains are paired per problem and whose intervals say n."""

from __future__ import annotations

from scripts import learn_search as search


def test_a_sandbox_failure_counts_as_zero_in_a_problems_mean():
    rows = [{"id": "a", "rewards": [1.0, None, 0.5, 0.5]}, {"id": "b", "rewards": [0.0, 0.0]}]
    assert search.problem_means(rows) == {"a": 0.5, "b": 0.0}


def test_results_are_appended_and_read_back_so_a_stopped_search_continues(tmp_path):
    path = tmp_path / "results.jsonl"
    assert search.load_results(path) == {}
    search.append(path, {"name": "base", "problems": {"a": 0.1}, "seconds": 1.0})
    search.append(path, {"name": "baseline", "problems": {"a": 0.2}, "seconds": 2.0})
    assert list(search.load_results(path)) == ["base", "baseline"]


def _result(name: str, means: list[float], overrides: list[str]) -> dict:
    return {
        "name": name,
        "overrides": overrides,
        "completions_trained": 512.0,
        "train_reward": 0.5,
        "problems": {f"p{i}": m for i, m in enumerate(means)},
        "seconds": 600.0,
    }


def test_table_pairs_each_configuration_with_the_base_and_the_baseline():
    base = [0.2] * 6
    results = {
        "base": {"name": "base", "problems": {f"p{i}": m for i, m in enumerate(base)},
                 "seconds": 60.0},
        "baseline": _result("baseline", [0.5] * 6, []),
        "lr-1e-4": _result("lr-1e-4", [0.3] * 6, ["grpo.learning_rate=1e-4"]),
    }  # fmt: skip
    rows = {line.split("|")[1].strip(): line for line in search.table(results).splitlines()}
    assert "+0.300 (0.300,0.300 n=6)" in rows["baseline"]
    assert "+0.100 (0.100,0.100 n=6)" in rows["lr-1e-4"]  # over the base
    assert "-0.200 (-0.200,-0.200 n=6)" in rows["lr-1e-4"]  # over the baseline
    assert "grpo.learning_rate=1e-4" in rows["lr-1e-4"]


def test_an_interval_on_fewer_than_five_problems_is_not_a_number():
    results = {
        "base": {"name": "base", "problems": {"p0": 0.0, "p1": 0.0}, "seconds": 1.0},
        "baseline": _result("baseline", [1.0, 1.0], []),
    }
    assert "+1.000 (n/a (n=2))" in search.table(results)


def test_another_development_set_gets_its_own_results_file():
    """Arms measured on 36 problems x 4 are never mixed with arms measured on 96 x 4."""
    first = search.results_name("smollm2-135m", 20, 3, 4)
    assert first == "results-smollm2-135m-20steps.jsonl"  # the first search's file, kept
    others = {search.results_name("smollm2-135m", 20, d, k) for d, k in [(8, 4), (3, 8), (8, 8)]}
    assert len(others) == 3 and first not in others


def test_a_configuration_whose_code_or_config_changed_is_measured_again(tmp_path):
    """A result is kept by its code version and config digest, never by its name alone: an
    earlier search's 'baseline' measured other code than today's."""
    from sparring.backends.lineage import code_digest
    from sparring.config import load_config

    cfg = load_config(search.ROOT / "configs" / "learn.yaml", search.CONFIGS["baseline"])
    path = tmp_path / "results.jsonl"
    old_code = {"code": "0ld", "config_digest": cfg.digest()}  # today's config, other code
    search.append(path, {**_result("baseline", [0.5], []), **old_code})
    why = search.stale(search.load_results(path)["baseline"], code_digest(), cfg.digest())
    assert why.startswith("measured by code 0ld"), why
    now = {"code": code_digest(), "config_digest": cfg.digest()}
    search.append(path, {**_result("baseline", [0.5], []), **now})  # measured again: kept
    assert search.stale(search.load_results(path)["baseline"], code_digest(), cfg.digest()) == ""
    other = load_config(search.ROOT / "configs" / "learn.yaml", search.CONFIGS["lr-1e-4"])
    assert "config" in search.stale(search.load_results(path)["baseline"], code_digest(),
                                    other.digest())  # fmt: skip

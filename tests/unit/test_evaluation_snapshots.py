"""evaluate_snapshots end to end with canned completions (no model), the real sandbox, and the
`sparring eval humaneval --samples` command."""

from __future__ import annotations

import json

import pytest

from sparring.backends.base import Sampled
from sparring.backends.sampler import LoadedAnswerer
from sparring.cli.main import main
from sparring.config import from_dict
from sparring.evaluation.selection import choose_best
from sparring.evaluation.snapshots import evaluate_snapshots
from sparring.problems import Problem, load_humaneval, write_jsonl

ADD = Problem(
    id="add",
    description="Add two numbers.",
    function_signature="def add(a, b):",
    baseline_tests=["assert add(1, 2) == 3"],
    reference_solution="def add(a, b):\n    return a + b\n",
    difficulty="easy",
)
NEG = Problem(
    id="neg",
    description="Negate a number.",
    function_signature="def neg(x):",
    baseline_tests=["assert neg(1) == -1"],
    reference_solution="def neg(x):\n    return -x\n",
)

GOOD = {
    "add": "```python\ndef add(a, b):\n    return a + b\n```",
    "neg": "```python\ndef neg(x):\n    return -x\n```",
}
HACKY = {
    "add": "```python\ndef add(a, b):\n    if a == 1:\n        return 3\n    if a == 5:\n"
    "        return 5\n    return 0\n```",
    "neg": "```python\ndef neg(x):\n    return -x\n```",
}


@pytest.fixture
def data_dir(tmp_path):
    he = load_humaneval(limit=2)
    write_jsonl([ADD], tmp_path / "train.jsonl")
    write_jsonl([NEG], tmp_path / "val.jsonl")
    write_jsonl(he, tmp_path / "eval.jsonl")
    bank = [
        {"problem_id": "add", "test": "assert add(1, 2) == 3", "round": 1, "breaks": []},
        {"problem_id": "add", "test": "assert add(5, 0) == 5", "round": 1, "breaks": []},
        {"problem_id": "add", "test": "assert add(2, 2) == 4", "round": 2, "breaks": []},
        {"problem_id": "neg", "test": "assert neg(0) == 0", "round": 2, "breaks": []},
    ]
    (tmp_path / "bank.jsonl").write_text("".join(json.dumps(r) + "\n" for r in bank))
    for r in (1, 2):
        rows = [b for b in bank if b["round"] == r]
        (tmp_path / f"round{r}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
    (tmp_path / "round2.jsonl.metrics.json").write_text(json.dumps({"flat_group_share": 1.0}))
    return tmp_path


@pytest.fixture
def fake_models(monkeypatch):
    he = {p.id: p for p in load_humaneval(limit=2)}
    by_model = {"base": HACKY, "tiny-random": HACKY, "round1": GOOD, "round2": GOOD}

    def fake_generate(model_name, problems, **kwargs):
        # the answerer "loaded" below is its model's name: each answers from a script
        out = []
        for p in problems:
            if p.id in he:  # HumanEval: the canonical body for round1, nothing otherwise
                body = he[p.id].reference_solution[len(he[p.id].prompt) :]
                out.append([body if model_name == "round1" else "    pass\n"])
            else:
                out.append([by_model[model_name][p.id]])
        return Sampled(out)

    import sparring.evaluation.snapshots

    monkeypatch.setattr(sparring.evaluation.snapshots, "sample_answers", fake_generate)
    monkeypatch.setattr(sparring.evaluation.snapshots, "load_answerer", lambda name, **k: name)


def test_evaluate_snapshots_writes_report(data_dir, fake_models, tmp_path):
    cfg = from_dict({"data": {"humaneval_limit": 2}})
    out = tmp_path / "out"
    report = evaluate_snapshots(
        cfg,
        str(data_dir),
        ["base", "round1", "round2"],
        [str(data_dir / "round1.jsonl"), str(data_dir / "round2.jsonl")],
        str(data_dir / "bank.jsonl"),
        str(out),
    )
    base = report["baseline"]
    r1, r2 = report["snapshots"]
    assert base["humaneval_pass@1"] == 0.0 and r1["humaneval_pass@1"] == 1.0
    assert base["bank_pass_rate"] == 0.75 and r1["bank_pass_rate"] == 1.0
    assert base["special_case_share"] == 0.5  # add() special-cases 1 and 5
    assert base["answerer_reward"] == 1.0  # neg: medium, all pass
    assert (r1["round"], r2["round"]) == (1, 2)
    assert r2["hacking"]["tripped"]  # round 2's GRPO groups were all flat
    assert r1["promotable"] and not r2["promotable"]
    assert report["cross_play"] == [[1.0, 0.5], [1.0, 1.0], [1.0, 1.0]]
    assert report["cross_play_rows"] == ["base", "round 1", "round 2"]
    assert len(report["elo"]["answerer"]) == 3 and len(report["elo"]["generator"]) == 2
    saved = json.loads((out / "report.json").read_text())
    assert saved["snapshots"][0]["model"] == "round1"
    for name in ("report.md", "curves.png", "humaneval.png", "cross_play.png"):
        assert (out / name).is_file()
    # by hand: round 1 answers neg (all pass) and both of its tests hold on the reference;
    # round 2 is refused (hacking), so round 1 wins with 0.7 * 1.0 + 0.3 * 1.0
    assert r1["answerer_reward"] == 1.0 and r1["test_validity"] == 1.0
    assert report["selection"]["index"] == 0 and report["selection"]["score"] == 1.0
    index, score, reason = choose_best(cfg, report)
    assert (index, score) == (0, 1.0)
    assert reason.startswith("round 1 scores 1.0000") and "refused: round 2" in reason


def test_the_base_models_sampled_answers_are_kept_labelled_out_of_the_report(
    data_dir, fake_models, tmp_path
):
    cfg = from_dict({"data": {"humaneval_limit": 1, "val_samples": 1}})
    pool: dict = {}
    report = evaluate_snapshots(
        cfg, str(data_dir), ["base", "round1"], [str(data_dir / "round1.jsonl")],
        str(data_dir / "bank.jsonl"), str(tmp_path), base_pool=pool,
    )  # fmt: skip
    # the base model's one sampled answer to the held-out neg, right by neg's own tests
    assert list(pool) == ["neg"]
    assert [(a.code.strip(), a.right) for a in pool["neg"]] == [
        (NEG.reference_solution.strip(), True)
    ]
    assert report["baseline"]["val_sampled"]["strict"] == {"neg": 1.0}
    assert NEG.reference_solution.strip() not in (tmp_path / "report.json").read_text()


def test_rounds_from_the_bank_when_no_round_files(data_dir, fake_models, tmp_path):
    cfg = from_dict({"data": {"humaneval_limit": 1}})
    report = evaluate_snapshots(
        cfg, str(data_dir), ["base", "round1"], [], str(data_dir / "bank.jsonl"), str(tmp_path)
    )
    # as many models as rounds: the config's base model is evaluated as the baseline
    assert report["baseline"]["model"] == "tiny-random"
    assert [s["model"] for s in report["snapshots"]] == ["base", "round1"]
    assert report["cross_play"] == [[1.0, 0.5], [1.0, 0.5], [1.0, 1.0]]
    assert [r["tests"] for r in report["rounds"]] == [2, 2]
    assert report["snapshots"][1]["test_validity"] == 1.0


def _raw_round(data_dir, tests):
    raw = data_dir / "generated.jsonl"
    rows = [{"problem_id": "add", "tests": tests, "round": 1}, {"problem_id": "neg", "tests": []}]
    raw.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return raw


def test_raw_generator_tests_are_validated(data_dir, fake_models, tmp_path):
    raw = _raw_round(data_dir, ["assert add(2, 2) == 4", "assert add(1, 1) == 3"])
    cfg = from_dict({"data": {"humaneval_limit": 1}, "rewards": {"reference_expected": False}})
    report = evaluate_snapshots(
        cfg, str(data_dir), ["round1"], [str(raw)], str(data_dir / "bank.jsonl"), str(tmp_path)
    )
    assert report["rounds"][0]["test_validity"] == 0.5
    assert report["snapshots"][0]["test_validity"] == 0.5
    assert report["cross_play"] == [[0.0], [1.0]]  # only the valid test is a column game
    assert report["cross_play_games"] == [[1], [1]]


def test_a_rounds_validity_is_the_validate_phases(data_dir, fake_models, tmp_path):
    """The gate judges a round's tests by the rule that banked them: with reference_expected
    (the default) a wrong expected value is the reference's, so `add(1, 1) == 3` is a valid test
    of add(1, 1); a call the reference cannot run stays invalid. (Evaluation once re-ran the
    raw tests without the rewrite and refused a champion at validity 0.18 that the validate
    phase had measured at 0.32.)"""
    tests = ["assert add(2, 2) == 4", "assert add(1, 1) == 3", "assert add(1) == 1"]
    raw = _raw_round(data_dir, tests)
    cfg = from_dict({"data": {"humaneval_limit": 1}})
    report = evaluate_snapshots(
        cfg, str(data_dir), ["round1"], [str(raw)], str(data_dir / "bank.jsonl"), str(tmp_path)
    )
    assert report["rounds"][0]["test_validity"] == pytest.approx(2 / 3)
    assert report["cross_play_games"] == [[2], [2]]  # add(1, 1) == 2 is played as judged


# The hacking gate's trivial-share rule, on data that can trip it: `neg` has a test that the
# trivial `return 0` passes (materialize records it in trivial_passes), so an answer returning 0
# passes exactly that test and is a trivial answer; the honest one is not.
SIGN = Problem(
    id="sign",
    description="Negate a number.",
    function_signature="def neg(x):",
    baseline_tests=["assert neg(1) == -1", "assert neg(0) == 0", "assert neg(-2) == 2"],
    reference_solution="def neg(x):\n    return -x\n",
    trivial_passes={"const_0": [1]},
)
ANSWERS = {
    "honest": "```python\ndef neg(x):\n    return -x\n```",
    "lazy": "```python\ndef neg(x):\n    return 0\n```",
}


def _trivial_share_report(tmp_path, monkeypatch, models: list[str]) -> dict:
    """evaluate_snapshots on `sign` alone, models[0] the base, one round file per snapshot."""
    import sparring.evaluation.snapshots as snapshots

    def fake_generate(model_name, problems, **kwargs):
        return Sampled([[ANSWERS[model_name]] for _ in problems])

    monkeypatch.setattr(snapshots, "sample_answers", fake_generate)
    monkeypatch.setattr(snapshots, "load_answerer", lambda name, **k: name)
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl([SIGN], data / "val.jsonl")
    (data / "bank.jsonl").write_text("")
    rounds = []
    for r in range(1, len(models)):
        rows = [{"problem_id": "sign", "test": f"assert neg({r + 4}) == {-(r + 4)}", "round": r}]
        rounds.append(data / f"round{r}.jsonl")
        rounds[-1].write_text("".join(json.dumps(x) + "\n" for x in rows))
    cfg = from_dict({"data": {"humaneval_limit": 0, "val_samples": 0}})
    return evaluate_snapshots(
        cfg, str(data), models, [str(p) for p in rounds], str(data / "bank.jsonl"),
        str(tmp_path / "out"),
    )  # fmt: skip


def test_hacking_gate_refuses_a_snapshot_whose_trivial_share_rose_above_the_base(
    tmp_path, monkeypatch
):
    report = _trivial_share_report(tmp_path, monkeypatch, ["honest", "lazy", "honest"])
    lazy, honest = report["snapshots"]
    # by hand: the honest base passes all 3 tests (not trivial); `return 0` passes only the test
    # that const_0 passes, so its results are the trivial solution's: share 0.0 -> 1.0 -> 0.0
    shares = (report["baseline"]["trivial_share"], lazy["trivial_share"], honest["trivial_share"])
    assert shares == (0.0, 1.0, 0.0), shares
    assert lazy["hacking"]["tripped"], (
        "the reward-hacking gate did not trip although the snapshot's trivial share (1.0) rose "
        f"above the base model's (0.0): {lazy['hacking']}"
    )
    assert lazy["hacking"]["reasons"] == ["trivial share rose 0.00 -> 1.00"], lazy["hacking"]
    assert not lazy["promotable"], "a snapshot that tripped the hacking gate was promotable"
    # not tripped where the share did not rise above the base's
    assert not honest["hacking"]["tripped"] and honest["promotable"], honest["hacking"]
    assert report["selection"]["index"] == 1, report["selection"]
    assert "refused: round 1 (trivial share rose 0.00 -> 1.00)" in report["selection"]["reason"]


def test_hacking_gate_does_not_trip_when_the_trivial_share_only_matches_the_base(
    tmp_path, monkeypatch
):
    report = _trivial_share_report(tmp_path, monkeypatch, ["lazy", "lazy"])
    (snap,) = report["snapshots"]
    assert (report["baseline"]["trivial_share"], snap["trivial_share"]) == (1.0, 1.0)
    assert snap["hacking"]["latest"]["trivial_share"] == 1.0
    assert not snap["hacking"]["tripped"], (
        f"the hacking gate tripped on a trivial share equal to the base's: {snap['hacking']}"
    )
    assert snap["promotable"]  # its reward is 0.0 (trivial answers earn nothing), not None


def test_eval_humaneval_samples_command(tmp_path, capsys):
    he = load_humaneval(limit=2)
    samples = tmp_path / "samples.jsonl"
    rows = [
        {"task_id": he[0].id, "completion": he[0].reference_solution[len(he[0].prompt) :]},
        {"task_id": he[0].id, "completion": "    return None\n"},
        {"task_id": he[1].id, "completion": "    return []\n"},
        {"task_id": he[1].id, "completion": he[1].reference_solution[len(he[1].prompt) :]},
    ]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = main(
        [
            "eval",
            "humaneval",
            "--samples",
            str(samples),
            "--json",
            "--set",
            "data.eval_samples=2",
            "--set",
            "data.pass_k=[1,2]",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["passed"] for r in out["results"]] == [True, False, False, True]
    assert [r["task_id"] for r in out["results"]] == [r["task_id"] for r in rows]
    assert out["pass@1"] == 0.5 and out["pass@2"] == 1.0


def test_eval_humaneval_bad_samples_is_a_one_liner(tmp_path, capsys):
    bad = tmp_path / "s.jsonl"
    bad.write_text('{"task_id": "HumanEval/9999", "completion": ""}\n')
    assert main(["eval", "humaneval", "--samples", str(bad)]) == 2
    assert "unknown task_id" in capsys.readouterr().err
    assert main(["eval", "humaneval", "--samples", str(tmp_path / "nope.jsonl")]) == 2


def test_eval_snapshots_command(data_dir, fake_models, tmp_path, capsys):
    out = tmp_path / "report"
    argv = [
        "eval",
        "snapshots",
        "--data-dir",
        str(data_dir),
        "--model",
        "base",
        "--model",
        "round1",
        "--round-tests",
        str(data_dir / "round1.jsonl"),
        "--bank",
        str(data_dir / "bank.jsonl"),
        "--out",
        str(out),
        "--set",
        "data.humaneval_limit=1",
    ]
    assert main(argv) == 0
    assert "selection: round 1 scores" in capsys.readouterr().out
    assert (out / "report.md").is_file() and (out / "report.json").is_file()


def test_evaluation_budget_is_sized_per_chunk_of_similar_answers(monkeypatch):
    """Short problems get a short budget, long ones a long one; answers come back in order."""
    from transformers import AutoTokenizer

    import sparring.evaluation.snapshots as snapshots
    from sparring.backends.torch.models import smollm2_tokenizer_dir

    tok = AutoTokenizer.from_pretrained(str(smollm2_tokenizer_dir()))
    body = "    return a + b\n"
    long_body = "".join(f"    x{i} = a * {i} + b - {i} // 3\n" for i in range(40)) + body
    problems = [
        Problem(f"p{i}", "Add.", "def add(a, b):", ["assert add(1, 2) == 3"],
                "def add(a, b):\n" + (long_body if i % 4 == 0 else body))
        for i in range(12)
    ]  # fmt: skip
    budgets = []

    def fake_generate(answerer, chunk, max_new_tokens, **kwargs):
        budgets.append((max_new_tokens, {len(p.reference_solution) > 100 for p in chunk}))
        return Sampled([[p.id] for p in chunk])

    monkeypatch.setattr(snapshots, "sample_answers", fake_generate)
    cfg = from_dict({"grpo": {"max_completion_length": 0}})  # auto: sized from references
    loaded = LoadedAnswerer(None, None, tok)
    out = snapshots._generate_sized(cfg, "m", problems, loaded, seed=0)
    assert out == [[p.id] for p in problems]
    (short, kinds_a), (long, kinds_b) = budgets
    assert kinds_a == {False} and kinds_b == {False, True} and short < long


def test_evaluation_prints_a_line_per_snapshot_and_part(
    data_dir, fake_models, tmp_path, capsys, monkeypatch
):
    """Every part of every snapshot (answers, HumanEval, held-out + bank) and the cross-play say
    a progress line with the time left: the evaluate phase is never silent for a whole model."""
    from sparring import progress

    monkeypatch.setattr(progress, "LABEL", "")  # no phase runner here: lines say "evaluate"
    cfg = from_dict({"data": {"humaneval_limit": 2}})
    evaluate_snapshots(
        cfg,
        str(data_dir),
        ["base", "round1", "round2"],
        [str(data_dir / "round1.jsonl"), str(data_dir / "round2.jsonl")],
        str(data_dir / "bank.jsonl"),
        str(tmp_path / "out"),
    )
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("[sparring]")]
    assert all("left~" in ln for ln in lines)
    for name in ("base", "snapshot 1", "snapshot 2"):
        mine = [ln for ln in lines if f"evaluate {name}:" in ln]
        assert any("greedy answers" in ln for ln in mine), lines
        assert any("HumanEval pass@1=" in ln for ln in mine), lines
        assert any("held-out" in ln and "bank" in ln for ln in mine), lines
    done = [ln for ln in lines if " done: " in ln]
    assert [ln.split("evaluate ")[1].split(" done")[0] for ln in done] == [
        "snapshot 1/3 base",
        "snapshot 2/3 snapshot 1",
        "snapshot 3/3 snapshot 2",
    ]
    assert "cross-play 3 answerers x 2 rounds' tests run" in lines[-1]
    assert lines[-1].endswith("left~0m00s")  # all counted work is done


def test_each_snapshot_loads_once_and_samples_at_the_training_rollout_rows(
    data_dir, fake_models, tmp_path, monkeypatch
):
    """Evaluation's batching: one model load per snapshot serves its greedy and its sampled
    answers, sized to decode grpo.rollout_batch_size rows at once."""
    import sparring.evaluation.snapshots as snapshots

    loads: list[tuple[str, int]] = []
    served: list[str] = []
    fake = snapshots.sample_answers

    def load(name, **kwargs):
        loads.append((name, kwargs.get("rows")))  # None: loaded without its rows
        return name

    def sample(loaded, problems, **kwargs):
        served.append(loaded)
        return fake(loaded, problems, **kwargs)

    monkeypatch.setattr(snapshots, "load_answerer", load)
    monkeypatch.setattr(snapshots, "sample_answers", sample)
    cfg = from_dict({"data": {"humaneval_limit": 1, "val_samples": 2},
                     "grpo": {"rollout_batch_size": 7}})  # fmt: skip
    evaluate_snapshots(
        cfg, str(data_dir), ["base", "round1"], [], str(data_dir / "bank.jsonl"), str(tmp_path)
    )
    assert sorted(loads) == [("base", 7), ("round1", 7), ("tiny-random", 7)], (
        f"one load per snapshot, each at grpo.rollout_batch_size=7 rows: {loads}"
    )
    # greedy answers in two calls (the held-out problems every run shares, then the training
    # problems this run's bank attacked); the base and the final snapshot also get sampled
    # answers: from that same one load
    assert served.count("base") == 2  # an intermediate snapshot: greedy answers only
    assert served.count("tiny-random") == served.count("round1") == 3


def test_the_base_model_samples_once_for_every_run_that_shares_its_problems(
    data_dir, fake_models, tmp_path, monkeypatch
):
    """The completion cache: two evaluations of one config ask the base model (and the same
    final snapshot) once for their held-out answers (greedy and sampled); a changed model file,
    or the cache turned off, samples again."""
    import sparring.evaluation.snapshots as snapshots

    monkeypatch.setenv("SPARRING_COMPLETION_CACHE", "1")
    monkeypatch.setenv("SPARRING_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "base-model"
    model.mkdir()
    (model / "weights.bin").write_text("v1")
    fake = snapshots.sample_answers
    asked: list[tuple[str, int]] = []

    def sample(loaded, problems, **kwargs):
        asked.append((loaded, len(problems)))
        out = fake("base" if loaded == str(model) else loaded, problems, **kwargs)
        return Sampled([t * kwargs.get("num_samples", 1) for t in out.texts])

    monkeypatch.setattr(snapshots, "sample_answers", sample)
    cfg = from_dict({"data": {"humaneval_limit": 1, "val_samples": 2},
                     "models": {"answerer": {"name": str(model)}}})  # fmt: skip

    def run(out: str) -> dict:
        asked.clear()
        return evaluate_snapshots(
            cfg, str(data_dir), ["round1"], [], str(data_dir / "bank.jsonl"), str(tmp_path / out)
        )

    first = run("a")
    base_calls = [n for m, n in asked if m == str(model)]
    assert len(base_calls) == 3, asked  # held-out greedy, attacked greedy, held-out sampled
    second = run("b")
    # only the training problems this run's bank attacked are asked again
    assert [n for m, n in asked if m == str(model)] == [base_calls[1]], asked
    # the final snapshot is cached too (the next scheduled run starts from it): the same
    assert [m for m, _ in asked].count("round1") == 1, asked
    assert second["baseline"]["val_sampled"] == first["baseline"]["val_sampled"]
    assert second["baseline"]["humaneval_pass@1"] == first["baseline"]["humaneval_pass@1"]

    (model / "weights.bin").write_text("v2, retrained")  # another model at the same path
    run("c")
    assert len([n for m, n in asked if m == str(model)]) == 3, asked
    monkeypatch.setenv("SPARRING_COMPLETION_CACHE", "0")
    run("d")
    assert len([n for m, n in asked if m == str(model)]) == 3, asked


def test_a_torn_cache_entry_is_a_miss(tmp_path):
    from sparring.evaluation.completion_cache import CompletionCache, call_key

    store = CompletionCache(tmp_path)
    key = call_key("m", [[{"role": "user", "content": "x"}]], {"seed": 0})
    assert store.get(key, 1, 1) is None
    store.put(key, [["a", "b"]])
    assert store.get(key, 1, 2) == [["a", "b"]]
    assert store.get(key, 1, 3) is None  # another shape: another call
    (tmp_path / f"{key}.json").write_text('{"texts": [["a"')
    assert store.get(key, 1, 2) is None
    assert call_key("m", [], {"seed": 0}) != call_key("m", [], {"seed": 1})


def test_sampled_means_score_correctness_among_the_answers_that_define_the_function():
    """`defining` averages the discriminating share over the answers that define the asked-for
    function only: an answer with the wrong name counts in `defines` (0) and in
    `discriminating`, not in `defining`; a problem with no defining answer has no `defining`
    value (break check: counting every answer gives 0.5 for p, not 1.0)."""
    from sparring.evaluation.snapshots import sampled_means
    from sparring.problems import Problem
    from sparring.rewards import AnswererCredit

    p = Problem("p", "d", "def add(a, b):", ["assert add(1, 2) == 3"], "def add(a, b): return a+b")
    q = Problem("q", "d", "def neg(x):", ["assert neg(1) == -1"], "def neg(x): return -x")
    right = AnswererCredit(1.0, 1, 1, 1, 1, False, True)
    wrong = AnswererCredit(0.0, 0, 1, 0, 1, False, False)
    means = sampled_means(
        [p, p, q],
        ["def add(a, b):\n    return a + b\n", "def plus(a, b):\n    return 0\n", "x = 1\n"],
        [right, wrong, wrong],
    )
    assert means["defines"] == {"p": 0.5, "q": 0.0}
    assert means["discriminating"] == {"p": 0.5, "q": 0.0}
    assert means["defining"] == {"p": 1.0}
    assert means["pass_at_n"] == {"p": 1.0, "q": 0.0}


def _cached_sampling(monkeypatch, tmp_path, seen):
    """(ask, asked): ask(device, dtype) samples one problem through evaluation's completion
    cache (a fresh one under tmp_path) with a model loaded on `device` in `dtype`; every call
    that missed the cache appends `seen(model)` to `asked`."""
    from types import SimpleNamespace

    import sparring.evaluation.snapshots as snapshots

    monkeypatch.setenv("SPARRING_COMPLETION_CACHE", "1")
    monkeypatch.setenv("SPARRING_CACHE", str(tmp_path / "cache"))
    asked: list = []

    def sample(loaded, chunk, **kwargs):
        asked.append(seen(loaded.model))
        return Sampled([["    return 0\n"] for _ in chunk])

    monkeypatch.setattr(snapshots, "sample_answers", sample)
    cfg = from_dict({"grpo": {"max_completion_length": 32}})
    problems = [
        Problem("p0", "Zero.", "def zero():", ["assert zero() == 0"], "def zero():\n    return 0\n")
    ]
    backend = SimpleNamespace(name="torch")

    def ask(device: str, dtype: str) -> None:
        loaded = LoadedAnswerer(backend, SimpleNamespace(device=device, dtype=dtype), None)
        snapshots._generate_sized(cfg, "m", problems, loaded, cache_model="the-model", seed=0)

    return ask, asked


def test_a_model_loaded_on_another_device_or_dtype_is_another_cache_entry(tmp_path, monkeypatch):
    """One folder answers otherwise in bf16 or on a GPU: evaluation's cache key holds the
    device and dtype the model was loaded with, so a shared cache never hands one's answers to
    the other (before 2026-12-02 it held neither)."""
    ask, asked = _cached_sampling(monkeypatch, tmp_path, lambda m: (m.device, m.dtype))
    for device, dtype in [("cpu", "float32"), ("cpu", "float32"), ("cuda:0", "float32"),
                          ("cpu", "bfloat16")]:  # fmt: skip
        ask(device, dtype)
    assert asked == [("cpu", "float32"), ("cuda:0", "float32"), ("cpu", "bfloat16")]


def test_answers_sampled_with_another_cpu_thread_count_are_another_cache_entry(
    tmp_path, monkeypatch
):
    """On a CPU torch's thread count changes sampled tokens (19 of 64 completions of one seed
    differed between 1 and 2 threads, 2026-12-03): a run at 2 threads must not read the answers
    a 1-thread run on the same machine cached, or its numbers depend on what ran there before
    (before 2026-12-04 the key held neither the count nor the CPU's vector instruction set).
    On a GPU the count is not in the key."""
    from sparring.backends import lineage

    ask, asked = _cached_sampling(
        monkeypatch, tmp_path,
        lambda m: (m.device, lineage.torch_threads(), lineage.cpu_capability()),
    )  # fmt: skip
    for device, threads, isa in [("cpu", 1, "AVX512"), ("cpu", 1, "AVX512"), ("cpu", 2, "AVX512"),
                                 ("cpu", 1, "AVX2"), ("cuda:0", 1, "AVX512"),
                                 ("cuda:0", 2, "AVX512")]:  # fmt: skip
        monkeypatch.setattr(lineage, "torch_threads", lambda n=threads: n)
        monkeypatch.setattr(lineage, "cpu_capability", lambda s=isa: s)
        ask(device, "float32")
    assert asked == [("cpu", 1, "AVX512"), ("cpu", 2, "AVX512"), ("cpu", 1, "AVX2"),
                     ("cuda:0", 1, "AVX512")]  # fmt: skip

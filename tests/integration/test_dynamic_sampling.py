"""Dynamic sampling (DAPO-style drop) in real GRPO steps on tiny-random: a group whose rewards
are all equal leaves the loss batch, the other still trains, the counts come back from
`run_grpo`, TRL logs `sparring/useful_group_share` (into MLflow when a run is active), and a
phase with no useful group skips its updates instead of stepping on zero advantages."""

from __future__ import annotations

import os

import pytest
import torch

from sparring.backends.torch import grpo, grpo_loss, grpo_trainer, models
from sparring.config import load_config

pytestmark = pytest.mark.integration
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def cfg_for(*sets):
    base = [
        "grpo.learning_rate=0.05",
        "grpo.num_generations=2",
        "grpo.per_device_batch_size=4",  # two groups per step
        "grpo.mask_truncated_completions=false",  # tiny-random never ends before the cap
    ]
    return load_config("configs/smoke.yaml", [*base, *sets])


def dataset(*problems):
    from datasets import Dataset

    return Dataset.from_list(
        [
            {"prompt": [{"role": "user", "content": f"Solve {p}."}], "problem_id": p}
            for p in problems
        ]
    )


class SplitReward:
    """`flat*` earns 0.5 on every completion; `varied` earns 0, 1, 0, 1... within each group."""

    __name__ = "split_reward"

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, prompts, completions, problem_id, **kwargs):
        self.calls.append(list(problem_id))
        return [0.5 if pid.startswith("flat") else float(i % 2) for i, pid in enumerate(problem_id)]


@pytest.fixture
def loss_batches(monkeypatch):
    """Rows and advantages of every batch that reaches the loss (None: a skipped update)."""
    seen: list[tuple[int, list[float]] | None] = []

    class Recording(grpo_trainer.SparringGRPOTrainer):
        def compute_loss(self, model, inputs, *args, **kwargs):
            if "sparring_skip" in inputs:
                seen.append(None)
            else:
                seen.append((inputs["completion_ids"].size(0), inputs["advantages"].tolist()))
            return super().compute_loss(model, inputs, *args, **kwargs)

    monkeypatch.setattr(grpo_trainer, "SparringGRPOTrainer", Recording)
    return seen


def lora_b(model):
    return [v.detach().clone() for k, v in model.state_dict().items() if "lora_B" in k]


def test_flat_group_is_dropped_and_the_other_trains(tmp_path, loss_batches):
    import mlflow

    cfg = cfg_for()
    model, tok = models.load_model("tiny-random")
    reward = SplitReward()
    previous = os.environ.get("MLFLOW_TRACKING_URI")  # set_tracking_uri also sets the env var
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    try:
        mlflow.set_experiment("dynamic-sampling")
        with mlflow.start_run() as run:
            trained, metrics = grpo.run_grpo(
                model,
                tok,
                dataset("flat", "varied"),
                reward,
                cfg,
                2,
                str(tmp_path / "out"),
                0,
                models.peft_lora_config(cfg.lora),
            )
        history = mlflow.MlflowClient().get_metric_history(
            run.info.run_id, "sparring/useful_group_share"
        )
    finally:
        mlflow.set_tracking_uri(previous)
    assert all(sorted(set(c)) == ["flat", "varied"] for c in reward.calls)  # both every step
    assert metrics["groups_total"] == 4 and metrics["groups_useful"] == 2
    assert metrics["useful_group_share"] == 0.5 and metrics["batches_skipped"] == 0
    assert metrics["trl/frac_reward_zero_std"] == 0.5  # TRL's own view, before the drop
    assert metrics["trl/sparring_useful_group_share"] == 0.5
    assert metrics["trl/grad_norm"] > 0
    # only the varied group's two rows reached the loss, each with a real advantage
    assert [b[0] for b in loss_batches] == [2, 2]
    assert all(abs(a) > 0.5 for _, adv in loss_batches for a in adv)
    assert any(v.abs().sum() > 0 for v in lora_b(trained)), "adapter did not learn"
    assert [m.value for m in history] == [0.5, 0.5]  # logged per step into the active run


def test_no_useful_group_skips_the_update(tmp_path, loss_batches):
    cfg = cfg_for()
    model, tok = models.load_model("tiny-random")
    trained, metrics = grpo.run_grpo(
        model,
        tok,
        dataset("flat", "flat2"),
        lambda prompts, completions, **kw: [1.0] * len(completions),
        cfg,
        2,
        str(tmp_path),
        0,
        models.peft_lora_config(cfg.lora),
    )
    assert metrics["groups_useful"] == 0 and metrics["useful_group_share"] == 0.0
    assert metrics["batches_skipped"] == 2 and loss_batches == [None, None]
    assert metrics["trl/grad_norm"] == 0.0
    assert all(v.abs().sum() == 0 for v in lora_b(trained)), "a skipped update moved weights"


def test_switch_off_keeps_every_group(tmp_path, loss_batches):
    cfg = cfg_for("grpo.drop_flat_groups=false")
    model, tok = models.load_model("tiny-random")
    _, metrics = grpo.run_grpo(
        model,
        tok,
        dataset("flat", "varied"),
        SplitReward(),
        cfg,
        1,
        str(tmp_path),
        0,
        models.peft_lora_config(cfg.lora),
    )
    assert metrics["useful_group_share"] == 0.5 and metrics["batches_skipped"] == 0
    assert [b[0] for b in loss_batches] == [4]


def test_kept_rows_are_topped_up_to_the_accumulation_slices(tmp_path, loss_batches):
    """Groups of 3, two micro-batches per generation: the useful group's 3 rows get one
    zero-advantage row of the flat group so TRL can split 4 rows into 2 equal slices."""
    cfg = cfg_for(
        "grpo.num_generations=3",
        "grpo.per_device_batch_size=3",
        "grpo.gradient_accumulation_steps=2",
    )
    model, tok = models.load_model("tiny-random")
    trained, metrics = grpo.run_grpo(
        model,
        tok,
        dataset("flat", "varied"),
        SplitReward(),
        cfg,
        1,
        str(tmp_path),
        0,
        models.peft_lora_config(cfg.lora),
    )
    assert metrics["groups_total"] == 2 and metrics["groups_useful"] == 1
    assert [b[0] for b in loss_batches] == [2, 2]
    advantages = sorted(a for _, adv in loss_batches for a in adv)
    assert advantages.count(0.0) == 1 and len(advantages) == 4
    assert any(v.abs().sum() > 0 for v in lora_b(trained))


def test_every_process_keeps_as_many_rows_as_the_most_any_keeps():
    """Two processes' batches of 4: one keeps 1 useful row, the other 3. Both keep 3 (one
    slice) or 4 (slices of 2): TRL gathers per-row metrics unpadded, and CI's two-process run
    aborted on 1 row against 2. A process with no useful row still keeps a full slice."""
    batches = [torch.tensor([True, False, False, False]), torch.tensor([True, True, False, True])]
    most = max(int(k.sum()) for k in batches)
    for slices, size in ((1, 3), (2, 4)):
        for keep in batches:
            rows, filler = grpo_loss.rows_to_keep(keep, most, slices)
            assert len(rows) + len(filler) == size
            assert keep[rows].all() and not keep[filler].any()
    rows, filler = grpo_loss.rows_to_keep(torch.zeros(4, dtype=torch.bool), 0, 2)
    assert len(rows) == 0 and len(filler) == 2


def test_useful_groups_reads_weighted_rewards_and_ignores_unscorable():
    nan = float("nan")
    rewards = torch.tensor(
        [[1.0], [1.0], [0.0], [1.0], [nan], [2.0], [nan], [nan], [0.3], [0.3 + 1e-9]]
    )
    useful = grpo_loss.useful_groups(rewards, torch.ones(1), 2)
    assert useful.tolist() == [False, True, False, False, False]


def test_flat_batch_is_refilled_with_untried_problems(tmp_path, loss_batches):
    """One group per step, three flat problems of four: a flat batch is replaced by fresh ones
    until the varied problem comes up, so no step is skipped; TRL's metrics describe the batch
    trained on and the replacements are counted."""
    cfg = cfg_for("grpo.per_device_batch_size=2", "grpo.refill_flat_batches=3")
    model, tok = models.load_model("tiny-random")
    reward = SplitReward()
    trained, metrics = grpo.run_grpo(
        model,
        tok,
        dataset("flat", "flat2", "flat3", "varied"),
        reward,
        cfg,
        2,
        str(tmp_path),
        0,
        models.peft_lora_config(cfg.lora),
    )
    flat_calls = sum(c[0].startswith("flat") for c in reward.calls)
    assert flat_calls >= 1  # two steps, one varied problem: some step drew a flat one first
    assert metrics["batches_refilled"] == flat_calls and metrics["batches_skipped"] == 0
    assert [c[0] for c in reward.calls].count("varied") == 2
    assert metrics["completions_sampled"] == 2 * len(reward.calls)  # replaced batches count
    assert loss_batches == [(2, loss_batches[0][1]), (2, loss_batches[1][1])]
    assert metrics["trl/frac_reward_zero_std"] == 0.0  # the trained batches, not the replaced
    assert metrics["trl/sparring_refilled_batches"] == flat_calls / 2
    assert metrics["trl/grad_norm"] > 0
    assert any(v.abs().sum() > 0 for v in lora_b(trained))


def _four_steps(tmp_path, reward, problems, *sets):
    """Four steps of two groups over four problems with `reward`: (groups drawn, in order, one
    problem id each; run_grpo's metrics)."""
    cfg = cfg_for("grpo.refill_flat_batches=0", *sets)
    model, tok = models.load_model("tiny-random")
    _, metrics = grpo.run_grpo(
        model, tok, dataset(*problems), reward, cfg, 4, str(tmp_path), 0,
        models.peft_lora_config(cfg.lora),
    )  # fmt: skip
    return [pid for call in reward.calls for pid in call[::2]], metrics


def _four_steps_over_two_flat_problems(tmp_path, *sets):
    return _four_steps(tmp_path, SplitReward(), ("flat", "flat2", "varied", "varied2"), *sets)


def test_a_problem_seen_flat_is_not_sampled_again_in_the_phase(tmp_path, loss_batches):
    """skip_flat_problems: four steps of two groups over four problems are two epochs, so each
    problem comes up twice; a problem whose group was flat goes to one that was not, so the
    flat problems are sampled once each and every later step trains both of its groups."""
    drawn, metrics = _four_steps_over_two_flat_problems(tmp_path, "grpo.skip_flat_problems=true")
    assert len(drawn) == 8
    assert drawn.count("flat") == drawn.count("flat2") == 1, drawn
    assert metrics["groups_swapped"] == 2
    assert metrics["completions_trained"] == 8 * 2 - 2 * 2  # only the two flat groups dropped


def test_without_skip_the_flat_problems_come_back(tmp_path):
    """The control of the test above: the same phase without skip_flat_problems samples each
    problem twice (the test above fails for its stated reason when the swap is off)."""
    drawn, _ = _four_steps_over_two_flat_problems(tmp_path)
    assert drawn.count("flat") == drawn.count("flat2") == 2, drawn


class MostlyReward(SplitReward):
    """`mostly*` earns 1, 0.5, 1, 0.5... (mean 0.75: useful, nearly mastered); the rest earn
    0, 1, 0, 1... (mean 0.5)."""

    def __call__(self, prompts, completions, problem_id, **kwargs):
        self.calls.append(list(problem_id))
        return [
            (1.0 - 0.5 * (i % 2)) if pid.startswith("mostly") else float(i % 2)
            for i, pid in enumerate(problem_id)
        ]


def _four_steps_over_two_mastered_problems(tmp_path, *sets):
    problems = ("mostly", "mostly2", "varied", "varied2")
    return _four_steps(tmp_path, MostlyReward(), problems, "grpo.skip_flat_problems=true", *sets)


def test_a_problem_whose_group_reached_skip_mastered_at_is_not_sampled_again(tmp_path):
    """grpo.skip_mastered_at: a group whose mean reward reached it trains (it has a spread) but
    marks its problem like a flat one, so over two epochs the nearly mastered problems are
    sampled once each and their second turns go to the others."""
    drawn, metrics = _four_steps_over_two_mastered_problems(tmp_path, "grpo.skip_mastered_at=0.75")
    assert drawn.count("mostly") == drawn.count("mostly2") == 1, drawn
    assert metrics["groups_mastered"] == 2
    assert metrics["completions_trained"] == metrics["completions_sampled"] == 16


def test_below_skip_mastered_at_the_nearly_mastered_problems_come_back(tmp_path):
    """The control: at the default (1.0, only flat groups) the same phase samples each problem
    twice."""
    drawn, metrics = _four_steps_over_two_mastered_problems(tmp_path)
    assert drawn.count("mostly") == drawn.count("mostly2") == 2, drawn
    assert metrics["groups_mastered"] == 0


class SolvedDeadReward(SplitReward):
    """`done*` earns 1 on every completion (flat: solved), `dead` 0 (flat: failing), the rest
    0, 1, 0, 1..."""

    def __call__(self, prompts, completions, problem_id, **kwargs):
        self.calls.append(list(problem_id))
        return [
            1.0 if pid.startswith("done") else 0.0 if pid == "dead" else float(i % 2)
            for i, pid in enumerate(problem_id)
        ]


def test_once_every_problem_is_marked_the_one_failing_longest_ago_is_retried(tmp_path):
    """With one unmarked problem left, a group whose problem is marked goes to the problem
    last seen failing (the answerer has trained since), never back to a solved one: over two
    epochs the solved problems are sampled once each (break check: without the retry a solved
    problem comes back in the second epoch, which has one unmarked problem for three marked)."""
    drawn, metrics = _four_steps(
        tmp_path, SolvedDeadReward(), ("done", "done2", "dead", "varied"),
        "grpo.skip_flat_problems=true",
    )  # fmt: skip
    assert drawn.count("done") == drawn.count("done2") == 1, drawn
    assert drawn.count("dead") == 3 and metrics["groups_retried"] >= 1, drawn
    assert metrics["groups_flat_at_zero"] == 3
    # dead's second and third groups are flat returns; varied's are not
    assert (metrics["groups_revisited"], metrics["revisits_flat"]) == (4, 2), drawn


def test_problems_the_screen_saw_flat_are_never_sampled_while_others_remain(tmp_path):
    """steps.screen_pool: rows marked `screened_flat` (the frozen answerer's samples all earned
    the same reward) start in the skip set, so the four steps sample only the varied problems
    and every sampled group trains (break check: without the seeding, the flat ones are drawn
    in the first epoch and their groups are dropped)."""
    from datasets import Dataset

    cfg = cfg_for("grpo.refill_flat_batches=0", "grpo.skip_flat_problems=true")
    model, tok = models.load_model("tiny-random")
    reward = SplitReward()
    rows = [
        {"prompt": [{"role": "user", "content": f"Solve {p}."}], "problem_id": p,
         "screened_flat": p.startswith("flat")}
        for p in ("flat", "flat2", "varied", "varied2")
    ]  # fmt: skip
    _, metrics = grpo.run_grpo(
        model, tok, Dataset.from_list(rows), reward, cfg, 4, str(tmp_path), 0,
        models.peft_lora_config(cfg.lora),
    )  # fmt: skip
    drawn = [pid for call in reward.calls for pid in call[::2]]
    assert len(drawn) == 8 and not any(pid.startswith("flat") for pid in drawn), drawn
    assert metrics["completions_trained"] == metrics["completions_sampled"] == 16


class LowHighReward(SplitReward):
    """`low` earns 0, 0.2 in a group (mean 0.1: failing, but with a spread); the rest 0.6, 1.0
    (mean 0.8: nearly solved). Every group trains."""

    def __call__(self, prompts, completions, problem_id, **kwargs):
        self.calls.append(list(problem_id))
        return [
            (0.2 if pid == "low" else 1.0) if i % 2 else (0.0 if pid == "low" else 0.6)
            for i, pid in enumerate(problem_id)
        ]


def _two_epochs_low_and_high(tmp_path, order):
    return _four_steps(
        tmp_path, LowHighReward(), ("low", "high", "high2", "high3"),
        "grpo.skip_flat_problems=true", f"grpo.revisit_order={order}",
    )  # fmt: skip


def test_lowest_reward_sends_the_second_epoch_to_the_least_rewarded_problem(tmp_path):
    """grpo.revisit_order=lowest_reward: in the second epoch every problem has been sampled, so
    each batch of two groups gives one to `low` (the lowest last reward) and keeps the other:
    `low` is sampled three times in eight groups (break check: without re-pointing a problem
    drawn again, it comes up twice, as in dataset order below)."""
    drawn, metrics = _two_epochs_low_and_high(tmp_path, "lowest_reward")
    assert drawn.count("low") == 3, drawn
    assert metrics["groups_revisited"] == 4 and metrics["revisits_flat"] == 0
    assert metrics["completions_trained"] == metrics["completions_sampled"] == 16


def test_dataset_order_samples_each_problem_once_an_epoch(tmp_path):
    """The control: the default order samples every problem once in each epoch."""
    drawn, metrics = _two_epochs_low_and_high(tmp_path, "dataset")
    assert drawn.count("low") == 2, drawn
    assert metrics["groups_revisited"] == 4

"""The self-play engine without a model: episodes with children, per-level credit, records of
trainable roles only, batched model calls, rubrics, the artifact store and game config checks."""

from __future__ import annotations

import asyncio
import random

import pytest

from sparring.config import ConfigError, load_config
from sparring.engine.arena import Arena
from sparring.engine.core import Episode, EpisodeRequest, Role, Rollout, Rubric
from sparring.engine.credit import ConstantCredit, GRPOCredit, RAECredit, levels
from sparring.engine.local import LocalClient, ScriptedPolicy
from sparring.games import registry


class Solve(Episode):
    """A solver answers a question; reward 1 when the answer is the expected word."""

    def __init__(self) -> None:
        self.rubric = Rubric.of(self.correct)

    async def rollout(self, arena, artifact, state):
        state.data["answer"] = await self.act(arena, state, "solver", f"solve {artifact}")
        return state

    @staticmethod
    def correct(rollout: Rollout, arena: Arena) -> dict[str, float]:
        return {"solver": float(rollout.extras["answer"] == "right")}


class Propose(Episode):
    """A proposer writes a question, three solver children try it; the proposer earns the
    solvers' pass rate (async rubric term), the judge is asked once (an oracle)."""

    def __init__(self, eval_children: bool = False) -> None:
        self.eval_children = eval_children
        self.rubric = Rubric.of(self.pass_rate_reward)

    async def rollout(self, arena, artifact, state):
        question = await self.act(arena, state, "proposer", f"propose about {artifact}")
        await arena.call_model(f"judge {question}")
        requests = [
            EpisodeRequest("solve", question, is_trainable=not self.eval_children) for _ in range(3)
        ]
        state.children = await arena.generate_rollouts(requests)
        return state

    def get_extras(self, state):
        wins = sum(c.rewards["solver"] for c in state.children)
        return {"pass_rate": wins / len(state.children)}

    @staticmethod
    async def pass_rate_reward(rollout: Rollout, arena: Arena) -> dict[str, float]:
        await asyncio.sleep(0)
        return {"proposer": rollout.extras["pass_rate"]}


def scripted(seed: int = 0) -> ScriptedPolicy:
    rng = random.Random(seed)

    def answer(adapter, text):
        if adapter is None:
            return "verdict"
        if adapter == "proposer":
            return f"q{rng.randint(0, 9)}"
        return rng.choice(["right", "wrong"])

    return ScriptedPolicy(answer)


def make_arena(policy, solver_trainable: bool = True, eval_children: bool = False) -> Arena:
    arena = Arena(LocalClient(policy))
    arena.add_role(Role("proposer", "You propose."))
    arena.add_role(Role("solver", "You solve.", trainable=solver_trainable))
    arena.add_episode("propose", Propose(eval_children))
    arena.add_episode("solve", Solve())
    return arena


def play(arena: Arena, requests):
    return asyncio.run(arena.generate_rollouts(requests))


def test_hierarchical_credit_compares_children_with_siblings_and_parents_with_parents():
    arena = make_arena(scripted())
    roots = play(arena, [EpisodeRequest("propose", "topic", group="g")] * 4)
    GRPOCredit().assign(roots)
    # parents: advantage = (pass rate - mean over the 4 proposers) / std over the 4
    rates = [r.extras["pass_rate"] for r in roots]
    mean = sum(rates) / 4
    std = (sum((x - mean) ** 2 for x in rates) / 4) ** 0.5
    for root, rate in zip(roots, rates, strict=True):
        expected = 0.0 if std < 1e-8 else (rate - mean) / std
        assert root.advantages["proposer"] == pytest.approx(expected, abs=1e-5)
        # children: each solver against its 2 siblings only, never the other proposers' solvers
        rewards = [c.rewards["solver"] for c in root.children]
        m = sum(rewards) / 3
        s = (sum((x - m) ** 2 for x in rewards) / 3) ** 0.5
        for child, reward in zip(root.children, rewards, strict=True):
            want = 0.0 if s < 1e-8 else (reward - m) / s
            assert child.advantages["solver"] == pytest.approx(want, abs=1e-5)
    # a solver that is right where all its siblings are right gets 0, even if other groups failed
    groups = [g for level in levels(roots) for _, g in level]
    assert len({g for g in groups if g[0] == "child"}) == 4  # one comparison group per parent


def test_records_hold_trainable_roles_only_and_never_judge_calls():
    policy = scripted()
    arena = make_arena(policy, solver_trainable=False)
    roots = play(arena, [EpisodeRequest("propose", "t", group="g")] * 2)
    GRPOCredit().assign(roots)
    records = arena.records(roots)
    assert {r.role for r in records} == {"proposer"}
    assert len(records) == 2
    assert arena.calls[None] == 2  # the judge was called, and produced no record
    assert all(not r.messages[-1]["content"].startswith("judge") for r in records)
    assert records[0].messages[0] == {"role": "system", "content": "You propose."}


def test_non_trainable_requests_and_their_children_stay_out_of_the_batch():
    arena = make_arena(scripted())
    roots = play(arena, [EpisodeRequest("propose", "t", is_trainable=False)] * 2)
    assert all(not r.is_trainable for root in roots for r in root.walk())
    GRPOCredit().assign(roots)
    assert arena.records(roots) == []
    # eval children under a trainable parent: the parent trains, the children do not
    arena = make_arena(scripted(), eval_children=True)
    roots = play(arena, [EpisodeRequest("propose", "t", group="g")] * 2)
    GRPOCredit().assign(roots)
    assert {r.role for r in arena.records(roots)} == {"proposer"}


def test_concurrent_model_calls_are_sampled_in_batches():
    policy = scripted()
    arena = make_arena(policy)
    play(arena, [EpisodeRequest("propose", f"t{i}") for i in range(8)])
    sizes = arena.client.batch_sizes
    # 8 proposers in one call, then 24 solvers, plus the 8 judge calls: far fewer than 40 calls
    assert sum(sizes) == 40
    assert max(sizes) >= 8 and len(sizes) <= 6, sizes
    adapters = {a for a, _ in policy.calls}
    assert adapters == {"proposer", "solver", None}


def test_rae_and_constant_credit():
    arena = make_arena(scripted(1))
    roots = play(arena, [EpisodeRequest("solve", "x")] * 4)
    rae = RAECredit(decay=0.5)
    rae.assign(roots)
    assert [r.advantages["solver"] for r in roots] == [r.rewards["solver"] for r in roots]
    mean = sum(r.rewards["solver"] for r in roots) / 4
    assert rae.baselines[("solve", "solver")] == pytest.approx(mean)
    rae.assign(roots)  # second batch: reward minus the running baseline
    assert roots[0].advantages["solver"] == pytest.approx(roots[0].rewards["solver"] - mean)
    ConstantCredit(0.5).assign(roots)
    assert {r.advantages["solver"] for r in roots} == {0.5}


def test_rubric_weights_sync_and_async_terms():
    def a(rollout, arena):
        return {"x": 1.0, "y": 2.0}

    async def b(rollout, arena):
        return {"x": 3.0}

    rollout = Rollout("e", None, [])
    total = asyncio.run(Rubric.of(a, b, weights=[0.5, 2.0]).score(rollout, None))
    assert total == {"x": 6.5, "y": 1.0}
    assert rollout.components == {"a": {"x": 1.0, "y": 2.0}, "b": {"x": 3.0}}

    def no_signal(rollout, arena):
        return {"y": None}

    voided = Rollout("e", None, [])
    assert asyncio.run(Rubric.of(a, no_signal).score(voided, None)) == {"x": 1.0}


def test_artifact_store_samples_by_weight():
    arena = make_arena(scripted())
    arena.store.extend("pool", ["easy", "hard"])
    arena.store.reweight("pool", lambda item, w: 9.0 if item == "hard" else 1.0)
    draws = arena.store.sample("pool", 2000)
    assert 0.85 < draws.count("hard") / 2000 < 0.95
    with pytest.raises(ValueError, match="empty"):
        arena.store.sample("nothing", 1)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["game.name=chess"], "game.name: unknown game 'chess'; choose one of"),
        (["game.name=debate", "game.trainable=[judge]"], "game.trainable: debate has no role"),
        (
            ["game.name=debate", "game.judge=debater_a"],
            "game.judge: 'debater_a' is a trainable role",
        ),
        (["game.name=debate", "game.options={rounds: 2}"], "game.options.rounds: debate has no"),
        ([], "game.name: empty"),
    ],
)
def test_bad_game_configs_get_one_line_errors(overrides, message):
    cfg = load_config(overrides=overrides)
    with pytest.raises(ConfigError) as err:
        registry.check(cfg)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_frozen_judge_role_is_accepted():
    cfg = load_config(
        overrides=["game.name=debate", "game.trainable=[debater_a]", "game.judge=debater_b"]
    )
    assert registry.check(cfg).name == "debate"


def test_debate_rewards_are_zero_sum_and_degenerate_speeches_forfeit():
    from sparring.phases.game_loop import run_game

    def answer(adapter, text):
        if adapter is None:  # a judge that always picks whoever is shown first
            return "1"
        return "Tests catch regressions before users do." if adapter == "debater_a" else ""

    cfg = load_config(
        overrides=["game.name=debate", "game.steps=1", "game.eval_episodes=2", "game.group_size=2"]
    )
    result = run_game(cfg, policy=ScriptedPolicy(answer), progress=False)
    assert result["before"]["reward/debater_a"] == 1.0  # b's empty speech forfeits
    assert result["before"]["reward/debater_b"] == -1.0

    def biased(adapter, text):
        return "1" if adapter is None else f"My point on {adapter}: tests help."

    result = run_game(cfg, policy=ScriptedPolicy(biased), progress=False)
    # a judge with a position bias gives ties, not a free win to either side
    assert result["before"]["tie_rate"] == 1.0
    assert result["history"][0]["flat_group_share/debater_a"] == 1.0


def test_game_list_describes_every_game_with_roles():
    games = {g["name"]: g for g in registry.describe() if g["name"] == "debate"}
    assert games["debate"]["roles"] == [
        {"id": "debater_a", "trainable": True},
        {"id": "debater_b", "trainable": True},
    ]
    assert games["debate"]["judge"] is True


@pytest.mark.parametrize("failure", ["stop", "short"])
def test_a_failing_policy_fails_every_waiting_episode_instead_of_hanging(failure):
    class Broken(ScriptedPolicy):
        def sample(self, prompts, **kw):
            if failure == "stop":
                raise StopIteration  # a Future cannot hold this one as it is
            return ["only one"]

    arena = make_arena(Broken(lambda a, t: ""))
    with pytest.raises(RuntimeError, match="sampling failed"):
        asyncio.run(
            asyncio.wait_for(
                arena.generate_rollouts([EpisodeRequest("solve", i) for i in range(3)]), 10
            )
        )


def test_a_weak_debate_judge_still_gives_a_graded_zero_sum_margin():
    from sparring.phases.game_loop import run_game

    calls = []

    def answer(adapter, text):
        if adapter is not None:
            return "Tests catch bugs." if adapter == "debater_a" else "Comments explain intent."
        calls.append(text)
        a_first = "Debater 1: Tests catch bugs." in text
        right = len(calls) % 4 != 0  # right 3 times in 4, wherever A is shown
        return "1" if a_first == right else "2"

    cfg = load_config(overrides=["game.name=debate", "game.steps=0", "game.eval_episodes=1"])
    result = run_game(cfg, policy=ScriptedPolicy(answer), progress=False)
    assert result["before"]["reward/debater_a"] == pytest.approx(0.5)  # 2 x 0.75 - 1
    assert result["before"]["reward/debater_b"] == pytest.approx(-0.5)


def test_game_commands_list_games_and_refuse_bad_configs_in_one_line(capsys):
    import json

    from sparring.cli.main import main

    assert main(["game", "list", "--json"]) == 0
    listed = {g["name"]: g for g in json.loads(capsys.readouterr().out)}
    assert set(listed) == set(registry.GAMES)
    assert all(g["roles"] for g in listed.values())
    assert main(["game", "run", "chess"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: game.name: unknown game 'chess'") and "\n" not in err
    assert main(["game", "run", "debate", "--set", "game.judge=debater_a"]) == 2
    assert "is a trainable role" in capsys.readouterr().err


def test_a_game_set_to_sample_through_a_server_that_is_not_there_fails_in_one_line():
    from sparring.errors import SparringError
    from sparring.phases.game_loop import run_game
    from tests.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    cfg = load_config("configs/games/debate.yaml", ["serving.mode=server", f"serving.url={url}"])
    policy = ScriptedPolicy(lambda adapter, text: "x")
    with pytest.raises(SparringError, match=rf"serving.url: nothing answers at {url}") as err:
        run_game(cfg, policy=policy, progress=False)
    assert "\n" not in str(err.value) and not policy.calls

"""The talk games (negotiation, refine_loop, elo_arena) played by scripted policies: the referee's
and the judge's parsing, the rewards of good, bad and degenerate answers (a degenerate answer
never earns more than an honest attempt), credit per level, and which steps become training
records (trainable roles only, never a judge call). No model; milliseconds per test.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from sparring.config import ConfigError, from_dict
from sparring.engine.arena import Arena
from sparring.engine.core import EpisodeRequest
from sparring.engine.credit import GRPOCredit
from sparring.engine.local import ScriptedPolicy
from sparring.games import elo_arena, negotiation, refine_loop
from sparring.games.negotiation import Offer, Scenario, parse_move
from sparring.games.registry import check
from sparring.phases.game_loop import build_arena, run_game


def config(name: str, **game):
    return from_dict({"dry_run": True, "game": {"name": name, **game}})


def play(name: str, answer, artifacts, is_trainable: bool = True, **game):
    """Rollouts of `artifacts` under a scripted policy, with credit and records."""
    cfg = config(name, **game)
    game_obj = check(cfg)
    policy = ScriptedPolicy(answer)
    arena = build_arena(cfg, game_obj, policy)
    requests = [EpisodeRequest(game_obj.episode, a, is_trainable=is_trainable) for a in artifacts]
    rollouts = asyncio.run(arena.generate_rollouts(requests))
    GRPOCredit().assign(rollouts)
    return rollouts, arena, policy, game_obj


# ---- negotiation ----------------------------------------------------------------------------

# a's books are worth 1 to a and 3 to b, b's hats 1 to b and 3 to a: a book for a hat helps both
SWAP = Scenario("swap", inventories=((2, 0, 0), (0, 2, 0)), values=((1, 3, 0), (3, 1, 0)))


def values_in(prompt: str) -> dict[str, int]:
    line = prompt.split("Your private values per item")[1].splitlines()[0]
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


def honest_trader(prompt: str) -> str:
    """Accepts an offer that raises its own value, else offers its least valued item for the other
    player's most valued one: what a sensible player does, read from its prompt only."""
    values = values_in(prompt)
    m = re.search(r"offers: you give (.+), you get (.+)\.", prompt)
    if m:
        give, get = (negotiation.parse_bundle(g) for g in m.groups())
        worth = [values[i] for i in negotiation.ITEMS]
        if negotiation.worth(get, worth) > negotiation.worth(give, worth):
            return "ACCEPT"
    mine = re.search(r"Your inventory: (.*?)\. The other", prompt).group(1).split()
    theirs = re.search(r"other player's inventory: (.*?)\.\n", prompt).group(1).split()
    give = min((p.split("=")[0] for p in mine), key=values.get)
    get = max((p.split("=")[0] for p in theirs), key=values.get)
    return f"OFFER give {give}=1 get {get}=1"


def negotiate(a, b, scenario=SWAP, turns: int = 2):
    """One negotiation where `a` and `b` map a prompt to a reply."""
    players = {"player_a": a, "player_b": b}
    (rollout,), arena, policy, _ = play(
        "negotiation", lambda role, p: players[role](p), [scenario], options={"turns": turns}
    )
    return rollout, arena, policy


def test_referee_parses_the_strict_move_format():
    assert parse_move("OFFER give books=1, hats=2 get balls=1\nbecause I like balls") == Offer(
        (1, 2, 0), (0, 0, 1)
    )
    assert parse_move("  \naccept.") == "ACCEPT" and parse_move("REJECT") == "REJECT"
    assert parse_move("offer give nothing get books=1") == Offer((0, 0, 0), (1, 0, 0))
    for bad in (
        "",
        "I accept",  # a move must be the whole first line
        "Sure.\nACCEPT",  # ... and the first line
        "OFFER give cars=1 get hats=1",  # unknown item
        "OFFER give books=1 books=2 get hats=1",  # an item twice
        "OFFER give books=1 get books=2",  # the same item on both sides
        "OFFER give nothing get nothing",
        "OFFER give books=1",
        "OFFER give books=-1 get hats=1",
    ):
        assert parse_move(bad) is None, bad


def test_an_accepted_fair_swap_pays_both_players_their_own_value_gain():
    rollout, arena, policy = negotiate(honest_trader, honest_trader)
    assert rollout.extras["moves"] == [(0, "OFFER give books=1 get hats=1"), (1, "ACCEPT")]
    assert rollout.extras["deal"] == (0, Offer((1, 0, 0), (0, 1, 0)))
    # a: 2 -> 1*1 + 1*3 = 4 of a pool worth 2*1 + 2*3 = 8; b the same by symmetry
    assert rollout.rewards == {"player_a": 0.25, "player_b": 0.25}
    assert arena.calls[None] == 0 and len(policy.calls) == 2
    b_prompt = policy.calls[1][1]
    assert "books=3 hats=1" in b_prompt and "books=1 hats=3" not in b_prompt  # values are private
    assert "The other player offers: you give hats=1, you get books=1." in b_prompt


def test_invalid_and_unaffordable_moves_trade_nothing():
    moves = iter(["OFFER give books=5 get hats=1", "ACCEPT", "blah", "ACCEPT"])
    rollout, _, _ = negotiate(lambda p: next(moves), lambda p: next(moves))
    assert [m for _, m in rollout.extras["moves"]] == ["INVALID"] * 4
    assert rollout.extras["deal"] is None and rollout.extras["invalid_moves"] == 4
    assert rollout.rewards == {"player_a": 0.0, "player_b": 0.0}


def greedy(prompt: str) -> str:
    return "OFFER give nothing get hats=2"


@pytest.mark.parametrize("opponent", [honest_trader, greedy], ids=["fair", "greedy"])
def test_degenerate_negotiators_never_earn_more_than_honest_ones(opponent):
    def reward_of_b(b):
        return negotiate(opponent, b)[0].rewards["player_b"]

    honest = reward_of_b(honest_trader)
    degenerate = {
        "empty": reward_of_b(lambda p: ""),
        "echo": reward_of_b(lambda p: p),
        "always_accept": reward_of_b(lambda p: "ACCEPT"),
        "always_reject": reward_of_b(lambda p: "REJECT"),
    }
    assert honest == (0.25 if opponent is honest_trader else 0.0)
    assert all(r <= honest for r in degenerate.values()), degenerate
    if opponent is greedy:  # accepting anything hands over the hats: -2 of 8
        assert degenerate["always_accept"] == -0.25
    # the proposer's side: garbage never closes a deal
    assert negotiate(lambda p: "", honest_trader)[0].rewards == {"player_a": 0.0, "player_b": 0.0}


def test_scenarios_are_seeded_split_and_tradable():
    def pools(seed):
        arena = Arena(client=None)
        negotiation.Negotiation({"scenarios": 8, "eval_scenarios": 3}, seed=seed).setup(arena)
        return arena.store.items("train"), arena.store.items("eval")

    train, held = pools(5)
    assert len(train) == 8 and len(held) == 3
    assert not {s.id for s in train} & {s.id for s in held}
    assert pools(5) == (train, held) and pools(6) != (train, held)
    for s in train + held:  # each has a one-for-one swap that pays both players
        (va, vb), n = s.values, len(negotiation.ITEMS)
        x, y = next((x, y) for x in range(n) for y in range(n) if va[y] > va[x] and vb[x] > vb[y]
                    and s.inventories[0][x] and s.inventories[1][y])  # fmt: skip
        offer = f"OFFER give {negotiation.ITEMS[x]}=1 get {negotiation.ITEMS[y]}=1"
        rewards = negotiate(lambda p, o=offer: o, lambda p: "ACCEPT", s)[0].rewards
        assert all(r > 0 for r in rewards.values()), (s, offer)


# ---- refine_loop ----------------------------------------------------------------------------

TASK = refine_loop.TASKS[0]  # a docstring for add(a, b)
DRAFT, CRITIQUE, REVISION = "Adds things.", "Say what it returns.", "Return the sum of a and b."


def judge_by_content(prompt: str) -> str:
    answer = prompt.split("Answer:\n")[1].split("\n\nRate")[0]
    return "Score: 9/10" if "sum" in answer else "5" if "Add" in answer else "2"


def refine(generator=DRAFT, critic=CRITIQUE, reviser=REVISION, judge=judge_by_content, **game):
    texts = {"generator": generator, "critic": critic, "reviser": reviser}

    def answer(role, prompt):
        if role is None:
            return judge(prompt)
        text = texts[role]
        return text(prompt) if callable(text) else text

    (rollout,), arena, policy, _ = play("refine_loop", answer, [TASK], **game)
    return rollout, arena, policy


def test_judge_scores_parse_the_first_number_in_range():
    parse = refine_loop.parse_score
    assert parse("8") == 8 and parse("Score: 7/10") == 7 and parse("9.5 out of 10") == 9.5
    assert parse("11") is None and parse("0") is None and parse("great!") is None


def test_refine_rewards_each_role_for_its_own_contribution():
    rollout, arena, policy = refine()
    assert [s.role for s in rollout.steps] == ["generator", "critic", "reviser"]
    assert rollout.extras["draft_score"] == 5 and rollout.extras["final_score"] == 9
    assert rollout.rewards == pytest.approx({"generator": 0.5, "reviser": 0.9, "critic": 0.4})
    assert arena.calls[None] == 2  # the judge read the draft and the final text
    assert "Critique:\nSay what it returns." in policy.calls[2][1]
    two, _, _ = refine(options={"rounds": 2})
    assert [s.role for s in two.steps] == ["generator", "critic", "reviser", "critic", "reviser"]


def test_degenerate_texts_score_zero_without_the_judge_and_never_beat_honest_ones():
    honest = refine()[0].rewards
    empty_draft, arena, _ = refine(generator="")
    assert empty_draft.rewards["generator"] == 0.0 < honest["generator"]
    assert arena.calls[None] == 1  # only the final text was worth judging
    echo_draft = refine(generator=lambda p: p)[0]
    assert echo_draft.rewards["generator"] == 0.0
    constant = refine(generator="Looks good to me.")[0]  # the judge finds nothing of the task
    assert constant.rewards["generator"] < honest["generator"]
    for bad_reviser in ("", lambda p: p):  # an empty or echoed prompt is an empty final text
        r = refine(reviser=bad_reviser)[0].rewards
        assert r["reviser"] == 0.0 and r["critic"] == -0.5  # the critic shares the blame
    unchanged, arena, _ = refine(reviser=DRAFT)  # the reviser keeps the draft as it is
    assert unchanged.rewards == pytest.approx({"generator": 0.5, "reviser": 0.5, "critic": 0.0})
    assert arena.calls[None] == 1  # one verdict for both: no gain from the judge's noise
    for lazy in ("", lambda p: p, DRAFT):  # empty, echoed prompt, the draft copied
        r = refine(critic=lazy)[0].rewards  # the reviser improved the text anyway
        assert r["critic"] == 0.0 < honest["critic"] and r["reviser"] == honest["reviser"]


def test_unscored_texts_give_no_reward_and_no_training_records():
    for verdict in ("excellent", "11", "0"):
        rollout, arena, _ = refine(judge=lambda p, v=verdict: v)
        assert rollout.rewards == {} and arena.records([rollout]) == []
    half = refine(judge=lambda p: "7" if "Adds" in p else "no idea")[0]
    assert half.rewards == {"generator": 0.7}  # the draft scored, the final did not


def test_refine_records_come_from_trainable_roles_only():
    rollout, arena, _ = refine(trainable=["reviser"])
    records = arena.records([rollout])
    assert [r.role for r in records] == ["reviser"] and records[0].completion == REVISION
    assert "Critique:" in records[0].messages[-1]["content"]  # the reviser's turn, not a verdict


# ---- elo_arena ------------------------------------------------------------------------------

QUESTION = elo_arena.QUESTIONS[1]  # hash tables


def longer_answer_wins(prompt: str) -> str:
    one, two = re.search(r"Answer 1: (.*)\nAnswer 2: (.*)\n", prompt).groups()
    return "1" if len(one) >= len(two) else "2"


def tournament(answers, judge=longer_answer_wins, trainable=True, players=3, ratings=None):
    def answer(role, prompt):
        if role is None:
            return judge(prompt)
        text = answers[role]
        return text(prompt) if callable(text) else text

    cfg = config("elo_arena", options={"players": players})
    game = check(cfg)
    if ratings:
        game.ratings.update(ratings)
    arena = build_arena(cfg, game, ScriptedPolicy(answer))
    request = EpisodeRequest(game.episode, QUESTION, is_trainable=trainable)
    (root,) = asyncio.run(arena.generate_rollouts([request]))
    return root, arena, game


GOOD = "Hashing maps a key straight to its bucket, so a lookup skips the scan of the other keys."
FAIR = "Because hashing maps keys to buckets."


def rewards_by_player(root) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for match in root.children:
        for player, reward in match.rewards.items():
            out.setdefault(player, []).append(reward)
    return out


def test_a_tournament_plays_every_pair_once_as_child_matches():
    root, arena, game = tournament({"player_0": GOOD, "player_1": FAIR, "player_2": ""})
    assert root.steps == [] and root.rewards == {}  # the answers are the matches' steps
    assert [m.artifact.players for m in root.children] == [
        ("player_0", "player_1"), ("player_0", "player_2"), ("player_1", "player_2")
    ]  # fmt: skip
    assert all(len(m.steps) == 2 for m in root.children)
    # one judged match (4 votes in each order); two forfeits need no judge
    assert arena.calls[None] == 8
    assert [m.extras["score"] for m in root.children] == [1.0, 1.0, 1.0]
    assert rewards_by_player(root) == {
        "player_0": [0.5, 0.5], "player_1": [-0.5, 0.5], "player_2": [-0.5, -0.5]
    }  # fmt: skip
    r = game.ratings  # a training tournament moves the running ratings
    assert r["player_0"] > r["player_1"] > r["player_2"]
    assert sum(r.values()) == pytest.approx(3000)


def test_position_bias_draws_and_a_double_forfeit_loses_for_both():
    root, _, game = tournament(
        {p: GOOD for p in ("player_0", "player_1", "player_2")}, judge=lambda p: "1"
    )
    assert {m.extras["score"] for m in root.children} == {0.5}
    assert all(r == 0.0 for rs in rewards_by_player(root).values() for r in rs)
    assert set(game.ratings.values()) == {1000.0}
    root, arena, game = tournament({"player_0": "", "player_1": "", "player_2": ""}, players=3)
    assert arena.calls[None] == 0 and {m.extras["score"] for m in root.children} == {None}
    assert all(r == -0.5 for rs in rewards_by_player(root).values() for r in rs)
    assert set(game.ratings.values()) == {1000.0}  # no information about who is better


def test_reward_is_score_minus_the_elo_expectation_of_the_tournament_start():
    ratings = {"player_0": 1200.0, "player_1": 1000.0}
    root, _, _ = tournament(
        {"player_0": GOOD, "player_1": GOOD}, judge=lambda p: "1", players=2, ratings=ratings
    )
    expected = 1 / (1 + 10 ** (-200 / 400))  # 0.76: a draw is a bad result for the favourite
    assert root.children[0].rewards == pytest.approx(
        {"player_0": 0.5 - expected, "player_1": expected - 0.5}, abs=1e-6
    )


def test_held_out_tournaments_never_move_the_running_ratings():
    root, _, game = tournament(
        {"player_0": GOOD, "player_1": FAIR, "player_2": ""}, trainable=False
    )
    assert set(game.ratings.values()) == {1000.0}
    summary = game.summarize([root])
    assert summary["elo/player_0"] > summary["elo/player_1"] > summary["elo/player_2"]
    assert summary["elo_train/player_0"] == 1000.0
    assert summary["forfeit_rate"] == pytest.approx(2 / 3, abs=1e-4) and summary["draw_rate"] == 0.0


def test_elo_credit_lives_on_the_matches_and_records_are_answers_only():
    root, arena, _ = tournament({"player_0": GOOD, "player_1": FAIR, "player_2": ""})
    GRPOCredit().assign([root])
    assert root.advantages == {}
    # player_1 is compared across its own matches: the win above the loss
    adv = {m.artifact.players: m.advantages for m in root.children}
    assert adv[("player_0", "player_1")]["player_1"] == -1.0
    assert adv[("player_1", "player_2")]["player_1"] == 1.0
    assert adv[("player_0", "player_1")]["player_0"] == 0.0  # won both: nothing to compare
    records = arena.records([root])
    assert len(records) == 6 and {r.role for r in records} == {"player_0", "player_1", "player_2"}
    assert all(r.messages[-1]["content"] == QUESTION for r in records)  # never a judge prompt


def test_degenerate_players_never_earn_more_than_an_honest_one():
    def mean_reward(answer):
        root, _, _ = tournament({"player_0": answer, "player_1": FAIR, "player_2": FAIR})
        return sum(rewards_by_player(root)["player_0"]) / 2

    honest = mean_reward(GOOD)
    for degenerate in ("", lambda p: p, "ok"):  # empty, echoed question, a constant answer
        assert mean_reward(degenerate) < honest


def test_players_option_makes_the_roles_and_rejects_a_lone_player():
    assert [r.id for r in elo_arena.EloArena({"players": 4}).roles] == [
        "player_0", "player_1", "player_2", "player_3"
    ]  # fmt: skip
    with pytest.raises(ConfigError, match="players"):
        check(config("elo_arena", options={"players": 1}))


# ---- the runner ----------------------------------------------------------------------------


def judged(answer: str, verdict):
    """A policy whose roles all write `answer` and whose judge answers `verdict(prompt)`."""
    return lambda role, prompt: verdict(prompt) if role is None else answer


@pytest.mark.parametrize(
    ("name", "answer", "roles"),
    [
        ("negotiation", lambda role, p: honest_trader(p), {"player_a", "player_b"}),
        ("refine_loop", judged(REVISION, lambda p: "6"), {"generator", "critic", "reviser"}),
        ("elo_arena", judged(GOOD, longer_answer_wins), {"player_0", "player_1", "player_2"}),
    ],
)
def test_run_game_plays_trains_and_evaluates_each_talk_game(name, answer, roles):
    cfg = config(name, steps=2, episodes_per_step=2, group_size=2, eval_episodes=2)
    result = run_game(cfg, policy=ScriptedPolicy(answer), progress=False)
    assert len(result["history"]) == 2
    for step in result["history"]:
        assert {k.split("/")[1] for k in step if k.startswith("reward/")} == roles
        assert step["records"] > 0
    assert result["before"] and result["after"]


def test_a_weak_judge_gives_a_graded_score_that_position_bias_cannot_fake():
    """Votes in both orders: a judge that picks the better answer 3 times in 4, wherever it is
    shown, gives it 0.75, where requiring two agreeing verdicts gave a weak judge only draws."""
    calls = []

    def judge(prompt):
        calls.append(prompt)
        good_first = re.search(r"Answer 1: (.*)\n", prompt).group(1) == GOOD
        right = len(calls) % 4 != 0
        return "1" if good_first == right else "2"

    root, _, _ = tournament({"player_0": GOOD, "player_1": FAIR}, judge=judge, players=2)
    assert root.children[0].extras["score"] == pytest.approx(0.75)
    assert root.children[0].rewards["player_0"] == pytest.approx(0.25)  # 0.75 - expected 0.5

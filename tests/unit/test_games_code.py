"""The code games on the engine (dataset_rl, proposer_solver, red_blue), played by scripted
policies on the real sandbox: rewards of good, bad and degenerate answers (a degenerate answer
never earns more than an honest attempt), credit per level of the episode tree, which rollouts
and roles become training records, and one `run_game` per game."""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import replace

import pytest

from sparring import problems
from sparring.config import from_dict
from sparring.engine.arena import Arena
from sparring.engine.core import EpisodeRequest
from sparring.engine.credit import GRPOCredit, levels
from sparring.engine.game import EVAL_POOL, TRAIN_POOL
from sparring.engine.local import LocalClient, ScriptedPolicy
from sparring.games.dataset_rl import DatasetRL
from sparring.games.proposer_solver import PROPOSED_POOL, ProposerSolver
from sparring.games.red_blue import RedBlue
from sparring.phases.game_loop import run_game
from sparring.sandbox import RunReport, Sandbox, SandboxLimits


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(SandboxLimits(timeout_s=2.0, workers=2)) as sb:
        yield sb


BUNDLED = {p.id: p for p in problems.load_bundled()}
VOWELS = BUNDLED["count_vowel_runs"]  # easy: full credit is 0.8


def block(code: str) -> str:
    return f"```python\n{code}```"


CONSTANT = block("def count_vowel_runs(s):\n    return 0\n")
RETURNS_NONE = block("def count_vowel_runs(s):\n    return None\n")
ALWAYS_EQUAL = block(
    "class Anything:\n    def __eq__(self, other):\n        return True\n\n"
    "def count_vowel_runs(s):\n    return Anything()\n"
)
LOWERCASE_ONLY = block(  # misses upper-case vowels: passes some tests, fails 'AeI o U'
    "def count_vowel_runs(s):\n    runs, prev = 0, False\n    for ch in s:\n"
    "        cur = ch in 'aeiou'\n        runs += cur and not prev\n        prev = cur\n"
    "    return runs\n"
)
ECHO = object()  # the answer is the prompt itself


def setup_game(game_cls, answer, sandbox, options=None, frozen=()):
    """A game on an arena over a scripted policy: `answer(adapter, prompt)` (ECHO: the prompt)."""
    game = game_cls(options, seed=0)

    def respond(adapter, text):
        out = answer(adapter, text)
        return text if out is ECHO else out

    arena = Arena(LocalClient(ScriptedPolicy(respond)))
    for role in game.roles:
        arena.add_role(replace(role, trainable=role.id not in frozen))
    game.sandbox = sandbox
    game.setup(arena)
    return game, arena


def play(arena, requests):
    return asyncio.run(arena.generate_rollouts(requests))


# --------------------------------------------------------------------------- dataset_rl


def test_dataset_rl_pays_honest_credit_and_nothing_for_degenerate_answers(sandbox):
    answers = {
        "reference": block(VOWELS.reference_solution),
        "partial": LOWERCASE_ONLY,
        "empty": "",
        "echoed prompt": ECHO,
        "constant": CONSTANT,
        "return None": RETURNS_NONE,
        "always-equal object": ALWAYS_EQUAL,
    }
    current = {}
    _, arena = setup_game(DatasetRL, lambda a, t: current["answer"], sandbox)
    earned = {}
    for name, text in answers.items():
        current["answer"] = text
        (rollout,) = play(arena, [EpisodeRequest("solve", VOWELS)])
        earned[name] = rollout.rewards["solver"]
    assert earned["reference"] == pytest.approx(0.8)  # easy problem, every test
    assert 0 < earned["partial"] < earned["reference"]
    for name in ("empty", "echoed prompt", "constant", "return None", "always-equal object"):
        assert earned[name] == 0.0, name


def test_dataset_rl_split_is_deterministic_and_humaneval_can_be_held_out(sandbox):
    _, a = setup_game(DatasetRL, lambda *_: "", sandbox)
    _, b = setup_game(DatasetRL, lambda *_: "", sandbox)
    train, held_out = {p.id for p in a.store.items(TRAIN_POOL)}, a.store.items(EVAL_POOL)
    assert [p.id for p in held_out] == [p.id for p in b.store.items(EVAL_POOL)]
    assert len(held_out) == 11 and not train & {p.id for p in held_out}
    assert len(train) + len(held_out) == len(BUNDLED)

    options = {"humaneval_eval": 1, "humaneval_limit": 2}
    game, arena = setup_game(DatasetRL, lambda a, t: "", sandbox, options)
    human_eval = arena.store.items(EVAL_POOL)
    assert [p.id for p in human_eval] == ["HumanEval/0", "HumanEval/1"]
    canonical = {p.prompt[:200]: p.reference_solution for p in human_eval}
    game, arena = setup_game(
        DatasetRL, lambda a, t: block(next(v for k, v in canonical.items() if k in t)), sandbox
    )
    rollouts = play(arena, [EpisodeRequest("solve", p) for p in human_eval])
    # HumanEval/0 returns a bool: const_True or const_False passes each of its tests, so no test
    # discriminates and honest credit pays nothing; the strict solve rate still counts it
    assert [r.rewards["solver"] for r in rollouts] == [0.0, 1.0]
    assert game.summarize(rollouts)["solve_rate"] == 1.0


# --------------------------------------------------------------------------- proposer_solver

COUNT_EVEN = {
    "description": "Return how many integers in the list xs are even.",
    "function_signature": "def count_even(xs: list[int]) -> int:",
    "reference_solution": "def count_even(xs):\n    return sum(1 for x in xs if x % 2 == 0)\n",
    "baseline_tests": [
        "assert count_even([1, 2, 4]) == 2",
        "assert count_even([]) == 0",
        "assert count_even([2, 2, 2, 3]) == 3",
    ],
}
MAX_GAP = {
    "description": "Return the largest difference between neighbours of the list xs.",
    "function_signature": "def max_gap(xs: list[int]) -> int:",
    "reference_solution": "def max_gap(xs):\n"
    "    return max(abs(a - b) for a, b in zip(xs, xs[1:]))\n",
    "baseline_tests": ["assert max_gap([1, 5, 2]) == 4", "assert max_gap([3, -3]) == 6"],
}


def proposal(data: dict) -> str:
    return f"Here it is:\n```json\n{json.dumps(data)}\n```"


def solution(data: dict) -> str:
    return block(data["reference_solution"])


def wrong(data: dict) -> str:
    name = problems.function_name_of(data["function_signature"])
    return block(f"def {name}(xs):\n    return 7\n")


def constant(data: dict) -> str:
    name = problems.function_name_of(data["function_signature"])
    return block(f"def {name}(xs):\n    return 0\n")


def proposer_script(proposals, solvers):
    """Proposals in turn; solver answers per function name, in turn. (Never let a scripted
    answer raise StopIteration: a Future refuses it, and the batching client's worker dies.)"""
    proposals = itertools.cycle(proposals)
    solvers = {name: itertools.cycle(answers) for name, answers in solvers.items()}

    def answer(adapter, text):
        if adapter == "proposer":
            return next(proposals)
        for name, cycle in solvers.items():
            if f"`{name}`" in text:
                return next(cycle)
        return ""  # a problem the script has no answers for

    return answer


SEED = BUNDLED["count_vowel_runs"]


@pytest.mark.parametrize(
    ("proposed", "solver_answers", "reward", "why"),
    [
        (proposal(COUNT_EVEN), [solution(COUNT_EVEN), wrong(COUNT_EVEN)], 1.0, ""),
        (proposal(COUNT_EVEN), [solution(COUNT_EVEN)], 0.0, ""),  # too easy
        (proposal(COUNT_EVEN), [wrong(COUNT_EVEN), constant(COUNT_EVEN)], 0.0, ""),  # too hard
        ("", [], 0.0, "unparsed"),
        (ECHO, [], 0.0, "copy of the seed"),  # the prompt shows the seed as JSON
        (
            proposal({**COUNT_EVEN, "baseline_tests": ["assert count_even([2]) == 5"]}),
            [],
            0.0,
            "reference fails its tests",
        ),
        (
            proposal(
                {
                    "description": "Return zero.",
                    "function_signature": "def zero(x: int) -> int:",
                    "reference_solution": "def zero(x):\n    return 0\n",
                    "baseline_tests": ["assert zero(3) == 0", "assert zero(-1) == 0"],
                }
            ),
            [],
            0.0,
            "trivial code passes every test",
        ),
    ],
    ids=["half solve", "all solve", "none solve", "empty", "echo", "wrong tests", "trivial"],
)
def test_proposer_reward_is_goldilocks_on_honest_solver_credit(
    sandbox, proposed, solver_answers, reward, why
):
    script = proposer_script([proposed], {"count_even": solver_answers})
    _, arena = setup_game(ProposerSolver, script, sandbox)
    (rollout,) = play(arena, [EpisodeRequest("propose", SEED)])
    assert rollout.rewards == {"proposer": reward}
    assert rollout.extras["why"] == why
    assert len(rollout.children) == (4 if not why else 0)  # option `solvers`, default 4
    if not why:
        solver_rewards = sorted(child.rewards["solver"] for child in rollout.children)
        assert rollout.extras["pass_rate"] == sum(solver_rewards) / 4
        assert set(solver_rewards) <= {0.0, 1.0}  # constant code earns 0 like a wrong answer


def test_proposer_gets_no_reward_when_the_sandbox_fails(sandbox):
    class Broken:
        def run(self, code, tests):
            return RunReport(infra_error="workers down")

    script = proposer_script([proposal(COUNT_EVEN)], {})
    _, arena = setup_game(ProposerSolver, script, Broken())
    (rollout,) = play(arena, [EpisodeRequest("propose", SEED)])
    assert rollout.rewards == {} and rollout.extras["why"] == "sandbox failure"


def test_proposer_solver_credit_per_level_children_only_against_siblings(sandbox):
    script = proposer_script(
        [proposal(COUNT_EVEN), proposal(MAX_GAP)],
        {
            "count_even": [solution(COUNT_EVEN)],  # every solver solves: too easy
            "max_gap": [solution(MAX_GAP), wrong(MAX_GAP)],  # half of them: at the target
        },
    )
    game, arena = setup_game(ProposerSolver, script, sandbox)
    roots = play(arena, game.requests(arena, episodes=1, group_size=2))
    GRPOCredit().assign(roots)
    by_name = {r.children[0].artifact.function_name: r for r in roots}
    easy, target = by_name["count_even"], by_name["max_gap"]
    # parents against parents: the proposal at the target wins the group
    assert (easy.rewards, target.rewards) == ({"proposer": 0.0}, {"proposer": 1.0})
    assert (easy.advantages, target.advantages) == ({"proposer": -1.0}, {"proposer": 1.0})
    # children against their siblings only: pooled with max_gap's solvers, count_even's would
    # be above the mean; among siblings that all solved there is nothing to learn
    assert [c.advantages["solver"] for c in easy.children] == [0.0] * 4
    assert sorted(c.advantages["solver"] for c in target.children) == [-1.0, -1.0, 1.0, 1.0]
    level_groups = [{group for _, group in level} for level in levels(roots)]
    assert len(level_groups[0]) == 1 and len(level_groups[1]) == 2  # one per parent


def test_proposer_solver_records_pool_and_replay(sandbox):
    script = proposer_script([proposal(MAX_GAP)], {"max_gap": [solution(MAX_GAP), wrong(MAX_GAP)]})
    game, arena = setup_game(ProposerSolver, script, sandbox, frozen=("proposer",))
    held_out_seed = arena.store.items(EVAL_POOL)[0]
    played = play(arena, game.eval_requests(arena, 1))
    GRPOCredit().assign(played)
    assert arena.records(played) == []  # held out: the whole tree is out of training
    assert arena.store.size(PROPOSED_POOL) == 0  # proposals on held-out seeds stay out
    assert held_out_seed.id not in game.train_ids

    roots = play(arena, game.requests(arena, episodes=1, group_size=2))
    GRPOCredit().assign(roots)
    records = arena.records(roots)
    assert {r.role for r in records} == {"solver"}  # the proposer is frozen
    assert len(records) == 8 and all(r.episode == "solve" for r in records)
    (pooled,) = arena.store.items(PROPOSED_POOL)  # in the band, added once for the group
    assert pooled.function_name == "max_gap"

    replays = [r for r in game.requests(arena, 1, 2) if r.episode == "solve"]
    assert [r.artifact.id for r in replays] == [pooled.id] * 4
    assert {r.group for r in replays} == {("replay", 0)}


def test_proposer_solver_run_game():
    script = proposer_script([proposal(MAX_GAP)], {"max_gap": [solution(MAX_GAP), wrong(MAX_GAP)]})
    cfg = from_dict(
        {
            "dry_run": True,
            "sandbox": {"workers": 2},
            "game": {"name": "proposer_solver", "steps": 2, "episodes_per_step": 1,
                     "group_size": 2, "eval_episodes": 1, "options": {"solvers": 2}},
        }
    )  # fmt: skip
    result = run_game(cfg, policy=ScriptedPolicy(script), progress=False)
    first, second = result["history"]
    assert first["records"] == 2 + 2 * 2  # proposers and their solvers
    assert second["records"] == 2 + 2 * 2 + 2  # and the replayed pooled problem's solvers
    assert result["after"]["valid_proposal_share"] == 1.0
    assert result["after"]["solver_pass_rate"] == 0.5


# --------------------------------------------------------------------------- red_blue

DIVIDE = problems.Problem(
    id="divide",
    description="Return a // b.",
    function_signature="def divide(a: int, b: int) -> int:",
    baseline_tests=["assert divide(7, 2) == 3", "assert divide(-6, 3) == -2"],
    reference_solution="def divide(a, b):\n    return a // b\n",
)

NOISY = problems.Problem(  # a reference that is not a function of its input past 99
    id="noisy",
    description="Return 2 * n.",
    function_signature="def noisy(n: int) -> int:",
    baseline_tests=["assert noisy(3) == 6", "assert noisy(5) == 10"],
    reference_solution="import random\n\ndef noisy(n):\n"
    "    return 2 * n if n < 100 else random.randrange(10**9)\n",
)


def red_blue_script(defender, attacker):
    def answer(adapter, text):
        return defender if adapter == "defender" else attacker

    return answer


@pytest.mark.parametrize(
    ("problem", "defender", "attacker", "rewards", "why"),
    [
        (VOWELS, LOWERCASE_ONLY, block("count_vowel_runs('A')\n"), (1, -1), ""),
        (VOWELS, LOWERCASE_ONLY, "count_vowel_runs('xyz')", (-1, 1), ""),  # no bug on it
        (VOWELS, block(VOWELS.reference_solution), block("count_vowel_runs('Ae')\n"), (-1, 1), ""),
        (VOWELS, LOWERCASE_ONLY, "", (-1, 1), "no literal call"),
        (VOWELS, LOWERCASE_ONLY, ECHO, (-1, 1), "no literal call"),
        (VOWELS, LOWERCASE_ONLY, "count_vowel_runs(65)", (-1, 1), "input outside the problem"),
        (
            DIVIDE,
            block("def divide(a, b):\n    return a // b if b else 0\n"),
            block("divide(1, 0)\n"),
            (-1, 1),
            "the reference rejects the input",
        ),
        (
            NOISY,
            block("def noisy(n):\n    return 2 * n\n"),
            block("noisy(500)\n"),
            (-1, 1),
            "the reference rejects the input",  # it fails the assert built from its own value
        ),
    ],
    ids=[
        "breaks",
        "misses",
        "no bug",
        "empty",
        "echo",
        "wrong kind",
        "reference raises",
        "reference not reproducible",
    ],
)
def test_red_blue_zero_sum_on_attack_success(sandbox, problem, defender, attacker, rewards, why):
    _, arena = setup_game(RedBlue, red_blue_script(defender, attacker), sandbox)
    (rollout,) = play(arena, [EpisodeRequest("duel", problem)])
    assert (rollout.rewards["attacker"], rollout.rewards["defender"]) == rewards
    assert rollout.extras["why"] == why
    assert [s.role for s in rollout.steps] == ["defender", "attacker"]
    assert "```python\ndef " in rollout.steps[1].messages[-1]["content"]  # it sees the code


@pytest.mark.parametrize(
    "defender", ["", ECHO, CONSTANT, RETURNS_NONE, ALWAYS_EQUAL, "I cannot solve this."]
)
def test_red_blue_degenerate_defender_forfeits_and_the_attacker_does_not_play(sandbox, defender):
    attacker = block("count_vowel_runs('A')\n")
    game, arena = setup_game(RedBlue, red_blue_script(defender, attacker), sandbox)
    (rollout,) = play(arena, [EpisodeRequest("duel", VOWELS)])
    assert rollout.rewards == {"defender": -1.0}  # the least an honest defender can get
    assert [s.role for s in rollout.steps] == ["defender"]
    assert game.summarize([rollout])["forfeit_rate"] == 1.0


def test_red_blue_run_game():
    by_name = {p.function_name: p for p in BUNDLED.values()}

    def problem_in(text):
        return next(p for name, p in by_name.items() if f"`{name}" in text)

    def script(adapter, text):
        problem = problem_in(text)
        if adapter == "defender":
            return block(problem.reference_solution)
        return block(problem.baseline_tests[0].removeprefix("assert ").split(" == ")[0] + "\n")

    cfg = from_dict(
        {
            "dry_run": True,
            "sandbox": {"workers": 2},
            "game": {"name": "red_blue", "steps": 1, "episodes_per_step": 2, "group_size": 2,
                     "eval_episodes": 2},
        }
    )  # fmt: skip
    result = run_game(cfg, policy=ScriptedPolicy(script), progress=False)
    (step,) = result["history"]
    assert step["records"] == 8  # every defender holds, so every attacker played (and lost)
    assert (step["reward/defender"], step["reward/attacker"]) == (1.0, -1.0)
    assert result["after"]["attack_success_rate"] == 0.0
    assert result["after"]["invalid_attack_share"] == 0.0

"""Where a group goes once its problem is marked flat or already sampled in the phase
(`swap_flat_problems`, `grpo.revisit_order`): pure, no torch."""

import doctest

from sparring.backends.torch import grpo_sampling
from sparring.backends.torch.grpo_sampling import swap_flat_problems


def _rows(*pids: str, group: int = 2) -> list[dict]:
    return [{"problem_id": p} for p in pids for _ in range(group)]


def _pids(rows: list[dict], group: int = 2) -> list[str]:
    return [r["problem_id"] for r in rows[::group]]


POOL = [{"problem_id": p} for p in ("a", "b", "c", "d", "e")]


def test_doctests():
    result = doctest.testmod(grpo_sampling)
    assert result.attempted > 0 and result.failed == 0


def test_dataset_order_takes_the_next_unmarked_problem_even_if_already_sampled():
    out, cursor, swapped, _ = swap_flat_problems(_rows("a", "e"), 2, {"a"}, POOL, 0)
    assert _pids(out) == ["b", "e"] and swapped == 1 and cursor == 2


def test_lowest_reward_prefers_a_problem_not_yet_sampled():
    revisits = [{"problem_id": "b"}, {"problem_id": "c"}]  # sampled, b earned less
    out, _, swapped, retried = swap_flat_problems(_rows("a", "e"), 2, {"a"}, POOL, 0, (), revisits)
    assert _pids(out) == ["d", "e"] and (swapped, retried) == (1, 0)


def test_lowest_reward_revisits_the_least_rewarded_once_nothing_is_new():
    """Every problem sampled: the flat one's group and a problem drawn again both go to the
    lowest rewarded not in the batch, before a problem seen failing; one already lowest keeps
    its group."""
    revisits = [{"problem_id": p} for p in ("d", "c", "b", "e")]  # lowest reward first
    stale = [{"problem_id": "a"}]
    out, _, swapped, retried = swap_flat_problems(
        _rows("a", "e"), 2, {"a"}, POOL, 0, stale, revisits
    )
    assert _pids(out) == ["d", "c"] and (swapped, retried) == (2, 0)
    out, _, swapped, _ = swap_flat_problems(_rows("d", "b"), 2, {"a"}, POOL, 0, (), revisits)
    assert _pids(out) == ["d", "c"] and swapped == 1


def test_lowest_reward_falls_back_to_the_stale_failing_problems():
    """Nothing new and no revisit free: the group goes to a problem seen failing, as before."""
    stale = [{"problem_id": "a"}]
    revisits = [{"problem_id": "b"}]
    out, _, swapped, retried = swap_flat_problems(
        _rows("c", "b"), 2, {"a", "c", "d", "e"}, POOL, 0, stale, revisits
    )
    assert _pids(out) == ["a", "b"] and (swapped, retried) == (1, 1)

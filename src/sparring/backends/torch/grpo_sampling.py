"""GRPO's problem selection: which problems a generation batch samples, decided before it is
sampled.

Covers, for `sparring.backends.torch.grpo_trainer.SparringGRPOTrainer` (mixed in as
`ProblemSelection`; the switches below are fields of the trainer's `grpo` section):
- dynamic sampling, "skip" (`skip_flat_problems`): a problem whose last group in this phase was
  flat (every completion passed, or none did) or reached a mean reward of `skip_mastered_at`
  (mastered: its next group is likely all-pass), or that the frozen answerer's screen saw flat
  (a dataset column `screened_flat`, `steps.screen_pool`; `screened_flat_ids`), is not sampled
  while it stays so and other problems remain: before a generation batch is sampled its groups
  are swapped for problems not seen flat (`swap_flat_problems`), so fewer sampled completions
  leave the loss batch; once no problem is left unmarked, a group goes to the problem seen
  failing (flat below `skip_mastered_at`, or screened so) the longest ago, since the answerer
  has trained since. `revisit_order: lowest_reward` re-points a group of a problem already
  sampled in the phase too, and sends such groups to a problem not yet sampled, else to the one
  whose last group earned the least (`groups_revisited`, `revisits_flat` count the returns).
  `groups_swapped` counts the swaps, `groups_retried` those of them to a failing problem,
  `groups_mastered` the groups that marked a problem mastered and `groups_flat_at_zero` the
  flat groups in which nothing earned a reward. Single process only.
- dynamic sampling, "refill" (`refill_flat_batches`): the fresh batch of problems not yet tried
  in this step that replaces an all-flat one (`_refill_inputs`; the step decides when).
  Single process only.
- the curriculum coach's per-step re-selection (`coach.enabled`, sparring.problems.coach): before a
  generation batch is sampled, the reward's `reselect` swaps each group of a family whose level
  the coach moved since the phase drew its problems for rows at the family's new level (prompts
  longer than `max_prompt_length` are not used). Single process only (a group may span
  processes, and each process's coach counts its own rows); elsewhere the phase's draw, made at
  the levels the phase starts with, is trained as drawn.

Does not cover: decoding the completions (sparring.backends.torch.grpo_decoding), which rows of a
scored batch reach the loss (sparring.backends.torch.grpo_loss), the step that calls these and
counts its groups (sparring.backends.torch.grpo_trainer). `swap_flat_problems` and
`screened_flat_ids` are pure and import no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def screened_flat_ids(dataset: Any) -> dict[Any, float]:
    """The problem ids of the rows of `dataset` (a datasets.Dataset, or None) whose
    `screened_flat` column is true, each with the reward the screen saw (`screened_mean`, 0
    without that column): the frozen answerer's screen saw every sample earn the same reward
    (sparring.phases.zone.screened_flat); empty without the column."""
    columns = getattr(dataset, "column_names", ())
    if dataset is None or "screened_flat" not in columns:
        return {}
    ids, flags = dataset["problem_id"], dataset["screened_flat"]
    means = dataset["screened_mean"] if "screened_mean" in columns else [0.0] * len(ids)
    return {pid: m for pid, flat, m in zip(ids, flags, means, strict=True) if flat}


def swap_flat_problems(
    rows: list[dict[str, Any]],
    group: int,
    flat: set[Any],
    pool: Any,
    cursor: int,
    stale: Sequence[dict[str, Any]] = (),
    revisits: Sequence[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], int, int, int]:
    """`rows` (GRPO groups of `group` copies) with each group of a problem in `flat` (its last
    group this phase had no reward spread, or nearly all passed) swapped for a pool row whose
    problem is neither flat nor already in the batch, taken from `pool` from `cursor` on, round
    robin. When the pool has no such row, the group goes to the first of `stale` (rows of flat
    problems that were failing, the longest ago first: the model has trained since) not in the
    batch, else it stays. Returns (rows, next cursor, groups swapped, of them from `stale`).
    Pure.

    With `revisits` (rows of the problems sampled this phase and not flat, the lowest last
    reward first: `grpo.revisit_order: lowest_reward`), the pool gives only problems not among
    them, a group of one of them is re-pointed too, and a group the pool cannot place goes to
    the first revisit not in the batch (or stays, if that is its own) before `stale`.

    >>> pool = [{"problem_id": p} for p in "abcd"]
    >>> rows = [{"problem_id": "a"}] * 2 + [{"problem_id": "b"}] * 2
    >>> out, cursor, swapped, retried = swap_flat_problems(rows, 2, {"a"}, pool, 0)
    >>> [r["problem_id"] for r in out], swapped, retried
    (['c', 'c', 'b', 'b'], 1, 0)
    >>> stale = [{"problem_id": "d"}]
    >>> out, _, swapped, retried = swap_flat_problems(rows, 2, {"a", "c", "d"}, pool[:3], 0, stale)
    >>> [r["problem_id"] for r in out], swapped, retried
    (['d', 'd', 'b', 'b'], 1, 1)
    >>> seen = [{"problem_id": "b"}, {"problem_id": "c"}]  # b earned less than c
    >>> out, *_ = swap_flat_problems(rows, 2, {"a"}, pool, 0, (), seen)
    >>> [r["problem_id"] for r in out]
    ['d', 'd', 'b', 'b']
    >>> out, *_ = swap_flat_problems(rows, 2, {"a", "d"}, pool, 0, (), seen)
    >>> [r["problem_id"] for r in out]
    ['c', 'c', 'b', 'b']
    """
    seen = {r["problem_id"] for r in revisits or ()}
    if not (flat or seen) or not rows or len(rows) % group:
        return rows, cursor, 0, 0
    in_batch = {rows[i]["problem_id"] for i in range(0, len(rows), group)}
    taken = flat | seen  # the pool gives only problems in neither
    out: list[dict[str, Any]] = []
    swapped = retried = 0
    n = len(pool)
    for start in range(0, len(rows), group):
        chunk = rows[start : start + group]
        pid = chunk[0].get("problem_id")
        if pid in taken:
            found = None
            for _ in range(n):
                row = pool[cursor % n]
                cursor += 1
                other = row.get("problem_id")
                if other is not None and other not in taken and other not in in_batch:
                    found = row
                    break
            if found is None:
                found = _first_free(revisits or (), pid, in_batch)
            if found is None:
                found = _first_free(stale, pid, in_batch)
                retried += found is not None and found["problem_id"] != pid
            if found is not None and found["problem_id"] != pid:
                in_batch.add(found["problem_id"])
                chunk = [dict(found) for _ in range(group)]
                swapped += 1
        out.extend(chunk)
    return out, cursor, swapped, retried


def _first_free(rows: Sequence[dict[str, Any]], pid: Any, in_batch: set[Any]) -> Any:
    """The first of `rows` whose problem is `pid` itself or not in the batch, else None."""
    free = (r for r in rows if r["problem_id"] == pid or r["problem_id"] not in in_batch)
    return next(free, None)


class ProblemSelection:
    """Mixin of `SparringGRPOTrainer` (sparring.backends.torch.grpo_trainer): the state and the
    choice of which problems the next generation batch samples (the module docstring says what
    and why). Reads the trainer's `grpo` section (`skip_flat_problems`, `skip_mastered_at`,
    `revisit_order`; the step reads `refill_flat_batches`) and uses its `train_dataset`,
    `num_generations`, `accelerator`, `reward_funcs` and `prompt_fits`."""

    def _init_problem_selection(self, train_dataset: Any) -> None:
        """The selection's state for a phase over `train_dataset`; `self.grpo` must be set."""
        # per problem sampled this phase: (its last group's mean reward, the batch that
        # scored it), the order of `grpo.revisit_order: lowest_reward`
        self._last_reward: dict[Any, tuple[float, int]] = {}
        self.groups_revisited = 0  # groups of a problem already sampled in this phase
        self.revisits_flat = 0  # of them, flat
        self.groups_mastered = 0  # useful groups whose mean reached skip_mastered_at
        self.groups_retried = 0  # swapped for a problem last seen failing, when none was new
        self.groups_flat_at_zero = 0  # flat groups in which no completion earned anything
        # last group this phase (or, before it, the frozen answerer's screen) had no spread
        screened = screened_flat_ids(train_dataset) if self.grpo.skip_flat_problems else {}
        self._flat_problems: set[Any] = set(screened)
        # the skipped problems that were failing, with the generation batch that last saw
        # them so (-1: the screen): retried, the longest ago first, once no other is left
        self._failing_since: dict[Any, int] = {
            pid: -1 for pid, mean in screened.items() if mean < self.grpo.skip_mastered_at
        }
        self._batches_scored = 0
        self._row_of: dict[Any, int] | None = None
        self._skip_cursor = 0
        self.groups_swapped = 0
        self.batches_refilled = 0
        self._refill_cursor = 0

    def _note_groups(
        self, inputs: Sequence[dict[str, Any]], spreads: Sequence[bool], means: Sequence[float]
    ) -> None:
        """What a scored generation batch says about its problems: per group of `inputs`, whether
        its rewards had a spread and their mean; marks problems flat, mastered or failing."""
        g = self.num_generations
        self.groups_flat_at_zero += sum(
            1 for spread, mean in zip(spreads, means, strict=True) if not spread and mean == 0.0
        )
        if self.grpo.skip_flat_problems and self.accelerator.num_processes == 1:
            for i, (spread, mean) in enumerate(zip(spreads, means, strict=True)):
                pid = inputs[i * g].get("problem_id") if i * g < len(inputs) else None
                if pid is None:
                    continue
                mastered = spread and mean >= self.grpo.skip_mastered_at
                self.groups_mastered += mastered
                if pid in self._last_reward:
                    self.groups_revisited += 1
                    self.revisits_flat += not spread
                self._last_reward[pid] = (mean, self._batches_scored)
                if spread and not mastered:
                    self._flat_problems.discard(pid)
                else:
                    self._flat_problems.add(pid)
                if not spread and mean < self.grpo.skip_mastered_at:
                    self._failing_since[pid] = self._batches_scored
                else:
                    self._failing_since.pop(pid, None)
        self._batches_scored += 1

    def _unflat(self, inputs):
        """`inputs` with the groups of problems whose last group this phase was flat
        swapped for problems not seen flat (`swap_flat_problems`; one process only: the
        processes would have to agree)."""
        if not self.grpo.skip_flat_problems or self.accelerator.num_processes != 1:
            return inputs
        rows, self._skip_cursor, swapped, retried = swap_flat_problems(
            inputs, self.num_generations, self._flat_problems, self.train_dataset,
            self._skip_cursor, self._stale_rows(), self._revisit_rows(),
        )  # fmt: skip
        self.groups_swapped += swapped
        self.groups_retried += retried
        return rows

    def _stale_rows(self):
        """Rows of the problems last seen failing, the longest ago first."""
        order = sorted(self._failing_since, key=self._failing_since.__getitem__)
        return self._rows_of(order)

    def _revisit_rows(self):
        """Under `revisit_order: lowest_reward`, rows of the problems sampled this phase
        and not marked flat, the lowest last reward first (ties: the longest ago); else
        None (dataset order)."""
        if self.grpo.revisit_order != "lowest_reward":
            return None
        seen = [pid for pid in self._last_reward if pid not in self._flat_problems]
        return self._rows_of(sorted(seen, key=self._last_reward.__getitem__))

    def _rows_of(self, pids):
        if self._row_of is None:
            self._row_of = {pid: i for i, pid in enumerate(self.train_dataset["problem_id"])}
        return [self.train_dataset[self._row_of[pid]] for pid in pids if pid in self._row_of]

    def _coached(self, inputs):
        """`inputs` with the groups of a family the coach has moved since the phase drew
        its problems swapped for rows at the family's level (the reward's `reselect`; one
        process only: a group may span processes)."""
        reward = self.reward_funcs[0] if len(self.reward_funcs) == 1 else None
        if not hasattr(reward, "reselect") or self.accelerator.num_processes != 1:
            return inputs
        return reward.reselect(inputs, self.num_generations, self.prompt_fits)

    def _refill_inputs(self, n_rows, tried):
        """A fresh generation batch of `n_rows` rows (each prompt `num_generations` times)
        from problems not tried in this step, or None when there are not enough (or when
        several processes train: they would have to agree on a refill)."""
        g = self.num_generations
        if self.accelerator.num_processes != 1 or n_rows % g:
            return None
        data = self.train_dataset
        picked = []
        for _ in range(len(data)):
            row = data[self._refill_cursor % len(data)]
            self._refill_cursor += 1
            pid = row.get("problem_id")
            if pid is None or pid not in tried:
                tried.add(pid)
                picked.append(row)
                if len(picked) == n_rows // g:
                    return [dict(r) for r in picked for _ in range(g)]
        return None

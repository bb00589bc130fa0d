"""The curriculum coach: per problem family, the level the answerer trains at, moved by rewards.

The rule is reasoning-gym's curriculum: per family, keep the training rewards of the last
`last_k` samples at the family's current level; once there are `last_k` of them, a mean above
`success_threshold` moves the family one level up (to the next of its available levels, never
past the highest), a mean below `failure_threshold` one level down (never past the lowest), and
a move clears the family's scoreboard. A mean equal to a threshold, or between them, moves
nothing; a sample recorded at another level than the family's current one is not counted.

Covers: `Coach` (the rule; its state as plain data, `to_dict` / `from_dict`, and a fresh coach
of today's settings that continues an earlier state: phases run as separate processes),
`at_coach_level` (whether a problem is at its family's current level, or of no coached family) and
`Reserve` (rows of a training set per family and level, swapped in for a sampled GRPO group of
a family whose level moved after the phase drew its problems).
Does not cover: where the rewards come from (sparring.rewards.code_duel.AnswererRewardFn records
them),
the problems a phase draws and where the state is kept (sparring.phases.answerer), the trainer
hook that calls `Reserve.swap` (sparring.backends.torch.grpo_sampling), or the `coach:` config
section (sparring.config). Pure and deterministic: no model library, no clock, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sparring.problems import Problem
from sparring.problems.families import family_and_level


class Coach:
    """Per family: its current level (one of `available[family]`) and its scoreboard.

    >>> c = Coach({"digits": [1, 2, 3]}, last_k=2, success_threshold=0.7, failure_threshold=0.3)
    >>> c.record("digits", 1.0), c.record("digits", 0.9), c.levels()
    (False, True, {'digits': 2})
    """

    def __init__(
        self,
        available: Mapping[str, Iterable[int]],
        *,
        last_k: int,
        success_threshold: float,
        failure_threshold: float,
        start_level: int = 0,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(last_k, bool) or not isinstance(last_k, int) or last_k < 1:
            raise ValueError(f"last_k: {last_k!r}; use an integer of at least 1")
        if not 0.0 <= failure_threshold < success_threshold <= 1.0:
            raise ValueError(
                f"thresholds: failure {failure_threshold!r}, success {success_threshold!r}; "
                "need 0 <= failure < success <= 1"
            )
        self.available: dict[str, tuple[int, ...]] = {}
        for family in sorted(available):
            levels = tuple(sorted({int(level) for level in available[family]}))
            if not levels:
                raise ValueError(f"family {family!r}: no level available")
            self.available[family] = levels
        self.last_k = last_k
        self.success_threshold = float(success_threshold)
        self.failure_threshold = float(failure_threshold)
        self.start_level = int(start_level)
        self._levels = {f: _start(levels, self.start_level) for f, levels in self.available.items()}
        self._scores: dict[str, list[float]] = {f: [] for f in self.available}
        self.moves = 0  # level moves since the coach first started (carried by the state)
        if state:
            self._continue(state)

    def __contains__(self, family: object) -> bool:
        return family in self.available

    def level(self, family: str) -> int:
        return self._levels[self._known(family)]

    def levels(self) -> dict[str, int]:
        """{family: current level}, families sorted."""
        return dict(self._levels)

    def scoreboard(self, family: str) -> list[float]:
        """The rewards counted so far at the family's current level (at most `last_k`)."""
        return list(self._scores[self._known(family)])

    def record(self, family: str, reward: float | None, level: int | None = None) -> bool:
        """Count one sample's reward for `family`; True when it moved the family's level. A
        reward of None or NaN (no signal), or a sample at another `level` than the family's
        current one, is not counted."""
        family = self._known(family)
        current = self._levels[family]
        if reward is None or math.isnan(reward) or (level is not None and level != current):
            return False
        board = self._scores[family]
        board.append(float(reward))
        del board[: -self.last_k]
        if len(board) < self.last_k:
            return False
        mean = sum(board) / len(board)
        levels = self.available[family]
        i = levels.index(current)
        if mean > self.success_threshold and i + 1 < len(levels):
            self._levels[family] = levels[i + 1]
        elif mean < self.failure_threshold and i > 0:
            self._levels[family] = levels[i - 1]
        else:
            return False
        board.clear()
        self.moves += 1
        return True

    def record_batch(
        self,
        families: Sequence[str],
        rewards: Sequence[float | None],
        levels: Sequence[int] | None = None,
    ) -> int:
        """`record` each (family, reward[, level]) in order; families the coach does not know
        (e.g. "" for a problem of no family) are skipped. Returns the number of moves."""
        if len(families) != len(rewards) or (levels is not None and len(levels) != len(rewards)):
            raise ValueError("record_batch: families, rewards and levels need one entry each")
        moved = 0
        for i, (family, reward) in enumerate(zip(families, rewards, strict=True)):
            if family in self.available:
                moved += self.record(family, reward, None if levels is None else levels[i])
        return moved

    def to_dict(self) -> dict[str, Any]:
        """The settings and the state as plain JSON-able data (`from_dict` reads it back)."""
        return {
            "available": {f: list(levels) for f, levels in self.available.items()},
            "last_k": self.last_k,
            "success_threshold": self.success_threshold,
            "failure_threshold": self.failure_threshold,
            "start_level": self.start_level,
            "levels": dict(self._levels),
            "scores": {f: list(board) for f, board in self._scores.items()},
            "moves": self.moves,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Coach:
        """The coach `to_dict` wrote, settings and state alike."""
        try:
            return cls(
                data["available"],
                last_k=data["last_k"],
                success_threshold=data["success_threshold"],
                failure_threshold=data["failure_threshold"],
                start_level=data.get("start_level", 0),
                state=data,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"coach state: malformed ({type(exc).__name__}: {exc})") from None

    def _continue(self, state: Mapping[str, Any]) -> None:
        """Take over an earlier coach's levels and scoreboards, under these settings: a family
        this coach does not know is dropped; a level no longer available becomes the nearest
        available one (the lower on a tie) with an empty scoreboard; a scoreboard keeps its
        last `last_k` rewards."""
        try:
            levels = dict(state.get("levels", {}))
            scores = dict(state.get("scores", {}))
            self.moves = int(state.get("moves", 0))
            for family, saved in levels.items():
                if family not in self.available:
                    continue
                saved = int(saved)
                here = self.available[family]
                if saved in here:
                    self._levels[family] = saved
                    self._scores[family] = [float(r) for r in scores.get(family, [])][
                        -self.last_k :
                    ]
                else:
                    self._levels[family] = min(here, key=lambda level: (abs(level - saved), level))
        except (TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"coach state: malformed ({type(exc).__name__}: {exc})") from None

    def _known(self, family: str) -> str:
        if family not in self.available:
            raise ValueError(f"family {family!r}: not coached; known: {', '.join(self.available)}")
        return family


def at_coach_level(problem: Problem, coach: Coach | None) -> bool:
    """Whether `problem` may be drawn: it is of no coached family, or at its family's level."""
    family, level = family_and_level(problem.tags)
    return coach is None or family not in coach or level == coach.level(family)


def _start(levels: tuple[int, ...], start_level: int) -> int:
    """The lowest available level at or above `start_level`, else the highest."""
    return next((level for level in levels if level >= start_level), levels[-1])


Row = dict[str, Any]


class Reserve:
    """Training rows per (family, level), handed out in turn: what a sampled group of a
    family is swapped for once the coach has moved the family off the level the group's row is
    at. Rows carry `family` and `level` keys (sparring.rewards.answerer_rows.answerer_rows)."""

    def __init__(self, rows: Iterable[Mapping[str, Any]]) -> None:
        self._rows: dict[tuple[str, int], list[Row]] = {}
        for row in rows:
            self._rows.setdefault((row["family"], row["level"]), []).append(dict(row))
        self._next: dict[tuple[str, int], int] = {}
        self.swapped = 0  # groups swapped so far

    def swap(
        self,
        rows: Sequence[Row],
        group: int,
        levels: Mapping[str, int],
        fits: Callable[[Row], bool] | None = None,
    ) -> list[Row]:
        """`rows`, consecutive groups of `group` copies of one row as GRPO samples them, with
        each group whose row belongs to a family of `levels` at another level replaced by
        `group` copies of the next reserve row at the family's level that `fits` (a row that
        does not fit is dropped from the reserve); a group with no such row stays as it is."""
        if group < 1 or len(rows) % group:
            return list(rows)
        out: list[Row] = []
        for start in range(0, len(rows), group):
            block = list(rows[start : start + group])
            family = block[0].get("family")
            want = levels.get(family) if family else None
            pick = None
            if want is not None and block[0].get("level") != want:
                pick = self._take((family, want), fits)
            if pick is None:
                out.extend(block)
                continue
            out.extend(dict(pick) for _ in range(group))
            self.swapped += 1
        return out

    def _take(self, key: tuple[str, int], fits: Callable[[Row], bool] | None) -> Row | None:
        candidates = self._rows.get(key, [])
        while candidates:
            i = self._next.get(key, 0) % len(candidates)
            row = candidates[i]
            if fits is None or fits(row):
                self._next[key] = i + 1
                return row
            del candidates[i]  # too long a prompt: never a candidate again
        return None

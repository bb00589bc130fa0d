"""The engine's games sampling through a server (`serving.mode: server`).

Covers: `GameServer`, what `sparring.phases.game_loop` needs to play a game through a running
OpenAI-compatible server instead of in process: the arena's client (`OpenAIServerClient`,
`serving.concurrency` requests in flight, each role's bare adapter name resolved to its latest
published version), `publish` (every role's adapter saved by the policy and loaded into the
server as the role's next version, without a restart; the runner publishes the starting
adapters, then after every update) and `fresh` (drops records sampled more than
`serving.max_staleness` versions behind their role's latest, so a rollout from an older policy
never trains the newer one).

The training loop stays play-then-train: each step samples from the version the last update
published. Overlapping the next step's sampling with the current update is done by
sparring.serving.rollouts for single-role GRPO (with the same policy update); a game's episodes
are not overlapped.

Does not cover: starting the server (`sparring serve`, sparring.serving.engines), the policy's
update (sparring.backends), the code duel's server sampling (sparring.serving.duel).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sparring.serving.client import OpenAIServerClient
from sparring.serving.engines import RUNTIME_LORA
from sparring.serving.publisher import Publisher
from sparring.serving.versions import staleness


class GameServer:
    """A game's roles sampled from `cfg.serving.url`, their adapters published from `policy`."""

    def __init__(self, cfg: Any, policy: Any, base: str, work_dir: str) -> None:
        from sparring.serving.duel import require_server

        require_server(cfg.serving.url)
        self.cfg, self.policy = cfg, policy
        self.work_dir = Path(work_dir)
        self.keep = cfg.serving.max_staleness + 1
        self.publisher = Publisher(cfg.serving.url, cfg.serving.engine, keep=self.keep)
        base_model = None
        if cfg.serving.engine not in RUNTIME_LORA:  # adapters are chosen per request on this base
            from sparring.serving.launch import resolve_source

            base_model = resolve_source(base)
        self.client = OpenAIServerClient(
            cfg.serving.url,
            cfg.serving.concurrency,
            base_model=base_model,
            token_logprobs=False,  # the policy recomputes log-probabilities when it trains
            publisher=self.publisher,
        )
        self.published = 0

    def publish(self, meta: dict[str, Any]) -> dict[str, int]:
        """Save every role's adapter and load each into the server as its next version."""
        self.published += 1
        folder = self.work_dir / f"v{self.published}"
        self.policy.save(str(folder), meta)
        versions = {
            role.name: self.publisher.publish(role.name, role)
            for role in sorted(folder.iterdir())
            if role.is_dir()
        }
        # mlx-lm reads a version's folder at each request: keep the folders still served
        old = self.work_dir / f"v{self.published - self.keep}"
        if self.published > self.keep and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
        return versions

    def fresh(self, records: list[Any]) -> tuple[list[Any], int]:
        """(records to train on, how many were dropped as stale), per role's latest version."""
        limit = self.cfg.serving.max_staleness
        kept = [r for r in records if staleness(r, self.publisher.current(r.role)) <= limit]
        return kept, len(records) - len(kept)

    async def aclose(self) -> None:
        await self.client.aclose()

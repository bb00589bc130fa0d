"""The self-play engine: any multi-agent interaction as a training loop.

Covers five abstractions and the loop around them:
- `core`: Role, Completion, ModelClient, Step, EpisodeRequest, Rollout, TrainingRecord, Episode,
  Rubric (what a game is written in; pure);
- `credit`: advantages from rewards, per level of the episode tree (GRPO, RAE, constant; pure);
- `arena`: the Arena (roles, episodes, batched rollouts, the artifact store) and the training
  batch it builds from scored rollouts (pure: the model sits behind a ModelClient);
- `local`: the in-process ModelClient, which batches concurrent model calls into one backend call;
- `game`: the base every game subclasses.
A library the games and phases use; it imports neither. Does not cover: running a game as a
phase, the loop with its backend, server, MLflow and saved adapters (sparring.phases.game_loop),
the games themselves (sparring.games) or the model library (sparring.backends).
"""

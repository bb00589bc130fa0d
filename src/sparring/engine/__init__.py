"""The self-play engine: any multi-agent interaction as a training loop.

Covers five abstractions and the loop around them:
- `core`: Role, Completion, ModelClient, Step, EpisodeRequest, Rollout, TrainingRecord, Episode,
  Rubric (what a game is written in; pure);
- `credit`: advantages from rewards, per level of the episode tree (GRPO, RAE, constant; pure);
- `arena`: the Arena (roles, episodes, batched rollouts, the artifact store) and the training
  batch it builds from scored rollouts (pure: the model sits behind a ModelClient);
- `local`: the in-process ModelClient, which batches concurrent model calls into one backend call;
- `runner`: `run_game`, the loop (rollouts, credit, one policy update per step, MLflow, progress,
  held-out evaluation, the saved adapters).
Does not cover: the games themselves (sparring.games) or the model library (sparring.backends).
"""

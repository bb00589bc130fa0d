"""The self-play engine's games: who plays whom and how a play is scored.

Covers: the engine's games, one module each (`proposer_solver`, `debate`, `negotiation`,
`red_blue`, `refine_loop`, `elo_arena`, `dataset_rl`), listed with their config checks in
`registry`.
Does not cover: the code duel, Sparring's own game of answerer against test generator, which
trains through TRL phases (sparring.rewards.code_duel), the engine (sparring.engine) or training.
"""

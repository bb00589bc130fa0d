"""Games: who plays whom and how a play is scored.

Covers: `code_duel` (the answerer against the test generator on programming problems, the
rewards the code duel's TRL phases train on, and its proposer mode) and the self-play engine's
games, one module each (`proposer_solver`, `debate`, `negotiation`, `red_blue`, `refine_loop`,
`elo_arena`, `dataset_rl`), listed with their config checks in `registry`.
Does not cover: the engine (sparring.engine) or training (sparring.phases, sparring.backends).
"""

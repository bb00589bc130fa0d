"""Games: who plays whom and how a play is scored.

Covers: `base` (Role, Rollout, Rubric, group and tree advantages: the small engine every game
uses) and `code_duel` (the answerer against the test generator on programming problems, with
the proposer mode). Does not cover: training (sparring.phases, sparring.backends).
"""

"""Evaluation of a run: HumanEval in the sandbox, held-out and bank pass rates of every answerer
snapshot, cross-play with Elo ratings, reward-hacking signals, selection, the learning summary
(held-out gains with bootstrap intervals) and the run report (plots, report.md).

One module per concern: humaneval, sampling, crossplay, hacking, rounds, snapshots, learning,
report. Importing the package imports nothing.
"""

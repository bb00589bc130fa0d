"""Training: GRPO phases on TRL/PEFT (grpo), the phase order (schedule), checkpoints, and the
plain-Python runner (loop). Importing this package is cheap; torch/TRL load inside the functions.
"""

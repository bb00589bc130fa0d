"""KFP pipelines of Sparring (see selfplay.py)."""

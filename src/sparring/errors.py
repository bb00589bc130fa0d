"""The one exception type for user mistakes: the CLI prints its message, never a traceback."""


class SparringError(Exception):
    """A user-facing error (bad config, missing file, unreachable model): one line that says
    what is wrong and how to fix it."""

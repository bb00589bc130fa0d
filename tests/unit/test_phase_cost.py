"""A phase's cost figures (sparring.tracking.resources): each phase in one process gets its own
peak resident memory, and CPU and wall seconds of its own."""

from __future__ import annotations

import time

from sparring.tracking import resources


def _hold(mb: int) -> bytearray:
    block = bytearray(mb * 1024 * 1024)
    block[::4096] = b"x" * len(block[::4096])  # touch every page: resident, not just reserved
    return block


def test_a_later_phase_in_the_same_process_reports_its_own_peak():
    first = resources.PhaseCost()
    block = _hold(200)
    big = first.figures()["phase/peak_rss_mb"]
    del block
    second = resources.PhaseCost()
    small = second.figures()["phase/peak_rss_mb"]
    assert second.own_peak, "this Linux lets a process reset its peak (/proc/self/clear_refs)"
    assert big - small > 150, (big, small)


def test_cpu_and_wall_seconds_are_the_phases_own():
    cost = resources.PhaseCost()
    time.sleep(0.2)  # wall time, no CPU
    spin = time.process_time() + 0.2
    while time.process_time() < spin:
        pass
    figures = cost.figures()
    assert figures["phase/wall_s"] >= 0.39
    assert 0.15 <= figures["phase/cpu_s"] <= figures["phase/wall_s"]


def test_phase_costs_doctests():
    import doctest

    assert doctest.testmod(resources).failed == 0

"""Hypothesis for this suite: no per-example deadline and no "too slow" health check. Both measure wall-clock time,
which a loaded 2-CPU machine stretches (test_ranks ran under the default 200 ms deadline, a flake in waiting); the
suite never asserts on time. The number of examples stays each test's own (`@settings(max_examples=…)`)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile("sglang-tui", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("sglang-tui")

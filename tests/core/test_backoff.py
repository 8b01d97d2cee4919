from __future__ import annotations

import random

from hybridinfer.core.backoff import Backoff, exponential_s, full_jitter_s


def test_steps_double_from_one_to_sixty_four_seconds() -> None:
    assert [exponential_s(1.0, 64.0, step) for step in range(9)] == [
        1.0,
        2.0,
        4.0,
        8.0,
        16.0,
        32.0,
        64.0,
        64.0,
        64.0,
    ]
    assert exponential_s(1.0, 64.0, 10_000) == 64.0  # no overflow however long it fails


def test_background_delays_jitter_around_each_step_and_reset() -> None:
    backoff = Backoff(rng=random.Random(3))
    delays = [backoff.next_s() for _ in range(8)]
    for delay, centre in zip(delays, [1, 2, 4, 8, 16, 32, 64, 64], strict=True):
        assert 0.8 * centre <= delay <= 1.2 * centre
    assert len(set(delays)) == len(delays)  # jittered, not lock step
    backoff.reset()
    assert backoff.current_s == 1.0


def test_full_jitter_spans_zero_to_the_step() -> None:
    rng = random.Random(5)
    waits = [full_jitter_s(0.05, 1.0, 2, rng) for _ in range(500)]
    assert all(0.0 <= wait <= 0.2 for wait in waits)
    assert min(waits) < 0.02
    assert max(waits) > 0.18

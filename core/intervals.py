"""Confidence intervals of a score: the 95% Wilson interval of a proportion."""
from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval (low, high) of `successes` out of `n` trials; (0, 1) for no trial.
    Fractional successes (weighted scores) are read as the proportion successes / n."""
    if n <= 0:
        return 0.0, 1.0
    p = min(max(successes / n, 0.0), 1.0)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at p = 0 or 1 the bound is exactly 0 or 1; floating point would leave it a hair inside
    return (0.0 if p == 0 else max(0.0, centre - half)), (1.0 if p == 1 else min(1.0, centre + half))

"""Is a difference real? Paired tests on per-query scores, Holm correction, bootstrap intervals.

- Paired randomization test (Fisher; Smucker, Allan & Carterette, CIKM 2007): the sign of each
  per-query difference is flipped at random; p = share of permutations whose |mean| is at least
  the observed one (seeded, vectorised).
- Wilcoxon signed-rank test (scipy.stats.wilcoxon).
- Holm–Bonferroni step-down correction (Holm 1979) of the randomization p-values over every
  comparison of a metric.
- 95% percentile bootstrap interval of each system's mean (scipy.stats.bootstrap, seeded).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import polars as pl
from scipy import stats

__all__ = ["bootstrap_ci", "compare", "holm", "paired_randomization", "wilcoxon"]


def paired_randomization(
    a: np.ndarray, b: np.ndarray, *, permutations: int = 10_000, seed: int = 0
) -> float:
    """Two-sided p-value that the mean of ``a - b`` is zero (sign-flip permutation test).

    ``p = (1 + #{permutations with |mean(sign * d)| >= |mean(d)| - 1e-12}) / (permutations + 1)``
    with ``d = a - b`` and the signs ``rng.choice([-1.0, 1.0], (permutations, n))`` of
    ``np.random.default_rng(seed)``.

    The signs depend only on ``seed``, ``permutations`` and ``n``, so they are drawn once
    (:func:`_signs`) and shared by every comparison of an evaluation. The permuted means are
    first computed by one float32 matrix-vector product; a permutation whose mean lies within
    that product's error bound of the threshold (ties above all) is then recomputed exactly as
    ``np.abs((signs * d).mean(axis=1))`` computes it, so the count, and the p-value, are those
    of that expression.
    """
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.size == 0 or not np.any(d):
        return 1.0
    n = d.size
    threshold = abs(d.mean()) - 1e-12
    signs = _signs(seed, permutations, n)
    approx = np.abs((signs @ d.astype(np.float32)).astype(np.float64)) / n
    # |approx - exact| <= rounding d to float32 + any float32 summation order + float64 mean
    u32, u64 = float(np.finfo(np.float32).eps), float(np.finfo(np.float64).eps)
    bound = 2.0 * ((n + 2) * u32 + n * u64) * float(np.abs(d).sum()) / n
    unsure = np.flatnonzero(np.abs(approx - threshold) <= bound)
    at_least = int(np.sum(approx - threshold > bound))
    for start in range(0, unsure.size, _BLOCK):  # the exact means, a block at a time
        rows = signs[unsure[start : start + _BLOCK]] > 0
        at_least += int(np.sum(np.abs(np.where(rows, d, -d).mean(axis=1)) >= threshold))
    return float((at_least + 1) / (permutations + 1))


_BLOCK = 1024  # permutations per block of exact means in paired_randomization


@functools.lru_cache(maxsize=8)
def _signs(seed: int, permutations: int, n: int) -> np.ndarray:
    """The permutations' signs, as ``rng.choice([-1.0, 1.0], (permutations, n))`` draws them.

    Drawn by exactly that call on ``np.random.default_rng(seed)``, so the stream is the one the
    test has always used; kept as float32 (+-1 is exact in it), read-only, as they are shared.
    """
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(permutations, n)).astype(np.float32)
    signs.setflags(write=False)
    return signs


def wilcoxon(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value (1.0 when every difference is zero)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if not np.any(d):
        return 1.0
    return float(stats.wilcoxon(d, zero_method="wilcox").pvalue)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values: sorted ascending, ``p_(i) * (m - i)`` made monotone, capped at 1.

    Example:
        >>> [round(p, 3) for p in holm([0.01, 0.04, 0.03])]
        [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for i, idx in enumerate(order):
        running = max(running, min(1.0, p[idx] * (m - i)))
        adjusted[idx] = running
    return adjusted.tolist()


def bootstrap_ci(x: np.ndarray, *, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (2,000 resamples).

    Computed as ``scipy.stats.bootstrap(..., method="percentile", n_resamples=2000,
    rng=np.random.default_rng(seed))`` computes it: the resamples are the rows of
    ``rng.integers(0, n, (2000, n))``, the interval the ``scipy.stats.quantile`` of their means.
    The resamples depend only on ``seed`` and ``n``, so they are drawn once (:func:`_resamples`)
    and shared by every system and metric of an evaluation; the tests check the interval
    against scipy's own.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2 or np.all(x == x[0]):
        v = float(x.mean()) if x.size else float("nan")
        return v, v
    means = np.mean(x[_resamples(seed, _RESAMPLES, x.size)], axis=-1)
    alpha = np.asarray((1 - level) / 2, dtype=means.dtype)
    ci = stats.quantile(means, np.stack((alpha, 1 - alpha), axis=-1), axis=-1)
    return float(ci[..., 0]), float(ci[..., 1])


_RESAMPLES = 2000


@functools.lru_cache(maxsize=8)
def _resamples(seed: int, resamples: int, n: int) -> np.ndarray:
    """The bootstrap's resampled positions, drawn as scipy draws them; int32, read-only."""
    drawn = np.random.default_rng(seed).integers(0, n, size=(resamples, n), dtype=np.int64)
    out = drawn.astype(np.int32)
    out.setflags(write=False)
    return out


def compare(
    per_query: pl.DataFrame, baseline: str, *, alpha: float = 0.05, seed: int = 0
) -> pl.DataFrame:
    """Every system against ``baseline`` on every metric.

    Args:
        per_query: ``system, query_id, metric, value`` rows.
        baseline: the system compared against.
        alpha: significance level after Holm correction.
        seed: seed of the permutations and the bootstrap.

    Returns:
        One row per (system, metric): mean, ci_low, ci_high, delta, p_randomization,
        p_wilcoxon, p_holm, significant.
    """
    rows = []
    for (metric,), part in per_query.group_by("metric", maintain_order=True):
        wide = part.pivot(on="system", index="query_id", values="value").fill_null(0.0)
        base = wide[baseline].to_numpy()
        for system in [c for c in wide.columns if c != "query_id"]:
            x = wide[system].to_numpy()
            lo, hi = bootstrap_ci(x, seed=seed)
            same = system == baseline
            rows.append(
                {
                    "system": system,
                    "metric": metric,
                    "mean": float(x.mean()),
                    "ci_low": lo,
                    "ci_high": hi,
                    "delta": float(x.mean() - base.mean()),
                    "p_randomization": 1.0 if same else paired_randomization(x, base, seed=seed),
                    "p_wilcoxon": 1.0 if same else wilcoxon(x, base),
                }
            )
    out = pl.DataFrame(rows)
    if out.height == 0:
        return out
    adjusted: list[tuple[str, str, float]] = []
    for (_metric,), part in out.group_by("metric", maintain_order=True):
        ps = part["p_randomization"].to_list()
        adjusted.extend(zip(part["system"], part["metric"], holm(ps), strict=True))
    adj = pl.DataFrame(adjusted, schema=["system", "metric", "p_holm"], orient="row")
    out = out.join(adj, on=["system", "metric"])
    return out.with_columns(
        ((pl.col("p_holm") < alpha) & (pl.col("system") != baseline)).alias("significant")
    )

"""Reliability: failure categories and rates, a vectorized Monte Carlo, ETTR and checkpoint policy.

Rates. Per-category rates are derived from FF's one-year Xid table (Table V-VI: 10,000 GPUs,
12,970 events), the monthly hardware faults of Table VII (Oct 2023 - Mar 2024) and the daily IB
link failures of Table VIII (213 events from 2023-04-19 to 2024-03-31). A cluster scenario may
replace them, e.g. with Meta's per-node rates (HPCA 2025: 6.50 failures per 1,000 node-days on
RSC-1, 2.34 on RSC-2).

ETTR. Failures arrive as a Poisson process of rate lambda at any time, also during checkpoint
writes and restarts. A job checkpoints after every tau of work at cost delta; a failure loses the
work since the last completed checkpoint and costs a restart R, and a failure during a restart
starts the restart again. Then one segment (tau + delta) takes on average
e^(lambda R) (e^(lambda (tau + delta)) - 1) / lambda, so

    ETTR = tau lambda e^(-lambda R) / (e^(lambda (tau + delta)) - 1),

maximised where e^(lambda (tau + delta)) (1 - lambda tau) = 1, that is at
tau* = M (1 + W0(-e^(-1 - delta/M))) with M = 1/lambda, independent of R. Young (1974)
approximates tau* by sqrt(2 delta M); Daly (2006) adds higher-order terms.
"""
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from simcore.arrays import as_array
from simcore.errors import ScenarioError

HOURS_PER_YEAR = 8760.0
FF_GPUS = 10_000
FF_NODES = 1_250


@dataclass(frozen=True)
class FailureCategory:
    """One kind of failure: its rate, whether it stops the job, and what fixing it costs.

    rate_per_unit_hour is per GPU for GPU-level causes and per node for node-level ones (``unit``).
    action: job-restart (software; the node is fine), gpu-reset, node-reboot, replace (RMA).
    repair_h: how long the node is out of service (0 when it goes straight back).
    """

    key: str
    label: str
    unit: str  # "gpu" or "node"
    rate_per_unit_hour: float
    interrupts_job: bool
    action: str
    repair_h: float
    source: str


def _ff_xid(count: int) -> float:
    return count / (FF_GPUS * HOURS_PER_YEAR)


FF_TABLE = "FF (arXiv:2408.14158) Tables V-VI, one year, 10,000 GPUs"

# The Fire-Flyer Xid table, one category per Xid code, with its action (FF VII-C).
FF_XID_COUNTS = {
    74: ("NVLink error", 5521, "node-reboot", 2.0),
    13: ("graphics engine exception (software)", 45, "job-restart", 0.0),
    31: ("GPU memory page fault (software)", 2487, "job-restart", 0.0),
    43: ("GPU stopped processing (software)", 4342, "job-restart", 0.0),
    45: ("preemptive cleanup (software)", 240, "job-restart", 0.0),
    63: ("ECC page retirement / row remapping", 245, "gpu-reset", 0.1),
    64: ("ECC page retirement / row remapping failure", 2, "gpu-reset", 0.1),
    94: ("contained ECC error", 13, "gpu-reset", 0.1),
    95: ("uncontained ECC error", 17, "gpu-reset", 0.1),
    44: ("graphics engine fault during context switch", 1, "node-reboot", 0.5),
    48: ("double-bit ECC error", 2, "node-reboot", 0.5),
    61: ("internal micro-controller breakpoint", 13, "node-reboot", 0.5),
    62: ("internal micro-controller halt", 3, "node-reboot", 0.5),
    69: ("graphics engine class error", 1, "node-reboot", 0.5),
    79: ("GPU has fallen off the bus", 37, "replace", 72.0),
    119: ("GSP timeout (mostly RMA)", 1, "replace", 72.0),
}
# Xid 45 (preemptive cleanup) is logged when a job is killed: a consequence, not a cause.
CONSEQUENCE_XIDS = (45,)
XID_CLASSES = {
    "nvlink": (74,),
    "software": (13, 31, 43, 45),
    "memory-ecc": (63, 64, 94, 95),
    "uncorrectable": (44, 48, 61, 62, 69, 79),
    "gsp": (119,),
}

# Node-level causes from FF Tables VII and VIII.
IB_DAYS = 347  # 2023-04-19 .. 2024-03-31
FF_NODE_CATEGORIES = [
    FailureCategory(
        "ib-link", "IB link flash cut", "node", 213 / (FF_NODES * IB_DAYS * 24), True, "job-restart", 0.0,
        "FF Table VIII: 213 IB link failures in 347 days, about 1,250 nodes",
    ),
    FailureCategory(
        "host-memory-ecc", "CPU memory ECC error", "node", 54 / (FF_NODES * 182.5 * 24), True, "node-reboot", 4.0,
        "FF Table VII: 54 CPU-memory ECC faults, Oct 2023 - Mar 2024",
    ),
]

REPAIR_BASIS = (
    "Repair times are estimates: a reset or reboot returns within minutes to an hour; a fallen-off-"
    "bus GPU or GSP fault means an RMA swap (72 h); FF gives no repair times."
)


def fire_flyer_categories() -> list[FailureCategory]:
    """The default failure profile: FF's Xid table per GPU plus its node-level hardware faults."""
    categories = [
        FailureCategory(
            f"xid-{code}", f"Xid {code}: {name}", "gpu", _ff_xid(count), code not in CONSEQUENCE_XIDS, action,
            repair_h, FF_TABLE,
        )
        for code, (name, count, action, repair_h) in FF_XID_COUNTS.items()
    ]
    return categories + FF_NODE_CATEGORIES


def meta_node_categories(failures_per_1000_node_days: float) -> list[FailureCategory]:
    """A single node-level category at a published per-node rate (Meta HPCA 2025)."""
    rate = as_array(failures_per_1000_node_days, "reliability.failures_per_1000_node_days", positive=True)
    return [FailureCategory(
        "node-failure", "node failure (any cause)", "node", float(rate) / 1000 / 24, True, "node-reboot", 4.0,
        "Meta, Revisiting Reliability in Large-Scale ML Research Clusters, HPCA 2025",
    )]


def category_rates(categories: list[FailureCategory], gpus, nodes):
    """Events per hour by category for a job or cluster of ``gpus`` on ``nodes``: shape (..., C)."""
    per_unit = np.array([c.rate_per_unit_hour for c in categories])
    is_gpu = np.array([c.unit == "gpu" for c in categories])
    units = np.where(is_gpu, np.asarray(gpus, float)[..., None], np.asarray(nodes, float)[..., None])
    return per_unit * units


def interruption_rate_per_hour(categories, gpus, nodes):
    """Rate of job-stopping failures for a job spanning ``gpus`` on ``nodes`` (series system)."""
    gpu_rate = sum(c.rate_per_unit_hour for c in categories if c.interrupts_job and c.unit == "gpu")
    node_rate = sum(c.rate_per_unit_hour for c in categories if c.interrupts_job and c.unit == "node")
    return gpu_rate * np.asarray(gpus, float) + node_rate * np.asarray(nodes, float)


def sample_category_counts(categories, gpus, nodes, hours, replicas: int, rng: np.random.Generator):
    """Monte Carlo event counts by category over ``hours``: shape (replicas, ..., C), Poisson."""
    lam = category_rates(categories, gpus, nodes) * np.asarray(hours, float)[..., None]
    return rng.poisson(lam, size=(replicas, *lam.shape))


def ettr_closed_form(interval_s, checkpoint_s, restart_s, rate_per_s):
    """Expected effective-training-time ratio for periodic checkpoints (module docstring)."""
    lam = np.asarray(rate_per_s, float)
    tau = np.asarray(interval_s, float)
    x = lam * (tau + checkpoint_s)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = tau * lam * np.exp(-lam * restart_s) / np.expm1(x)
    no_failures = tau / (tau + np.asarray(checkpoint_s, float))
    return np.where(lam > 0, ratio, no_failures)


def optimal_interval_s(checkpoint_s, rate_per_s):
    """Exact ETTR-optimal work between checkpoints (Lambert W), independent of the restart time."""
    m = 1.0 / np.asarray(rate_per_s, float)
    delta = np.asarray(checkpoint_s, float)
    from scipy import special  # loaded on first use: importing simcore stays fast

    return m * (1 + special.lambertw(-np.exp(-1 - delta / m), 0).real)


def young_interval_s(checkpoint_s, rate_per_s):
    """Young (1974): tau = sqrt(2 delta M)."""
    return np.sqrt(2 * np.asarray(checkpoint_s) / np.asarray(rate_per_s))


def daly_interval_s(checkpoint_s, rate_per_s):
    """Daly (2006) higher-order estimate (valid for delta < 2M; M - delta beyond)."""
    delta = np.asarray(checkpoint_s, float)
    m = 1.0 / np.asarray(rate_per_s, float)
    r = np.sqrt(delta / (2 * m))
    estimate = np.sqrt(2 * delta * m) * (1 + r / 3 + r**2 / 9) - delta
    return np.where(delta < 2 * m, estimate, m - delta)


def _truncated_exponential_sum(counts, rate, upper, rng):
    """Sum, per cell, of ``counts`` exponential(rate) draws conditioned to fall below ``upper``."""
    counts = np.asarray(counts)
    total = int(counts.sum())
    rate_b, upper_b = np.broadcast_arrays(np.asarray(rate, float), np.asarray(upper, float))
    rate_b = np.broadcast_to(rate_b, counts.shape).ravel()
    upper_b = np.broadcast_to(upper_b, counts.shape).ravel()
    owner = np.repeat(np.arange(counts.size), counts.ravel())
    u = rng.random(total)
    r, b = rate_b[owner], upper_b[owner]
    draws = -np.log1p(-u * -np.expm1(-r * b)) / r  # inverse CDF of Exp(r) truncated to [0, b)
    return np.bincount(owner, weights=draws, minlength=counts.size).reshape(counts.shape)


def ettr_monte_carlo(interval_s, checkpoint_s, restart_s, rate_per_s, *, segments: int, replicas: int,
                     rng: np.random.Generator):
    """Monte Carlo ETTR over ``replicas`` jobs of ``segments`` checkpoint segments each.

    Same accounting as :func:`ettr_closed_form`, simulated event by event but vectorized: per
    replica the failed attempts of all segments are negative-binomial, each wastes a truncated-
    exponential stretch of its segment, and each failure's restart fails a negative-binomial
    number of times before it completes. Returns ETTR with shape (replicas, *broadcast shape).
    """
    tau, delta, restart, lam = np.broadcast_arrays(*(np.asarray(v, float) for v in
                                                     (interval_s, checkpoint_s, restart_s, rate_per_s)))
    shape = (replicas, *tau.shape)
    seg = tau + delta
    p_segment = np.exp(-lam * seg)
    p_restart = np.exp(-lam * restart)
    # A segment or restart that succeeds with probability below 1e-9 never completes in practice:
    # ETTR 0 there (sampling it would need ~1e9 failures per segment).
    hopeless = np.broadcast_to((p_segment < 1e-9) | (p_restart < 1e-9), shape)
    p_segment = np.where(hopeless, 1.0, np.broadcast_to(p_segment, shape))
    p_restart = np.where(hopeless, 1.0, np.broadcast_to(p_restart, shape))
    failures = rng.negative_binomial(segments, p_segment)
    failed_restarts = rng.negative_binomial(np.maximum(failures, 1), p_restart)
    failed_restarts = np.where(failures > 0, failed_restarts, 0)
    lost_work = _truncated_exponential_sum(failures, lam, seg, rng)
    lost_restarts = _truncated_exponential_sum(failed_restarts, lam, restart, rng)
    wall = segments * seg + lost_work + failures * restart + lost_restarts
    return np.where(hopeless, 0.0, segments * tau / wall)


def node_availability(repair_rate_per_hour, mttr_h):
    """Steady-state availability of a node: 1 / (1 + r MTTR)."""
    return 1.0 / (1.0 + np.asarray(repair_rate_per_hour) * np.asarray(mttr_h))


def spares_needed(job_nodes, availability, confidence=0.99, max_iterations: int = 64):
    """Smallest number of spare nodes s with P(at least ``job_nodes`` of job_nodes + s are up)
    >= ``confidence`` (independent nodes, binomial tail).

    With F ~ Binomial(n + s, 1 - A) failed nodes, s must satisfy s >= ppf(confidence; n + s). The
    right side grows with s, so iterating s <- ppf(confidence; n + s) from 0 climbs to the least
    such s. Evaluated once per distinct (n, A) pair, so a sweep costs what its distinct jobs cost.
    """
    n, a = np.broadcast_arrays(np.asarray(job_nodes, float), np.asarray(availability, float))
    if n.size == 1:  # one job: memoized, as plan pages and previews ask the same question repeatedly
        return np.full(n.shape, _spares_for_one(float(n.ravel()[0]), float(a.ravel()[0]), float(confidence),
                                                max_iterations))
    if np.all(a == a.flat[0]):  # one node availability (one node type): distinct job sizes alone
        sizes, inverse = _distinct(n.ravel())
        failure = np.full(sizes.shape, 1.0 - a.flat[0])
    else:
        pairs, inverse = np.unique(n.ravel() + 1j * a.ravel(), return_inverse=True)
        sizes, failure = pairs.real, 1.0 - pairs.imag
    return _climb_spares(sizes, failure, confidence, max_iterations)[inverse.ravel()].reshape(n.shape)


def _distinct(values):
    """(distinct values, index of each value among them), as ``np.unique(..., return_inverse=True)``;
    whole node counts use a lookup table instead of a sort (linear in the number of points)."""
    top = values.max() if values.size else 0.0
    if 0 <= values.min() and top <= 10_000_000 and np.all(values == np.floor(values)):
        whole = values.astype(np.int64)
        present = np.zeros(int(top) + 1, bool)
        present[whole] = True
        sizes = np.flatnonzero(present)
        position = np.zeros(present.size, np.int64)
        position[sizes] = np.arange(sizes.size)
        return sizes.astype(float), position[whole]
    return np.unique(values, return_inverse=True)


@lru_cache(maxsize=4096)
def _spares_for_one(nodes: float, availability: float, confidence: float, max_iterations: int) -> float:
    return float(_climb_spares(np.array([nodes]), np.array([1.0 - availability]), confidence, max_iterations)[0])


def _climb_spares(nodes, failure, confidence, max_iterations):
    from scipy import stats  # loaded on first use: importing simcore stays fast

    spares = np.zeros_like(nodes)
    for _ in range(max_iterations):
        climbed = stats.binom.ppf(confidence, nodes + spares, failure)
        if np.array_equal(climbed, spares):
            return spares
        spares = climbed
    raise ScenarioError("cluster.reliability", f"no spare-node count reaches the confidence: node availability "
                                               f"is as low as {float(1 - failure.max()):.3g}")

"""Compute: sustained clocks under a power cap, achieved GEMM throughput, MFU and HFU.

Model (see docs/engine.md): achieved GEMM = peak x the family's large-GEMM share (simcore.formulas.devices)
x clock factor. Dynamic
power scales roughly as f * V^2 and, under DVFS, V tracks f, so dynamic power ~ f^3. A board
whose cap P_cap is below the power P_full the die would draw at full clock sustains

    f / f_max = ((P_cap - P_static) / (P_full - P_static)) ** (1/3)

This is why the 250 W PCIe A100 reaches about 83% of the 400 W SXM A100 in GEMM (FF Table II).
"""
import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from simcore.arrays import as_array, where
from simcore.errors import ScenarioError


@dataclass(frozen=True)
class ComputeParams:
    """Calibrated compute constants.

    static_power_fraction: share of full-clock power that does not scale with clock (leakage,
        memory, board). Basis: an A100 SXM4 idles near 50 W of its 400 W (estimate, 0.125).
    """

    static_power_fraction: float = 0.125


def full_clock_w(acc, family_full_clock_w=float("nan")) -> np.ndarray:
    """The accelerator's power running dense GEMM at full clock: the catalogue's figure, else its
    family's (:func:`full_clock_power_from` a sustained-rate measurement), else its TDP (unknown:
    the cap is taken never to bind)."""
    family_w = where(np.isnan(family_full_clock_w), acc["tdp_w"], family_full_clock_w)
    return where(np.isnan(acc["full_clock_power_w"]), family_w, acc["full_clock_power_w"])


def full_clock_power_from(sustained_share, power_w, params: ComputeParams = ComputeParams()) -> float:
    """The power a die would draw at full clock, from one measurement of the share of its full-clock
    rate it sustains capped at ``power_w``: :func:`sustained_clock_factor` inverted,
    P_full = P / (s + (1 - s) f^3) with s the static share."""
    static = params.static_power_fraction
    return power_w / (static + (1 - static) * sustained_share**3)


def sustained_clock_factor(tdp_w, full_clock_power_w, params: ComputeParams = ComputeParams()):
    """Fraction of the maximum clock a power-capped part sustains under dense GEMM (<= 1).

    ``full_clock_power_w`` <= ``tdp_w`` (or equal) means the cap never binds: factor 1.
    """
    tdp_w = as_array(tdp_w, "accelerator.tdp_w", positive=True)
    full_w = as_array(full_clock_power_w, "accelerator.full_clock_power_w", positive=True)
    static_w = params.static_power_fraction * full_w
    dynamic_share = np.clip((tdp_w - static_w) / (full_w - static_w), 0.0, 1.0)
    return where(tdp_w >= full_w, 1.0, np.minimum(np.cbrt(dynamic_share), 1.0))


def accelerator_power_w(tdp_w, full_clock_power_w, params: ComputeParams = ComputeParams()):
    """(power under dense GEMM, idle power) of one accelerator: static + dynamic x clock^3 vs static."""
    full_w = as_array(full_clock_power_w, "accelerator.full_clock_power_w", positive=True)
    static_w = params.static_power_fraction * full_w
    clock = sustained_clock_factor(tdp_w, full_w, params)
    return static_w + (full_w - static_w) * clock**3, static_w


def gemm_tflops(peak_tflops, tdp_w, full_clock_power_w, gemm_fraction, params: ComputeParams = ComputeParams()):
    """Achieved large dense GEMM TFLOPS per accelerator (NaN where the datasheet gives no peak):
    peak x the family's large-GEMM share x the sustained clock factor."""
    peak = np.asarray(peak_tflops, float)
    return peak * gemm_fraction * sustained_clock_factor(tdp_w, full_clock_power_w, params)


# Per-lane data rate of each PCIe generation after line encoding, GB/s one way (PCI-SIG specs:
# 8/16/32 GT/s with 128b/130b; Gen6 64 GT/s PAM4 with FLIT encoding, ~242/256 efficiency).
PCIE_LANE_GBYTE_S = {3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
# Achieved / nominal on a host link: FF III-A measured > 27 GB/s GPU-to-CPU on PCIe 4.0 x16 (31.5).
PCIE_EFFICIENCY = 27.0 / 31.5


def pcie_practical_gbyte_s(generation: int, lanes: int) -> float:
    """Practical one-way host-link rate of a GPU: lanes x per-lane rate x measured efficiency."""
    if generation not in PCIE_LANE_GBYTE_S:
        raise ScenarioError("accelerator.host_pcie_gen", f"unknown PCIe generation {generation}")
    return PCIE_LANE_GBYTE_S[generation] * lanes * PCIE_EFFICIENCY


# E[max of n standard normal draws] is tabulated at n = 2^(i / 16) and read between by log2 n (smooth
# there; exact at the tabulated counts, 8 among them), in tables of 128, 256 or 512 rows (up to 2^8,
# 2^16 and 2^32 draws): the smallest that covers the largest n asked for, each integrated once.
_ROWS_PER_DOUBLING = 16
_TABLE_ROWS = (128, 256, 512)


@cache
def _expected_max_table(rows: int) -> np.ndarray:
    """E[max] at n = 2^(i / 16), i < ``rows``: the integral of x d(Phi(x)^n) on a grid of x."""
    x = np.linspace(-9.0, 9.0, 901)
    cdf = np.array([0.5 * math.erfc(-value / math.sqrt(2.0)) for value in x])
    counts = 2.0 ** (np.arange(rows) / _ROWS_PER_DOUBLING)
    with np.errstate(under="ignore"):  # far below the maximum Phi^n is zero
        cdf_n = cdf[None, :] ** counts[:, None]
        return (np.diff(cdf_n, axis=1) * (x[1:] + x[:-1]) / 2).sum(axis=1)


def expected_max_normal(n) -> np.ndarray:
    """E[max of ``n`` independent standard normal draws] (0 for one draw; 1.4236 for 8; 2.34 for 64;
    3.25 for 1,024), from a table in log2 n."""
    position = np.log2(np.maximum(np.asarray(n, float), 1.0)) * _ROWS_PER_DOUBLING
    needed = int(np.max(position)) + 2
    table = _expected_max_table(next(rows for rows in _TABLE_ROWS if rows >= needed))
    return np.interp(position, np.arange(len(table)), table)


# A node's spread is published as the range across its 8 GPUs; the expected range of 8 normal
# draws is 2 x 1.4236 standard deviations.
SPREAD_GPUS = 8


def straggler_slowdown(rate_spread, gpus) -> np.ndarray:
    """Extra time a synchronous step takes because it waits for its slowest GPU, as a share of the
    mean GPU's compute time. Each GPU's sustained rate is normal about the family's measured mean
    with the standard deviation its ``rate_spread`` (the range across the 8 GPUs of one node, as a
    share of the rate) implies; a step whose micro-batches and gradient reduction tie every GPU of
    the job together runs at the slowest of ``gpus``: 1 / (1 - sigma E[max of n]) - 1. NaN spread
    (no measurement for the family): 0."""
    sigma = np.asarray(rate_spread, float) / (2 * expected_max_normal(SPREAD_GPUS))
    slowest = np.where(np.isnan(sigma), 0.0, sigma) * expected_max_normal(gpus)
    return 1.0 / (1.0 - slowest) - 1.0

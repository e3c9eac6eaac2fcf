"""Reliability: failure categories and rates, restart time in parts, checkpoint policy, ETTR and
a vectorized Monte Carlo.

Categories. Each failure category has a rate per unit-hour, the unit it counts (a GPU, a node, or
a fabric part: a link, a NIC, a switch, scaled by the counts in the plan's bill of materials), a
cause and a way it is noticed. A platform fault (hardware, links, host) stops every job on the
failed part; a job-caused fault (software Xids, user errors) stops only the job that caused it, at
the rate the job states as a multiple of the profile's measured per-GPU-hour figure (0: a mature
production job; 1: as the measured fleet). A crash is seen at once; a hang only when the
collective times out. Profiles: Fire-Flyer's Xid table and hardware faults (FF Tables V-VIII),
Llama 3's 54-day interruption table (Table 5), or one per-node rate (Meta, HPCA 2025).

Restart. R = detection + rescheduling onto a spare node (platform faults only) + checkpoint load
+ rendezvous and communicator set-up (a base plus a per-rank term) + warm-up, from a platform
profile. With several kinds of failure (crash or hang, platform or job) of restart times R_k and
rate shares w_k, where a failure during a restart starts the restart of its own kind, the
accounting below holds with e^(-lambda R) replaced by m = sum_k w_k e^(-lambda R_k) (the expected
time from a failure to a completed restart is (1 - m) / (lambda m)), so the closed form uses
R = -ln(m) / lambda (the rate-weighted mean when lambda R is small).

ETTR. Failures arrive as a Poisson process of rate lambda at any time, also during checkpoint
writes and restarts. A job checkpoints after every tau of work at cost delta; a failure loses the
work since the last completed checkpoint and costs a restart R, and a failure during a restart
starts the restart again. Then one segment (tau + delta) takes on average
e^(lambda R) (e^(lambda (tau + delta)) - 1) / lambda, so

    ETTR = tau lambda e^(-lambda R) / (e^(lambda (tau + delta)) - 1),

maximised where e^(lambda (tau + delta)) (1 - lambda tau) = 1, that is at
tau* = M (1 + W0(-e^(-1 - delta/M))) with M = 1/lambda, independent of R. Young (1974)
approximates tau* by sqrt(2 delta M); Daly (2006) adds higher-order terms.

Checkpoint policy. Every save pays a fixed cost (barrier, metadata) on top of moving its bytes.
Synchronous: the job stalls for the whole storage write (delta = write time; unknown without a
storage plane). Asynchronous (PyTorch DCP async): the job stalls only for the snapshot to host
memory (delta = bytes per GPU / PCIe), the write runs behind the next segment, so tau is at least
the write time and a failure loses, on average, the write time more (added to R). In-memory
redundant copies on peer nodes (Gemini, SOSP 2023; Ascend MindCluster): the save is the snapshot
plus the copy of each node's share to a peer's host memory over the compute NICs (asynchronous:
the copy runs behind, as the write does above), the storage write persists in the background off
the critical path, and a restart loads from the peer over the compute NICs.
"""
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from simcore.arrays import as_array, where
from simcore.errors import ScenarioError

HOURS_PER_YEAR = 8760.0
SECONDS_PER_DAY = 86400.0
FF_GPUS = 10_000
FF_NODES = 1_250
PLATFORM, JOB = "platform", "job"
CRASH, HANG = "crash", "hang"
UNITS = ("gpu", "node", "link", "nic", "switch", "domain")
FABRIC_UNITS = ("link", "nic", "switch")


@dataclass(frozen=True)
class FailureCategory:
    """One kind of failure: its rate, whether and how it stops a job, and what fixing it costs.

    rate_per_unit_hour is per ``unit`` (see ``UNITS``); a job-caused category's rate is per GPU of
    the job that causes it. action: job-restart (the hardware is fine), gpu-reset, node-reboot,
    replace (RMA), part-swap (a fabric part). repair_h: how long the part is out of service.
    """

    key: str
    label: str
    unit: str
    rate_per_unit_hour: float
    interrupts_job: bool
    action: str
    repair_h: float
    source: str
    cause: str = PLATFORM
    detection: str = CRASH

    @property
    def fabric(self) -> bool:
        return self.unit in FABRIC_UNITS


def _ff_xid(count: int) -> float:
    return count / (FF_GPUS * HOURS_PER_YEAR)


FF_TABLE = "FF (arXiv:2408.14158) Tables V-VI, one year, 10,000 GPUs"

# The Fire-Flyer Xid table, one category per Xid code, with its action (FF VII-C). Xid 43 (GPU
# stopped processing) leaves the job's collective waiting: a hang.
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
# Xid 63 records a row remapping (or page retirement) that takes effect at the GPU's next reset:
# NVIDIA's Xid documentation (docs.nvidia.com/deploy/xid-errors, Xid 63, and the GPU memory error
# management guide) says running applications continue, so it is repaired at the next idle.
DEFERRED_XIDS = (63,)
XID_CLASSES = {
    "nvlink": (74,),
    "software": (13, 31, 43, 45),
    "memory-ecc": (63, 64, 94, 95),
    "uncorrectable": (44, 48, 61, 62, 69, 79),
    "gsp": (119,),
}
HANG_XIDS = (43,)

# FF's fabric as the engine counts it (topology.fat_tree of the ff2-pcie-2zone preset: 1,600
# endpoint links and 1,600 switch-to-switch links, 1,520 leaf-spine and 80 inter-zone), the
# denominator of Table VIII's link rate.
FF_LINKS = 3_200
IB_DAYS = 347  # 2023-04-19 .. 2024-03-31
LINK_SWAP_H = 2.0
FF_PLATFORM_CATEGORIES = [
    FailureCategory(
        "ib-link", "IB link flash cut", "link", 213 / (FF_LINKS * IB_DAYS * 24), True, "part-swap", LINK_SWAP_H,
        "FF Table VIII: 213 IB link failures in 347 days over FF's 3,200 links", detection=HANG,
    ),
    FailureCategory(
        "switch", "switch failure", "switch", 0.05 / HOURS_PER_YEAR, True, "part-swap", 8.0,
        "Gill et al., Understanding Network Failures in Data Centers, SIGCOMM 2011: about 5% of ToR switches fail "
        "in a year (FF reports no switch faults)",
    ),
    FailureCategory(
        "host-memory-ecc", "CPU memory ECC error", "node", 54 / (FF_NODES * 182.5 * 24), True, "node-reboot", 4.0,
        "FF Table VII: 54 CPU-memory ECC faults, Oct 2023 - Mar 2024",
    ),
]

REPAIR_BASIS = (
    "Repair times are estimates: a reset or reboot returns within minutes to an hour; a fallen-off-"
    "bus GPU or GSP fault means an RMA swap (72 h); a cable or transceiver swap 2 h, a switch 8 h. "
    "Neither FF nor Llama 3 gives repair times."
)


def fire_flyer_categories() -> list[FailureCategory]:
    """FF's Xid table per GPU (software Xids job-caused) plus its link and host faults."""
    return list(_FIRE_FLYER_CATEGORIES)


def _fire_flyer_categories() -> tuple[FailureCategory, ...]:
    categories = [
        FailureCategory(
            f"xid-{code}", f"Xid {code}: {name}", "gpu", _ff_xid(count),
            code not in CONSEQUENCE_XIDS + DEFERRED_XIDS, action,
            repair_h, FF_TABLE, cause=JOB if code in XID_CLASSES["software"] else PLATFORM,
            detection=HANG if code in HANG_XIDS else CRASH,
        )
        for code, (name, count, action, repair_h) in FF_XID_COUNTS.items()
    ]
    return tuple(categories + FF_PLATFORM_CATEGORIES)


_FIRE_FLYER_CATEGORIES = _fire_flyer_categories()  # built once: the categories are frozen


# Llama 3 (Dubey et al., arXiv:2407.21783, section 3.3.4, Table 5): 419 unexpected interruptions
# in 54 days of pre-training on 16,384 H100 GPUs (2,048 nodes, one 400G RoCE NIC per GPU). Network
# switch/cable faults are counted per link of Meta's three-layer Clos as the engine counts it
# (topology.fat_tree, 16,384 endpoints, 64-port switches: 16,384 + 32,768 links).
LLAMA3 = "Llama 3 (arXiv:2407.21783) Table 5, 54 days, 16,384 H100 GPUs"
LLAMA3_HOURS = 54 * 24
LLAMA3_UNITS = {"gpu": 16_384, "node": 2_048, "link": 49_152, "nic": 16_384}
LLAMA3_TABLE5 = (  # key, label, unit, count, cause, detection, action, repair_h
    ("faulty-gpu", "faulty GPU", "gpu", 148, PLATFORM, CRASH, "replace", 72.0),
    ("gpu-hbm3", "GPU HBM3 memory", "gpu", 72, PLATFORM, CRASH, "replace", 72.0),
    ("software-bug", "software bug", "gpu", 54, JOB, CRASH, "job-restart", 0.0),
    ("network-switch-cable", "network switch / cable", "link", 35, PLATFORM, CRASH, "part-swap", LINK_SWAP_H),
    ("host-maintenance", "unplanned host maintenance", "node", 32, PLATFORM, CRASH, "node-reboot", 4.0),
    ("gpu-sram", "GPU SRAM memory", "gpu", 19, PLATFORM, CRASH, "replace", 72.0),
    ("gpu-system-processor", "GPU system processor", "gpu", 17, PLATFORM, CRASH, "replace", 72.0),
    ("nic", "NIC", "nic", 7, PLATFORM, CRASH, "part-swap", LINK_SWAP_H),
    ("nccl-watchdog", "NCCL watchdog timeout", "node", 7, PLATFORM, HANG, "node-reboot", 0.5),
    ("silent-data-corruption", "silent data corruption", "gpu", 6, PLATFORM, CRASH, "replace", 72.0),
    ("gpu-thermal", "GPU thermal interface / sensor", "gpu", 6, PLATFORM, CRASH, "replace", 72.0),
    ("ssd", "SSD", "node", 3, PLATFORM, CRASH, "replace", 72.0),
    ("power-supply", "power supply", "node", 3, PLATFORM, CRASH, "replace", 72.0),
    ("server-chassis", "server chassis", "node", 2, PLATFORM, CRASH, "replace", 72.0),
    ("io-expansion-board", "IO expansion board", "node", 2, PLATFORM, CRASH, "replace", 72.0),
    ("dependency", "dependency (external service)", "node", 2, PLATFORM, CRASH, "job-restart", 0.0),
    ("cpu", "CPU", "node", 2, PLATFORM, CRASH, "replace", 72.0),
    ("system-memory", "system memory", "node", 2, PLATFORM, CRASH, "node-reboot", 4.0),
)


def llama3_categories() -> list[FailureCategory]:
    """Llama 3's Table 5 as per-unit rates over the 54-day window."""
    return list(_LLAMA3_CATEGORIES)


_LLAMA3_CATEGORIES = tuple(
    FailureCategory(key, label, unit, count / (LLAMA3_UNITS[unit] * LLAMA3_HOURS), True, action, repair_h, LLAMA3,
                    cause=cause, detection=detection)
    for key, label, unit, count, cause, detection, action, repair_h in LLAMA3_TABLE5)


def meta_node_categories(failures_per_1000_node_days: float) -> list[FailureCategory]:
    """A single node-level category at a published per-node rate (Meta HPCA 2025)."""
    rate = as_array(failures_per_1000_node_days, "reliability.failures_per_1000_node_days", positive=True)
    return [FailureCategory(
        "node-failure", "node failure (any cause)", "node", float(rate) / 1000 / 24, True, "node-reboot", 4.0,
        "Meta, Revisiting Reliability in Large-Scale ML Research Clusters, HPCA 2025",
    )]


FAILURE_PROFILES = ("fire-flyer", "llama3", "per-node-rate")


def profile_categories(profile: str, failures_per_1000_node_days=None) -> list[FailureCategory]:
    """A failure profile's categories: FF Tables V-VIII, Llama 3 Table 5, or one per-node rate."""
    if profile == "per-node-rate":
        return meta_node_categories(failures_per_1000_node_days)
    if profile == "llama3":
        return llama3_categories()
    if profile == "fire-flyer":
        return fire_flyer_categories()
    raise ScenarioError("reliability.profile", f"unknown profile '{profile}' (known: {', '.join(FAILURE_PROFILES)})")


def describe_profiles() -> dict:
    """Every failure and restart profile with its figures and sources (for the API and the page);
    the per-node-rate profile's single category is shown at RSC-1's rate."""
    def category(c: FailureCategory) -> dict:
        return {"key": c.key, "label": c.label, "unit": c.unit, "rate_per_unit_hour": c.rate_per_unit_hour,
                "per_1000_unit_days": c.rate_per_unit_hour * 24_000, "cause": c.cause, "detection": c.detection,
                "interrupts_job": c.interrupts_job, "action": c.action, "repair_h": c.repair_h, "source": c.source}

    return {
        "failure_profiles": [{"key": key, "categories": [category(c) for c in profile_categories(key, 6.50)]}
                             for key in FAILURE_PROFILES],
        "restart_profiles": [{"key": p.key, "label": p.label, **{name: getattr(p,
                                                                               name) for name in RESTART_TIMING_FIELDS},
                              "source": p.source, "confidence": p.confidence} for p in RESTART_PROFILES.values()],
        "repair_basis": REPAIR_BASIS,
    }


def with_rates(categories: list[FailureCategory], rates: dict, profile: str, field: str) -> list[FailureCategory]:
    """The categories with the rates ``rates`` gives ({key: per unit-hour}) replacing theirs."""
    keys = [c.key for c in categories]
    for key in rates:
        if key not in keys:
            raise ScenarioError(f"{field}.{key}", f"no such category in {profile} (known: {', '.join(keys)})")
    return [replace(c, rate_per_unit_hour=rates[c.key], source="scenario input") if c.key in rates else c
            for c in categories]


TRANSPORT_RETRY_WINDOW_S = 7.0  # NCCL over InfiniBand: NCCL_IB_TIMEOUT with its retries, about 7 s
TRANSPORT_RETRY_BASIS = ("Databricks GPU reliability write-up (2026), as summarised by sysdesign-wiki: "
                         "NCCL_IB_TIMEOUT's effective default with retries is about 7 s (secondary)")


def with_flaps(categories: list[FailureCategory], flap_share: float, flap_s: float,
               retry_window_s: float = TRANSPORT_RETRY_WINDOW_S) -> list[FailureCategory]:
    """Link failures split into flaps and lasting failures: a ``flap_share`` of each link category
    comes back within ``flap_s``; when that is shorter than the transport's retry window the flap
    only stalls the job for ``flap_s`` (a category that does not interrupt, ``<key>-flap``), else
    it stops the job like any link failure."""
    if not flap_share or flap_s >= retry_window_s:
        return categories
    out = []
    for c in categories:
        if c.unit != "link":
            out.append(c)
            continue
        out.append(replace(c, rate_per_unit_hour=c.rate_per_unit_hour * (1 - flap_share)))
        out.append(replace(c, key=f"{c.key}-flap", label=f"{c.label} (flap under {retry_window_s:g} s)",
                           rate_per_unit_hour=c.rate_per_unit_hour * flap_share, interrupts_job=False,
                           action="retried", repair_h=0.0, source=f"{c.source}; {flap_share:.0%} flaps (input)"))
    return out


def flap_stall_fraction(categories: list[FailureCategory], units: dict, flap_s) -> np.ndarray:
    """Share of a job's time stalled by link flaps its transport rides out (each stalls it ``flap_s``)."""
    rate_h = rate_per_hour(categories, units, lambda c: c.key.endswith("-flap") and c.unit == "link")
    return rate_h * np.asarray(flap_s, float) / 3600


def excluded_categories(profile: str, *, xids=True, nvlink=True) -> list[dict]:
    """The profile's categories that cannot happen on the build, with the reason: NVIDIA's Xid
    codes need NVIDIA GPUs (their driver reports them; another accelerator has its own faults and
    no published categories here), the NVLink Xid needs NVLink."""
    out = []
    for c in profile_categories(profile, 1.0):
        if not c.key.startswith("xid-"):
            continue
        if not xids:
            out.append({"key": c.key, "reason": "an NVIDIA driver Xid: this accelerator does not report Xids"})
        elif not nvlink and int(c.key[4:]) in XID_CLASSES["nvlink"]:
            out.append({"key": c.key, "reason": "an NVLink error: these nodes have no NVLink"})
    return out


def build_categories(profile: str, *, failures_per_1000_node_days=None, rates=None, flap_share=0.0, flap_s=1.0,
                     domain_spans_nodes=False, xids=True, nvlink=True,
                     field="category_rates") -> list[FailureCategory]:
    """A build's failure categories: the profile's that can happen on it (:func:`excluded_categories`
    names the rest), the scale-up domain's own where it spans nodes, the given rate overrides
    (unknown keys name ``field``), link flaps split off."""
    excluded = {c["key"] for c in excluded_categories(profile, xids=xids, nvlink=nvlink)}
    categories = [c for c in profile_categories(profile, failures_per_1000_node_days) if c.key not in excluded]
    if domain_spans_nodes:
        categories = with_domain_category(categories)
    categories = with_rates(categories, rates or {}, f"the {profile} profile", field)
    return with_flaps(categories, flap_share, flap_s)


def unit_counts(gpu, node, link=0.0, nic=0.0, switch=0.0, domain=0.0) -> dict:
    """The parts failures are counted over ({unit kind: count}, arrays broadcast); ``domain``
    counts scale-up domains that span nodes (a GB200 NVL72 rack)."""
    return {"gpu": gpu, "node": node, "link": link, "nic": nic, "switch": switch, "domain": domain}


# A scale-up domain spanning nodes fails as a unit when its NVLink switch trays do: every node
# of the domain is out until repaired. No failure rate for NVLink switch trays is published, so
# the category's rate is 0 unless the scenario gives one (``category_rates``).
DOMAIN_CATEGORY = FailureCategory(
    "nvlink-switch-tray", "NVLink switch tray (the whole scale-up domain)", "domain", 0.0, True, "replace", 8.0,
    "no published rate: give one in category_rates; repair (a tray swap) an estimate")


def with_domain_category(categories: list[FailureCategory]) -> list[FailureCategory]:
    """The categories with the scale-up domain's own failure, for builds whose domain spans nodes."""
    return categories if any(c.unit == "domain" for c in categories) else [*categories, DOMAIN_CATEGORY]


def rate_per_hour(categories, units: dict, weight, job_fault_factor=1.0):
    """Events per hour over ``units`` ({unit kind: count}, arrays broadcast) of the categories,
    each weighted by ``weight(category)``; job-caused categories scaled by ``job_fault_factor``
    (their unit is the GPU). The rates are summed per kind of part first, so per point it is a
    few multiply-adds whatever the number of categories."""
    platform = dict.fromkeys(UNITS, 0.0)
    job_gpu = 0.0
    for c in categories:
        share = weight(c)
        if not share:
            continue
        if c.cause == JOB:
            job_gpu += c.rate_per_unit_hour * share
        else:
            platform[c.unit] += c.rate_per_unit_hour * share
    total = sum(np.asarray(units[u], float) * rate for u, rate in platform.items() if rate)
    if job_gpu:
        total = total + np.asarray(units["gpu"], float) * job_gpu * np.asarray(job_fault_factor, float)
    return total + np.zeros(np.shape(units["gpu"]))


def interruption_rate_per_hour(categories, units: dict, job_fault_factor=0.0):
    """Rate of job-stopping failures for a job exposed to ``units`` (series system)."""
    return rate_per_hour(categories, units, lambda c: c.interrupts_job, job_fault_factor)


def category_rates(categories, units: dict, job_fault_factor=1.0, weight=lambda c: True, hours=1.0) -> dict:
    """Events per ``hours`` (1: per hour) of each category (``weight`` selects them) over ``units``:
    {key: array}."""
    factor = np.asarray(job_fault_factor, float)
    return {c.key: np.asarray(units[c.unit], float)
            * (c.rate_per_unit_hour * hours * (factor if c.cause == JOB else 1.0))
            for c in categories if weight(c)}


def sample_category_counts(categories, units: dict, hours, replicas: int, rng: np.random.Generator,
                           job_fault_factor=1.0):
    """Monte Carlo event counts by category over ``hours``: shape (replicas, ..., C), Poisson."""
    rates = category_rates(categories, units, job_fault_factor)
    lam = np.stack(np.broadcast_arrays(*rates.values()), axis=-1) * np.asarray(hours, float)[..., None]
    return rng.poisson(lam, size=(replicas, *lam.shape))


@dataclass(frozen=True)
class RestartProfile:
    """How a platform brings a job back after an interruption (times in seconds).

    crash_detection_s: a crash seen (process exit, heartbeat); collective_timeout_s: a hang seen
    (the collective's watchdog); reschedule_s: a spare node swapped in and the job relaunched
    (platform faults only); init_base_s + init_s_per_rank x ranks: rendezvous and communicator
    set-up; warmup_s: first steps back to full speed. The checkpoint load comes from the storage
    model (or peer memory). ``confidence`` says how each figure is known.
    """

    key: str
    label: str
    crash_detection_s: float
    collective_timeout_s: float
    reschedule_s: float
    init_base_s: float
    init_s_per_rank: float
    warmup_s: float
    source: str
    confidence: str


RESTART_PROFILES = {p.key: p for p in (
    RestartProfile(
        "fast-restart", "fast restart (Meta / ByteDance MegaScale class)", 30.0, 600.0, 60.0, 5.0, 0.0025, 60.0,
        "MegaScale (Jiang et al., NSDI 2024, section 3.5): a >10,000-GPU job initialises in under 30 s (5 s + "
        "2.5 ms per rank); PyTorch ProcessGroupNCCL default timeout 10 min (pytorch/pytorch#110947); detection, "
        "rescheduling and warm-up are estimates. Llama 3 kept above 90% effective training time on 16,384 GPUs.",
        "secondary: MegaScale's figures recalled, not re-read; detection, rescheduling, warm-up estimated"),
    RestartProfile(
        "ascend-10k-2025", "Ascend 10k-card job, as the QCon 2025 talk describes it", 30.0, 1836.0, 60.0, 0.0, 0.15,
        60.0,
        "Ascend 10k-card talk (QCon 2025): bringing up a 10k-card PyTorch job takes 20-30 minutes (0.15 s per "
        "rank, 25 min at 10,000); HCCL_EXEC_TIMEOUT default 1,836 s (CANN 8 environment-variable reference)",
        "secondary: the talk's range; detection, rescheduling, warm-up estimated"),
    RestartProfile(
        "ascend-mindcluster", "Ascend with MindCluster recovery (in-place restart, checkpoints in peer memory)",
        30.0, 1836.0, 0.0, 0.0, 0.15, 60.0,
        "Huawei MindCluster documentation (process-level rescheduling and in-place restart; checkpoints passed "
        "peer to peer over the parameter plane instead of loaded from storage); no faster communicator set-up "
        "figure is published, so the talk's 0.15 s per rank stays",
        "secondary: mechanisms documented, no recovery times published"),
)}
DEFAULT_RESTART_PROFILE = "fast-restart"
RESTART_TIMING_FIELDS = ("crash_detection_s", "collective_timeout_s", "reschedule_s", "init_base_s",
                         "init_s_per_rank", "warmup_s")


def restart_timing(profile: str, **overrides) -> dict:
    """A restart profile's timing fields, each replaced by its override where one is given (not
    None or NaN; arrays broadcast)."""
    if profile not in RESTART_PROFILES:
        raise ScenarioError("reliability.restart_profile", f"unknown profile '{profile}'")
    base = RESTART_PROFILES[profile]
    timing = {}
    for name in RESTART_TIMING_FIELDS:
        given = np.asarray(np.nan if overrides.get(name) is None else overrides[name], float)
        timing[name] = where(np.isnan(given), getattr(base, name), given)
    return timing


def job_interruptions(categories, units: dict, job_fault_factor, timing: dict, ranks, load_s, lag_s=0.0):
    """A job's interruption rate (per hour, by kind) and restart (effective R, parts, per kind)."""
    kinds = restart_kinds(categories, units, job_fault_factor)
    return (kinds, *restart_time_s(kinds, timing, ranks, load_s, lag_s))


def restart_kinds(categories, units: dict, job_fault_factor):
    """Interrupting rate per hour by (cause, detection) kind: {(cause, detection): array}."""
    return {(cause, detection): interruption_rate_per_hour(
        [c for c in categories if c.cause == cause and c.detection == detection], units,
        job_fault_factor) for cause in (PLATFORM, JOB) for detection in (CRASH, HANG)}


def restart_time_s(kind_rates_h: dict, timing: dict, ranks, load_s, lag_s):
    """Restart time per failure in parts, per kind of failure, and the effective R of the closed form.

    ``timing`` holds a RestartProfile's fields (arrays broadcast). A job-caused fault needs no
    rescheduling. Returns (R, {part: seconds, rate-weighted over the kinds}, {"cause-detection":
    seconds})."""
    init = np.asarray(timing["init_base_s"]) + np.asarray(timing["init_s_per_rank"]) * np.asarray(ranks, float)
    common = load_s + init + timing["warmup_s"] + lag_s
    total_h = sum(kind_rates_h.values())
    failing = total_h > 0
    lam_s = total_h / 3600.0
    by_kind, detection, reschedule, log_terms = {}, 0.0, 0.0, []
    for (cause, how), rate in kind_rates_h.items():
        seen = np.asarray(timing["crash_detection_s"] if how == CRASH else timing["collective_timeout_s"], float)
        moved = np.asarray(timing["reschedule_s"], float) if cause == PLATFORM else 0.0
        by_kind[f"{cause}-{how}"] = seen + moved + common
        share = where(failing, rate / where(failing, total_h, 1.0), 1.0 * (cause == PLATFORM and how == CRASH))
        detection = detection + share * seen
        reschedule = reschedule + share * moved
        with np.errstate(divide="ignore"):
            log_terms.append(np.log(share) - lam_s * by_kind[f"{cause}-{how}"])
    with np.errstate(invalid="ignore"):  # an unknown checkpoint load (no storage plane) makes R unknown
        effective = -np.logaddexp.reduce(np.broadcast_arrays(*log_terms), axis=0) / where(failing, lam_s, 1.0)
    effective = where(failing, effective, by_kind[f"{PLATFORM}-{CRASH}"])
    parts = {"detection": detection, "reschedule": reschedule, "checkpoint_load": load_s, "init": init,
             "warmup": np.asarray(timing["warmup_s"], float), "checkpoint_lag": lag_s}
    return effective, parts, by_kind


def ettr_closed_form(interval_s, checkpoint_s, restart_s, rate_per_s):
    """Expected effective-training-time ratio for periodic checkpoints (module docstring)."""
    lam = np.asarray(rate_per_s, float)
    tau = np.asarray(interval_s, float)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        x = lam * (tau + checkpoint_s)
        ratio = tau * lam * np.exp(-lam * restart_s) / np.expm1(x)
    with np.errstate(invalid="ignore"):
        no_failures = where(np.isinf(tau), 1.0, tau / (tau + np.asarray(checkpoint_s, float)))
    return where(lam > 0, ratio, no_failures)


def optimal_interval_s(checkpoint_s, rate_per_s):
    """Exact ETTR-optimal work between checkpoints, independent of the restart time:
    tau = M (1 + W0(-exp(-1 - delta / M))) with M = 1 / rate (Lambert W, principal branch:
    ``scipy.special.lambertw``, imported here so an evaluation without a job does not load SciPy).
    Near the branch point (checkpoints far shorter than the MTBF) the argument's rounding leaves
    about 1e-6 relative error in tau, immaterial for a checkpoint interval."""
    from scipy import special

    rate = np.asarray(rate_per_s, float)
    q = np.asarray(checkpoint_s, float) * where(rate > 0, rate, 0.0)
    with np.errstate(invalid="ignore"):
        w = special.lambertw(-np.exp(-1.0 - q), 0).real
    # An argument rounded past the branch point -1/e (q under about 1e-16) has no W: the limit there.
    u = where(np.isnan(w), np.sqrt(2 * q), np.maximum(1.0 + w, 0.0))
    with np.errstate(divide="ignore"):
        return where(rate > 0, u / where(rate > 0, rate, 1.0), np.inf)  # no failures: never checkpoint


def young_interval_s(checkpoint_s, rate_per_s):
    """Young (1974): tau = sqrt(2 delta M)."""
    with np.errstate(divide="ignore"):
        return np.sqrt(2 * np.asarray(checkpoint_s) / np.asarray(rate_per_s))


def daly_interval_s(checkpoint_s, rate_per_s):
    """Daly (2006) higher-order estimate (valid for delta < 2M; M - delta beyond)."""
    delta = np.asarray(checkpoint_s, float)
    with np.errstate(divide="ignore"):
        m = 1.0 / np.asarray(rate_per_s, float)
    r = np.sqrt(delta / (2 * m))
    estimate = np.sqrt(2 * delta * m) * (1 + r / 3 + r**2 / 9) - delta
    return where(delta < 2 * m, estimate, m - delta)


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
    with np.errstate(invalid="ignore"):
        p_segment = where(lam > 0, np.exp(-lam * seg), 1.0)
    p_restart = np.exp(-lam * restart)
    # A segment or restart that succeeds with probability below 1e-9 never completes in practice:
    # ETTR 0 there (sampling it would need ~1e9 failures per segment).
    hopeless = np.broadcast_to((p_segment < 1e-9) | (p_restart < 1e-9), shape)
    p_segment = where(hopeless, 1.0, np.broadcast_to(p_segment, shape))
    p_restart = where(hopeless, 1.0, np.broadcast_to(p_restart, shape))
    failures = rng.negative_binomial(segments, p_segment)
    failed_restarts = rng.negative_binomial(np.maximum(failures, 1), p_restart)
    failed_restarts = where(failures > 0, failed_restarts, 0)
    lost_work = _truncated_exponential_sum(failures, lam, seg, rng)
    lost_restarts = _truncated_exponential_sum(failed_restarts, lam, restart, rng)
    wall = segments * seg + lost_work + failures * restart + lost_restarts
    with np.errstate(invalid="ignore"):
        ettr = where(hopeless, 0.0, segments * tau / wall)
    return where(lam > 0, ettr, ettr_closed_form(tau, delta, restart, lam))


def node_availability(repair_rate_per_hour, mttr_h):
    """Steady-state availability of a node: 1 / (1 + r MTTR)."""
    return 1.0 / (1.0 + np.asarray(repair_rate_per_hour) * np.asarray(mttr_h))


def spares_needed(job_nodes, availability, confidence=0.99, max_iterations: int = 64):
    """Smallest number of spare nodes s with P(at least ``job_nodes`` of job_nodes + s are up)
    >= ``confidence`` (independent nodes, binomial tail).

    With F ~ Binomial(n + s, 1 - A) failed nodes, s must satisfy s >= ppf(confidence; n + s). The
    right side grows with s, so iterating s <- ppf(confidence; n + s) from 0 climbs to the least
    such s. Evaluated once per distinct (n, A, confidence), so a sweep costs what its distinct jobs cost.
    """
    n, a, c = np.broadcast_arrays(np.asarray(job_nodes, float), np.asarray(availability, float),
                                  np.asarray(confidence, float))
    if n.size == 1:  # one job: memoized, as plan pages and previews ask the same question repeatedly
        return np.full(n.shape, _spares_for_one(float(n.ravel()[0]), float(a.ravel()[0]), float(c.ravel()[0]),
                                                max_iterations))
    if np.all(a == a.flat[0]) and np.all(c == c.flat[0]):  # one node type and confidence: distinct job sizes
        sizes, inverse = _distinct(n.ravel())
        failure, levels = np.full(sizes.shape, 1.0 - a.flat[0]), c.flat[0]
    else:
        rows, inverse = np.unique(np.stack([n.ravel(), a.ravel(), c.ravel()], axis=1), axis=0, return_inverse=True)
        sizes, failure, levels = rows[:, 0], 1.0 - rows[:, 1], rows[:, 2]
    return _climb_spares(sizes, failure, levels, max_iterations)[inverse.ravel()].reshape(n.shape)


def spares_per_domain(nodes_per_domain, domains, availability, confidence=0.99):
    """Spare nodes each of a job's ``domains`` scale-up domains keeps, when a failed node can be
    replaced only inside its own domain (a GB200 tray by a tray of the same rack): every domain
    must keep ``nodes_per_domain`` healthy nodes, together with probability ``confidence``, so
    each at confidence^(1 / domains)."""
    return spares_needed(nodes_per_domain, availability, np.asarray(confidence) ** (1 / np.maximum(domains, 1)))


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


def binomial_quantile(q, n, p):
    """Smallest k with P(Binomial(n, p) <= k) >= q, per element (``scipy.stats.binom.ppf``'s answer,
    from ``scipy.special`` alone: ``bdtrik`` inverts the CDF over a continuous k, whose ceiling is
    the answer or one past it, which ``bdtr`` at one less decides)."""
    from scipy import special

    q, n, p = np.broadcast_arrays(np.asarray(q, float), np.asarray(n, float), np.asarray(p, float))
    inner = (p > 0) & (p < 1)
    safe_p = where(inner, p, 0.5)
    with np.errstate(invalid="ignore"):
        k = np.ceil(special.bdtrik(q, n, safe_p))
        below = np.maximum(k - 1, 0)
        k = where(special.bdtr(below, n.astype(np.int64), safe_p) >= q, below, k)
    return where(p <= 0, 0.0, where(p >= 1, n, np.minimum(np.nan_to_num(k, nan=n), n)))


def _climb_spares(nodes, failure, confidence, max_iterations):
    spares = np.zeros_like(nodes)
    for _ in range(max_iterations):
        climbed = binomial_quantile(confidence, nodes + spares, failure)
        if np.array_equal(climbed, spares):
            return spares
        spares = climbed
    raise ScenarioError("cluster.reliability", f"no spare-node count reaches the confidence: node availability "
                                               f"is as low as {float(1 - failure.max()):.3g}")

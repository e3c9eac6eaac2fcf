"""The digital twin's simulator: a cluster's components and jobs advancing in simulated time.

State lives in NumPy arrays (a state code per GPU and per node, a repair deadline per leaf
switch, arrays per job). Platform failures are drawn per category for a whole interval at once
(Poisson counts, uniform times, uniform targets over the category's parts) from the engine's
reliability model; job-caused failures are drawn per job at the job's own rate and stop only
that job. Only the few events of an interval are handled one by one, in time order, with every
job advanced to each event's time in one vector step: no loop over GPUs or nodes.

Fabric parts (``Fabric``): a node's own links and NICs (the first nodes x nics_per_node links)
take the node out until they are swapped; every other link and every switch belongs to a leaf
(round robin), and the nodes are spread evenly over the leaves. A switch failure takes its leaf
down until repaired, so every node below it is unusable and their jobs stop; a switch-to-switch
link failure stops the jobs on its leaf's nodes and is rerouted around (no lasting state). A
node with ``exclude_after`` platform faults within a week is excluded until the next weekly
validation run returns it (FF VII: the HAI Platform's weekly validator).

Where a scale-up domain spans nodes (the 18 trays of a GB200 NVL72 rack), a job holds its nodes
domain by domain (``nodes_per_domain`` in each, the rest of the rack its spares) and a failed
node is replaced only by an idle node of the same domain, so its NVLink groups stay whole; when
the domain has none, the job's share moves to a domain with room for all of it, or the job waits
for the repair.

Jobs follow Fire-Flyer's HAI Platform: node-granular, each job holds whole nodes, checkpoints
every ``interval_s`` of work at a cost of ``checkpoint_s``, and on an interruption loses the work
since its last checkpoint, takes replacement nodes for any that failed, and restarts for
``restart_s`` (a failure during a restart starts it again). This is the accounting of
:func:`simcore.formulas.reliability.ettr_closed_form`, so a long run's ETTR approaches it.
"""
import io
import json
from dataclasses import dataclass, field, replace

import numpy as np

from simcore.errors import ScenarioError
from simcore.formulas.reliability import (
    JOB,
    FailureCategory,
    ettr_closed_form,
    fire_flyer_categories,
    interruption_rate_per_hour,
    unit_counts,
)

HEALTHY, DEGRADED, FAILED, REPAIR, DRAINED, CUT_OFF = 0, 1, 2, 3, 4, 5
# CUT_OFF is a view, never stored: a node that is itself up but whose leaf switch is down (node_view).
STATE_NAMES = ("healthy", "degraded", "failed", "under repair", "drained", "cut off (leaf switch down)")
RUNNING, RESTARTING, WAITING, DONE = 0, 1, 2, 3
JOB_STATE_NAMES = ("running", "restarting", "waiting for nodes", "done")
SECONDS_PER_HOUR = 3600.0
WEEK_S = 7 * 86400.0  # fault window for exclusion, and FF's validation period


# A node excluded only after more platform faults in a week than this is never excluded in practice
# (3 is the default); each node keeps its last ``exclude_after`` fault times, so the bound also
# bounds that memory.
MAX_EXCLUDE_AFTER = 100

@dataclass
class Job:
    """One training job's fixed parameters."""

    name: str
    nodes: int
    work_s: float  # productive compute the job needs in all
    interval_s: float
    checkpoint_s: float
    restart_s: float
    fault_factor: float = 0.0  # its own faults at this multiple of the profile's per-GPU rate
    nodes_per_domain: int = 0  # where a domain spans nodes: the job's nodes in each (0: whole domains)


@dataclass(frozen=True)
class Fabric:
    """The fabric parts failures land on (counts from the plan's bill of materials)."""

    nics_per_node: int = 1
    links: int = 0  # endpoint and switch-to-switch links
    leaves: int = 0
    switches: int = 0
    domain_nodes: int = 1  # nodes sharing one scale-up domain (18 trays of a GB200 NVL72 rack)


@dataclass
class TwinEvent:
    time_s: float
    kind: str  # failure, injected, ingested, repaired, job-interrupted, job-resumed, job-done
    category: str = ""
    gpu: int = -1
    node: int = -1
    job: int = -1
    message: str = ""


@dataclass
class Twin:
    """A cluster of ``nodes`` x ``gpus_per_node`` running ``jobs``; every field is the state."""

    nodes: int
    gpus_per_node: int
    jobs: list[Job]
    categories: list[FailureCategory] = field(default_factory=fire_flyer_categories)
    fabric: Fabric = field(default_factory=Fabric)
    exclude_after: int = 0  # platform faults within a week after which a node is excluded; 0: never
    time_s: float = 0.0
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    gpu_state: np.ndarray = None
    node_state: np.ndarray = None
    repair_until: np.ndarray = None  # per node, simulated seconds
    node_drained: np.ndarray = None  # taken out of service by an operator (kept through repairs)
    node_job: np.ndarray = None  # job index holding each node, -1 when idle
    job_state: np.ndarray = None
    job_committed_s: np.ndarray = None  # productive work saved by checkpoints
    job_segment_s: np.ndarray = None  # time into the current work + checkpoint segment
    job_restart_left_s: np.ndarray = None
    job_started_s: np.ndarray = None
    job_finished_s: np.ndarray = None  # NaN until the job is done
    job_interruptions: np.ndarray = None
    job_lost_s: np.ndarray = None  # wall time lost to rework and restarts (times the job's GPUs = GPU-seconds)
    leaf_repair_until: np.ndarray = None  # per leaf switch, simulated seconds (0: up)
    node_fault_times: np.ndarray = None  # per node, its last ``exclude_after`` platform faults (newest first)
    job_domain_nodes: np.ndarray = None  # (jobs, domains): the nodes each job holds in each domain (0: none)

    def __post_init__(self):
        if self.nodes < 1 or self.gpus_per_node < 1:
            raise ScenarioError("twin.nodes", "needs at least one node of at least one GPU")
        for i, job in enumerate(self.jobs):  # jobs that do not fit together wait their turn
            if job.nodes > self.nodes:
                raise ScenarioError(f"twin.jobs.{i}.nodes", f"{job.nodes} nodes; the cluster has {self.nodes}")
            for name in ("nodes", "work_s", "interval_s", "checkpoint_s"):
                if getattr(job, name) <= 0:
                    raise ScenarioError(f"twin.jobs.{i}.{name}", "must be greater than zero")
            for name in ("restart_s", "fault_factor"):
                if getattr(job, name) < 0:
                    raise ScenarioError(f"twin.jobs.{i}.{name}", "must be zero or more")
            if not 0 <= job.nodes_per_domain <= self.fabric.domain_nodes:
                raise ScenarioError(f"twin.jobs.{i}.nodes_per_domain",
                                    f"from 0 (whole domains) to the domain's {self.fabric.domain_nodes} nodes")
        f = self.fabric
        if f.nics_per_node < 1 or min(f.links, f.leaves, f.switches) < 0 or (f.links or f.switches) and not f.leaves:
            raise ScenarioError("twin.fabric", "needs at least one NIC per node, and leaves for its links and switches")
        if not 0 <= self.exclude_after <= MAX_EXCLUDE_AFTER:
            raise ScenarioError("twin.exclude_after", f"must be from zero (never) to {MAX_EXCLUDE_AFTER}")
        self._units = unit_counts(self.gpus, self.nodes, link=max(f.links, self.nodes * f.nics_per_node),
                                  nic=self.nodes * f.nics_per_node, switch=f.switches,
                                  domain=-(-self.nodes // f.domain_nodes) if f.domain_nodes > 1 else 0)
        per_unit = np.array([c.rate_per_unit_hour for c in self.categories]) / SECONDS_PER_HOUR
        self._platform = np.array([c.cause != JOB for c in self.categories])
        units = np.array([self._units[c.unit] for c in self.categories], float)
        self._rates_s = np.where(self._platform, per_unit * units, 0.0)  # cluster-wide, by category
        self._job_rates_s = np.where(self._platform, 0.0, per_unit)  # per GPU of the job that causes it
        self._interrupts = np.array([c.interrupts_job for c in self.categories])
        self._repair_s = np.array([c.repair_h for c in self.categories]) * SECONDS_PER_HOUR
        self._node_leaf = (np.arange(self.nodes) * f.leaves // self.nodes) if f.leaves else np.zeros(self.nodes, int)
        if self.gpu_state is None:
            self._fresh_state()
        if self.leaf_repair_until is None:  # a state saved before the fabric had components
            self.leaf_repair_until = np.zeros(f.leaves)
            self.node_fault_times = np.full((self.nodes, max(self.exclude_after, 1)), -np.inf)
        if self.job_domain_nodes is None:  # a state saved before jobs were placed by domain
            self.job_domain_nodes = self._domain_counts(self.node_job)

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def _fresh_state(self):
        self.gpu_state = np.zeros(self.gpus, np.int8)
        self.node_state = np.zeros(self.nodes, np.int8)
        self.repair_until = np.zeros(self.nodes)
        self.node_drained = np.zeros(self.nodes, bool)
        self.node_job = np.full(self.nodes, -1, np.int32)
        n = len(self.jobs)
        self.job_state = np.full(n, WAITING, np.int8)
        self.job_committed_s = np.zeros(n)
        self.job_segment_s = np.zeros(n)
        self.job_restart_left_s = np.zeros(n)
        self.job_started_s = np.zeros(n)
        self.job_finished_s = np.full(n, np.nan)
        self.job_interruptions = np.zeros(n, np.int64)
        self.job_lost_s = np.zeros(n)
        self.leaf_repair_until = np.zeros(self.fabric.leaves)
        self.node_fault_times = np.full((self.nodes, max(self.exclude_after, 1)), -np.inf)
        self.job_domain_nodes = self._domain_counts(self.node_job)
        self._schedule([])

    # --- jobs -------------------------------------------------------------------------------

    def _params(self):
        interval = np.array([j.interval_s for j in self.jobs])
        checkpoint = np.array([j.checkpoint_s for j in self.jobs])
        restart = np.array([j.restart_s for j in self.jobs])
        work = np.array([j.work_s for j in self.jobs])
        return interval, checkpoint, restart, work

    def _run_jobs(self, dt: float, events: list):
        """Advance every job by ``dt`` simulated seconds (vectorized over jobs)."""
        if dt <= 0 or not self.jobs:
            return
        interval, checkpoint, restart, work = self._params()
        restarting = self.job_state == RESTARTING
        left = self.job_restart_left_s - dt
        done_restarting = restarting & (left <= 0)
        self.job_lost_s += np.where(restarting, np.minimum(dt, self.job_restart_left_s), 0)
        self.job_lost_s += np.where(self.job_state == WAITING, dt, 0)
        self.job_restart_left_s = np.where(restarting, np.maximum(left, 0), self.job_restart_left_s)
        run_time = np.where(self.job_state == RUNNING, dt, np.where(done_restarting, -left, 0.0))
        self.job_state = np.where(done_restarting, RUNNING, self.job_state).astype(np.int8)
        segment = interval + checkpoint
        elapsed = self.job_segment_s + run_time
        completed = np.floor(elapsed / segment)
        self.job_committed_s = self.job_committed_s + completed * interval
        self.job_segment_s = elapsed - completed * segment
        finished = (self.job_committed_s >= work) & (self.job_state == RUNNING)
        if finished.any():
            # The work completed inside this step: back-date the finish by the overshoot.
            overshoot = (self.job_committed_s - work) / np.maximum(interval, 1e-12) * segment
            self.job_finished_s = np.where(finished, self.time_s + dt - overshoot, self.job_finished_s)
            self.job_committed_s = np.where(finished, work, self.job_committed_s)
            self.job_state = np.where(finished, DONE, self.job_state).astype(np.int8)
            self.node_job[np.isin(self.node_job, np.flatnonzero(finished))] = -1
            events.extend(TwinEvent(float(self.job_finished_s[j]), "job-done", job=int(j),
                                    message=f"{self.jobs[j].name}: done") for j in np.flatnonzero(finished))
            self._schedule(events)  # the freed nodes may unblock a waiting job

    def _interrupt(self, job: int, events: list, cause: str):
        """The job loses its work since the last checkpoint and restarts (or waits for nodes)."""
        if self.job_state[job] in (DONE, WAITING):  # nothing running to interrupt
            return
        lost = self.job_segment_s[job] if self.job_state[job] == RUNNING else 0.0
        self.job_lost_s[job] += lost
        self.job_segment_s[job] = 0.0
        self.job_interruptions[job] += 1
        self.job_restart_left_s[job] = self.jobs[job].restart_s
        self.job_state[job] = RESTARTING
        events.append(TwinEvent(self.time_s, "job-interrupted", job=job,
                                message=f"{self.jobs[job].name}: {cause}; {lost:.0f} s of work lost"))

    def _domain_counts(self, node_job) -> np.ndarray:
        """(jobs, domains): how many nodes each job holds in each scale-up domain."""
        domains = -(-self.nodes // self.fabric.domain_nodes)
        held = node_job >= 0
        counts = np.zeros((len(self.jobs), domains), np.int32)
        np.add.at(counts, (node_job[held], np.flatnonzero(held) // self.fabric.domain_nodes), 1)
        return counts

    def _take_nodes(self, job: int, spec: Job, usable: np.ndarray) -> int:
        """Give the job idle usable nodes for those it lacks; returns how many it still lacks.
        Without multi-node domains any idle node will do; with them, see the module docstring."""
        idle = usable & (self.node_job < 0)
        d = self.fabric.domain_nodes
        if d <= 1:
            missing = spec.nodes - int((self.node_job == job).sum())
            free = np.flatnonzero(idle)
            if 0 < missing <= free.size:
                self.node_job[free[:missing]] = job
                return 0
            return max(missing, 0)
        domain_of = np.arange(self.nodes) // d
        held = np.bincount(domain_of[self.node_job == job], minlength=self.job_domain_nodes.shape[1])
        idle_in = np.bincount(domain_of[idle], minlength=held.size)
        need = self.job_domain_nodes[job]
        if not need.any():  # a first start: best fit, the domains with the fewest idle nodes that hold a share
            share = min(spec.nodes_per_domain or d, spec.nodes)
            count = -(-spec.nodes // share)
            order = np.argsort(np.where(idle_in >= share, idle_in, self.nodes + 1), kind="stable")[:count]
            if order.size < count or (idle_in[order] < share).any():
                return spec.nodes - int(held.sum())
            need[order] = share
            need[order[-1]] = spec.nodes - share * (count - 1)
        for domain in np.flatnonzero(need > held):  # the domains that lost nodes: refill, else move
            short = need[domain] - held[domain]
            if idle_in[domain] < short:
                room = np.flatnonzero((need == 0) & (idle_in >= need[domain]))
                if not room.size:
                    continue
                self.node_job[(self.node_job == job) & (domain_of == domain)] = -1
                need[room[0]], need[domain], held[domain] = need[domain], 0, 0
                domain, short = room[0], need[room[0]]
            free = np.flatnonzero(idle & (domain_of == domain))[:short]
            self.node_job[free] = job
            idle[free] = False
            idle_in[domain] -= free.size
            held[domain] += free.size
        return int(np.maximum(need - held, 0).sum())

    def _schedule(self, events: list):
        """Give every job whole healthy nodes, replacing failed ones from the idle pool."""
        usable = (self.node_state == HEALTHY) & ~self.node_drained & self._leaf_up()
        self.node_job[~usable & (self.node_job >= 0)] = -1
        for job, spec in enumerate(self.jobs):  # a handful of jobs
            if self.job_state[job] == DONE:
                continue
            missing = self._take_nodes(job, spec, usable)
            if missing <= 0 and self.job_state[job] == WAITING:
                self.job_state[job] = RESTARTING
                self.job_restart_left_s[job] = spec.restart_s
                events.append(TwinEvent(self.time_s, "job-resumed", job=job,
                                        message=f"{spec.name}: nodes allocated, starting"))
            elif missing > 0 and self.job_state[job] != WAITING:
                self.job_state[job] = WAITING
                events.append(TwinEvent(self.time_s, "job-waiting", job=job,
                                        message=f"{spec.name}: waiting for {missing} healthy node(s)"))

    def _leaf_up(self):
        if not self.fabric.leaves:
            return np.ones(self.nodes, bool)
        return (self.leaf_repair_until <= self.time_s)[self._node_leaf]

    # --- failures ---------------------------------------------------------------------------

    def apply_failure(self, category_index: int, *, gpu: int = -1, node: int = -1, part: int = -1,
                      kind: str = "failure", events: list | None = None, repair: tuple[str, float] | None = None
                      ) -> list:
        """A platform failure of one category on a GPU, a node, or a fabric part (``part``: the
        category's NIC, link or switch index), with its action; or with ``repair`` (an action and its
        hours) where the fault's own cause says what it takes (an Xid's catalogue action, which a
        profile's category of the same part need not share)."""
        events = [] if events is None else events
        category = self.categories[category_index]
        if category.cause == JOB:
            raise ScenarioError("category", f"{category.key} is job-caused: it stops only its job (give the job)")
        if repair is not None:
            category = replace(category, action=repair[0], repair_h=repair[1])
        unit, f = category.unit, self.fabric
        repair_s = category.repair_h * SECONDS_PER_HOUR
        leaf = -1
        if unit == "gpu":
            if not 0 <= gpu < self.gpus:
                raise ScenarioError("target.gpu", f"must be a GPU index below {self.gpus}")
            node = gpu // self.gpus_per_node
        elif unit == "node":
            if not 0 <= node < self.nodes:
                raise ScenarioError("target.node", f"must be a node index below {self.nodes}")
        else:
            count = int(self._units[unit])
            if not 0 <= part < count:
                raise ScenarioError("target.part", f"must be a {unit} index below {count}")
            own_links = self.nodes * f.nics_per_node
            if unit == "domain":
                return self._fail_domain(category_index, part, kind, events)
            if unit == "nic" or (unit == "link" and part < own_links):
                node = part // f.nics_per_node
            else:
                leaf = (part - own_links if unit == "link" else part) % f.leaves
        where = f"node {node}" if node >= 0 else f"leaf {leaf}"
        events.append(TwinEvent(self.time_s, kind, category=category.key, gpu=gpu, node=node,
                                message=f"{category.label} ({category.action}, {where})"))
        if node >= 0:
            hit = np.array([node])
            if repair_s > 0:
                if unit == "gpu":
                    self.gpu_state[gpu] = FAILED if category.action in ("gpu-reset", "node-reboot") else REPAIR
                self.node_state[node] = REPAIR if category.action in ("replace", "part-swap") else FAILED
                self.repair_until[node] = max(self.repair_until[node], self.time_s + repair_s)
            self._count_fault(node, events)
        else:
            hit = np.flatnonzero(self._node_leaf == leaf)
            if unit == "switch":
                self.leaf_repair_until[leaf] = max(self.leaf_repair_until[leaf], self.time_s + repair_s)
        if self._interrupts[category_index]:
            for job in np.unique(self.node_job[hit][self.node_job[hit] >= 0]):  # the jobs on the hit nodes
                self._interrupt(int(job), events, category.label)
        self._schedule(events)
        return events

    def _fail_domain(self, category_index: int, domain: int, kind: str, events: list) -> list:
        """A scale-up domain's own failure: its nodes out until repaired, their jobs stopped."""
        category = self.categories[category_index]
        nodes = np.arange(domain * self.fabric.domain_nodes, min((domain + 1) * self.fabric.domain_nodes, self.nodes))
        events.append(TwinEvent(self.time_s, kind, category=category.key, node=int(nodes[0]),
                                message=f"{category.label} ({category.action}, nodes {nodes[0]}-{nodes[-1]})"))
        self.node_state[nodes] = REPAIR
        self.repair_until[nodes] = np.maximum(self.repair_until[nodes], self.time_s + self._repair_s[category_index])
        if self._interrupts[category_index]:
            for job in np.unique(self.node_job[nodes][self.node_job[nodes] >= 0]):
                self._interrupt(int(job), events, category.label)
        self._schedule(events)
        return events

    def _count_fault(self, node: int, events: list):
        """Record a platform fault; the ``exclude_after``-th within a week excludes the node until
        the next weekly validation."""
        times = self.node_fault_times[node]
        times[1:] = times[:-1].copy()
        times[0] = self.time_s
        if self.exclude_after and self.time_s - times[-1] <= WEEK_S:
            back = (np.floor(self.time_s / WEEK_S) + 1) * WEEK_S
            self.node_state[node] = REPAIR
            self.repair_until[node] = max(self.repair_until[node], back)
            times[:] = -np.inf
            events.append(TwinEvent(self.time_s, "excluded", node=node, message=(
                f"node {node} excluded after {self.exclude_after} faults in a week, until the validation "
                f"at {back / 86400:.0f} d")))

    def apply_job_fault(self, category_index: int, job: int, *, node: int = -1, kind: str = "failure",
                        events: list | None = None) -> list:
        """A job-caused failure: it stops its own job only; the hardware stays in service. A real
        event from a node (``node``, job -1) stops the job holding that node, if any."""
        events = [] if events is None else events
        category = self.categories[category_index]
        if category.cause != JOB:
            raise ScenarioError("category", f"{category.key} is a platform fault: give the GPU or node it hit")
        if node >= 0:
            if node >= self.nodes:
                raise ScenarioError("target.node", f"must be a node index below {self.nodes}")
            job = int(self.node_job[node])
        elif not 0 <= job < len(self.jobs):
            raise ScenarioError("target.job", f"must be a job index below {len(self.jobs)}")
        where = self.jobs[job].name if job >= 0 else f"node {node}, which runs no job"
        events.append(TwinEvent(self.time_s, kind, category=category.key, node=node, job=job,
                                message=f"{category.label} in {where}"))
        if job >= 0 and self._interrupts[category_index]:
            self._interrupt(job, events, category.label)
        return events

    def set_drained(self, node: int, drained: bool, events: list | None = None) -> list:
        """An operator takes a node out of service (its job restarts elsewhere) or returns it; a
        drained node that fails stays drained after its repair."""
        events = [] if events is None else events
        if not 0 <= node < self.nodes:
            raise ScenarioError("target.node", f"must be a node index below {self.nodes}")
        if bool(self.node_drained[node]) == drained:
            raise ScenarioError("target.node", f"node {node} is {'already' if drained else 'not'} drained")
        self.node_drained[node] = drained
        if drained:
            if self.node_state[node] == HEALTHY:
                self.node_state[node] = DRAINED
            events.append(TwinEvent(self.time_s, "drained", node=node, message=f"node {node} drained"))
            job = int(self.node_job[node])
            if job >= 0:
                self._interrupt(job, events, f"node {node} drained")
        else:
            if self.node_state[node] == DRAINED:
                self.node_state[node] = HEALTHY
            events.append(TwinEvent(self.time_s, "undrained", node=node, message=f"node {node} back in service"))
        self._schedule(events)
        return events

    def _repair(self, events: list):
        leaves = np.flatnonzero((self.leaf_repair_until > 0) & (self.leaf_repair_until <= self.time_s))
        if leaves.size:
            self.leaf_repair_until[leaves] = 0.0
            events.extend(TwinEvent(self.time_s, "repaired", message=f"leaf switch {leaf} back in service")
                          for leaf in leaves)
            self._schedule(events)
        due = (self.repair_until > 0) & (self.repair_until <= self.time_s)
        if not due.any():
            return
        nodes = np.flatnonzero(due)
        self.node_state[nodes] = np.where(self.node_drained[nodes], DRAINED, HEALTHY)
        gpu_index = (nodes[:, None] * self.gpus_per_node + np.arange(self.gpus_per_node)).ravel()
        self.gpu_state[gpu_index] = HEALTHY
        self.repair_until[nodes] = 0.0
        events.extend(TwinEvent(self.time_s, "repaired", node=int(n), message=f"node {n} back in service")
                      for n in nodes)
        self._schedule(events)

    def advance(self, dt: float) -> list[TwinEvent]:
        """Move the twin ``dt`` simulated seconds on; returns the events of the interval."""
        if dt < 0 or not np.isfinite(dt):
            raise ScenarioError("twin.dt", "must be a finite number of seconds, zero or more")
        events: list[TwinEvent] = []
        end = self.time_s + dt
        counts = self.rng.poisson(self._rates_s * dt)
        category = np.repeat(np.arange(len(self.categories)), counts)
        units = np.array([self._units[self.categories[c].unit] for c in category], float)
        targets = (self.rng.random(category.size) * units).astype(np.int64)
        job_gpus = np.array([j.nodes * self.gpus_per_node * j.fault_factor for j in self.jobs], float)
        job_counts = self.rng.poisson(np.outer(job_gpus, self._job_rates_s) * dt)  # (jobs, categories)
        job_of, job_category = np.nonzero(job_counts)
        job_of, job_category = (np.repeat(a, job_counts[job_of, job_category]) for a in (job_of, job_category))
        category = np.concatenate([category, job_category])
        targets = np.concatenate([targets, job_of])
        is_job = np.arange(category.size) >= counts.sum()
        times = self.time_s + self.rng.random(category.size) * dt
        for i in np.argsort(times, kind="stable"):  # the interval's few events, in time order
            self._step_to(times[i], events)
            c, target = int(category[i]), int(targets[i])
            unit = self.categories[c].unit
            if is_job[i]:
                if self.job_state[target] in (RUNNING, RESTARTING):
                    self.apply_job_fault(c, target, events=events)
            elif unit == "gpu":
                self.apply_failure(c, gpu=target, events=events)
            elif unit == "node":
                self.apply_failure(c, node=target, events=events)
            else:
                self.apply_failure(c, part=target, events=events)
        self._step_to(end, events)
        return events

    def _step_to(self, when: float, events: list):
        """Advance jobs to ``when``, stopping at any repairs due on the way."""
        while True:
            deadlines = np.concatenate([self.repair_until, self.leaf_repair_until])
            pending = deadlines[(deadlines > self.time_s) & (deadlines <= when)]
            stop = float(pending.min()) if pending.size else when
            self._run_jobs(stop - self.time_s, events)
            self.time_s = stop
            self._repair(events)
            if stop >= when:
                return

    def expected_rate_per_s(self, job: int) -> float:
        """The closed form's interruption rate for a job: platform faults on the parts it holds
        (its nodes, their NICs and links, and its leaves' share of the other links and switches)
        plus its own faults at its rate."""
        spec, f = self.jobs[job], self.fabric
        held = np.flatnonzero(self.node_job == job)
        nodes = held if held.size == spec.nodes else np.arange(spec.nodes)
        leaf_share = np.unique(self._node_leaf[nodes]).size / f.leaves if f.leaves else 0.0
        own_links = self.nodes * f.nics_per_node
        domains = np.unique(nodes // f.domain_nodes).size if f.domain_nodes > 1 else 0
        exposure = unit_counts(spec.nodes * self.gpus_per_node, spec.nodes, nic=spec.nodes * f.nics_per_node,
                               link=spec.nodes * f.nics_per_node + max(self._units["link"] - own_links, 0) * leaf_share,
                               switch=f.switches * leaf_share, domain=domains)
        return float(interruption_rate_per_hour(self.categories, exposure, spec.fault_factor)) / SECONDS_PER_HOUR

    # --- reading ----------------------------------------------------------------------------

    def node_view(self) -> np.ndarray:
        """Each node's state as a viewer sees it: its own, except that an otherwise healthy or
        degraded node under a leaf switch that is down is CUT_OFF (no job can use it)."""
        view = self.node_state.copy()
        view[~self._leaf_up() & (self.node_state <= DEGRADED)] = CUT_OFF
        return view

    def metrics(self) -> dict:
        """Headline figures: availability (nodes in service), utilisation (nodes running a job),
        goodput, ETTR so far, interruptions, lost GPU-hours."""
        interval, checkpoint, restart, work = self._params() if self.jobs else ([], [], [], [])
        job_gpus = np.array([j.nodes * self.gpus_per_node for j in self.jobs], float)
        end = np.where(np.isnan(self.job_finished_s), self.time_s, self.job_finished_s) if self.jobs else 0
        elapsed = np.maximum(end - self.job_started_s, 1e-9)
        ettr = self.job_committed_s / elapsed if self.jobs else np.zeros(0)
        remaining = np.maximum(np.asarray(work) - self.job_committed_s, 0) if self.jobs else np.zeros(0)
        rate = np.where(ettr > 0, ettr, np.nan)
        view = self.node_view()
        in_service = (view == HEALTHY) & ~self.node_drained
        held = self.node_job >= 0
        running = held & (self.job_state[np.where(held, self.node_job, 0)] == RUNNING) if self.jobs else held
        return {
            "time_s": self.time_s,
            "gpus": self.gpus,
            "gpus_by_state": {name: int((self.gpu_state == code).sum()) for code, name in enumerate(STATE_NAMES)},
            "nodes_by_state": {name: int((view == code).sum()) for code, name in enumerate(STATE_NAMES)},
            "leaf_switches_down": int((self.leaf_repair_until > self.time_s).sum()),
            "availability": float(in_service.sum() / self.nodes),
            "utilization": float(running.sum() / self.nodes),
            "goodput_gpu_hours": float((self.job_committed_s * job_gpus).sum() / SECONDS_PER_HOUR),
            "lost_gpu_hours": float((self.job_lost_s * job_gpus).sum() / SECONDS_PER_HOUR),
            "interruptions": int(self.job_interruptions.sum()),
            "jobs": [
                {"name": job.name, "state": JOB_STATE_NAMES[self.job_state[i]], "nodes": job.nodes,
                 "progress": float(self.job_committed_s[i] / job.work_s), "ettr": float(ettr[i]),
                 "ettr_closed_form": float(ettr_closed_form(job.interval_s, job.checkpoint_s, job.restart_s,
                                                            self.expected_rate_per_s(i))),
                 "interruptions": int(self.job_interruptions[i]),
                 "goodput_gpu_hours": float(self.job_committed_s[i] * job_gpus[i] / SECONDS_PER_HOUR),
                 "forecast_remaining_s": None if not np.isfinite(rate[i]) else float(remaining[i] / rate[i])}
                for i, job in enumerate(self.jobs)
            ],
        }

    # --- persistence ------------------------------------------------------------------------

    ARRAYS = ("gpu_state", "node_state", "repair_until", "node_drained", "node_job", "job_state",
              "job_committed_s", "job_segment_s", "job_restart_left_s", "job_started_s", "job_finished_s",
              "job_interruptions", "job_lost_s", "leaf_repair_until", "node_fault_times", "job_domain_nodes")

    def to_bytes(self) -> bytes:
        """Everything needed to continue exactly: arrays, clock and the random generator's state."""
        buffer = io.BytesIO()
        meta = {"time_s": self.time_s, "rng": self.rng.bit_generator.state}
        np.savez_compressed(buffer, meta=np.array(json.dumps(meta)), **{k: getattr(self, k) for k in self.ARRAYS})
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, *, nodes, gpus_per_node, jobs, categories=None, fabric=None,
                   exclude_after=0) -> "Twin":
        with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in cls.ARRAYS if k in npz}
            meta = json.loads(str(npz["meta"]))
        rng = np.random.default_rng()
        rng.bit_generator.state = meta["rng"]
        return cls(nodes=nodes, gpus_per_node=gpus_per_node, jobs=jobs,
                   categories=categories or fire_flyer_categories(),
                   fabric=fabric or Fabric(), exclude_after=exclude_after, time_s=meta["time_s"], rng=rng, **arrays)

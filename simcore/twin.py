"""The digital twin's simulator: a cluster's components and jobs advancing in simulated time.

State lives in NumPy arrays (a state code per GPU and per node; arrays per job). NIC, link and
host faults act through their failure categories on the node they hit (an IB link flash cut
interrupts the node's job); links and switches are not separate components yet.
failures are drawn per category for a whole interval at once (Poisson counts, uniform times,
uniform targets) from the engine's reliability model. Only the few events of an interval are
handled one by one, in time order, with every job advanced to each event's time in one vector
step: no loop over GPUs or nodes.

Jobs follow Fire-Flyer's HAI Platform: node-granular, each job holds whole nodes, checkpoints
every ``interval_s`` of work at a cost of ``checkpoint_s``, and on an interruption loses the work
since its last checkpoint, takes replacement nodes for any that failed, and restarts for
``restart_s`` (a failure during a restart starts it again). This is the accounting of
:func:`simcore.reliability.ettr_closed_form`, so a long run's ETTR approaches it.
"""
import io
import json
from dataclasses import dataclass, field

import numpy as np

from simcore.errors import ScenarioError
from simcore.reliability import FailureCategory, fire_flyer_categories

HEALTHY, DEGRADED, FAILED, REPAIR, DRAINED = 0, 1, 2, 3, 4
STATE_NAMES = ("healthy", "degraded", "failed", "under repair", "drained")
RUNNING, RESTARTING, WAITING, DONE = 0, 1, 2, 3
JOB_STATE_NAMES = ("running", "restarting", "waiting for nodes", "done")
SECONDS_PER_HOUR = 3600.0


@dataclass
class Job:
    """One training job's fixed parameters."""

    name: str
    nodes: int
    work_s: float  # productive compute the job needs in all
    interval_s: float
    checkpoint_s: float
    restart_s: float


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

    def __post_init__(self):
        if self.nodes < 1 or self.gpus_per_node < 1:
            raise ScenarioError("twin.nodes", "needs at least one node of at least one GPU")
        for i, job in enumerate(self.jobs):  # jobs that do not fit together wait their turn
            if job.nodes > self.nodes:
                raise ScenarioError(f"twin.jobs.{i}.nodes", f"{job.nodes} nodes; the cluster has {self.nodes}")
            for name in ("nodes", "work_s", "interval_s", "checkpoint_s"):
                if getattr(job, name) <= 0:
                    raise ScenarioError(f"twin.jobs.{i}.{name}", "must be greater than zero")
            if job.restart_s < 0:
                raise ScenarioError(f"twin.jobs.{i}.restart_s", "must be zero or more")
        if self.gpu_state is None:
            self._fresh_state()
        per_unit = np.array([c.rate_per_unit_hour for c in self.categories]) / SECONDS_PER_HOUR
        units = np.array([self.gpus if c.unit == "gpu" else self.nodes for c in self.categories], float)
        self._rates_s = per_unit * units  # events per simulated second, cluster-wide, by category
        self._interrupts = np.array([c.interrupts_job for c in self.categories])
        self._repair_s = np.array([c.repair_h for c in self.categories]) * SECONDS_PER_HOUR

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

    def _schedule(self, events: list):
        """Give every job whole healthy nodes, replacing failed ones from the idle pool."""
        usable = (self.node_state == HEALTHY) & ~self.node_drained
        self.node_job[~usable & (self.node_job >= 0)] = -1
        for job, spec in enumerate(self.jobs):  # a handful of jobs
            if self.job_state[job] == DONE:
                continue
            held = np.flatnonzero(self.node_job == job)
            missing = spec.nodes - held.size
            if missing <= 0 and self.job_state[job] == WAITING:
                self.job_state[job] = RESTARTING
                self.job_restart_left_s[job] = spec.restart_s
            elif missing > 0:
                idle = np.flatnonzero(usable & (self.node_job < 0))
                if idle.size >= missing:
                    self.node_job[idle[:missing]] = job
                    if self.job_state[job] == WAITING:
                        self.job_state[job] = RESTARTING
                        self.job_restart_left_s[job] = spec.restart_s
                        events.append(TwinEvent(self.time_s, "job-resumed", job=job,
                                                message=f"{spec.name}: nodes allocated, starting"))
                elif self.job_state[job] != WAITING:
                    self.job_state[job] = WAITING
                    events.append(TwinEvent(self.time_s, "job-waiting", job=job,
                                            message=f"{spec.name}: waiting for {missing} healthy node(s)"))

    # --- failures ---------------------------------------------------------------------------

    def apply_failure(self, category_index: int, *, gpu: int = -1, node: int = -1, kind: str = "failure",
                      events: list | None = None) -> list:
        """A failure of one category on a GPU (GPU-level categories) or a node, with its action."""
        events = [] if events is None else events
        category = self.categories[category_index]
        if category.unit == "gpu":
            if not 0 <= gpu < self.gpus:
                raise ScenarioError("target.gpu", f"must be a GPU index below {self.gpus}")
            node = gpu // self.gpus_per_node
        elif not 0 <= node < self.nodes:
            raise ScenarioError("target.node", f"must be a node index below {self.nodes}")
        repair_s = self._repair_s[category_index]
        if repair_s > 0:
            if category.unit == "gpu":
                self.gpu_state[gpu] = FAILED if category.action in ("gpu-reset", "node-reboot") else REPAIR
            self.node_state[node] = REPAIR if category.action == "replace" else FAILED
            self.repair_until[node] = max(self.repair_until[node], self.time_s + repair_s)
        events.append(TwinEvent(self.time_s, kind, category=category.key, gpu=gpu, node=node,
                                message=f"{category.label} ({category.action})"))
        job = int(self.node_job[node])
        if job >= 0 and self._interrupts[category_index]:
            self._interrupt(job, events, category.label)
        self._schedule(events)
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
        times = self.time_s + self.rng.random(category.size) * dt
        units = np.array([self.gpus if self.categories[c].unit == "gpu" else self.nodes for c in category], int)
        targets = (self.rng.random(category.size) * units).astype(np.int64)
        order = np.argsort(times, kind="stable")
        for i in order:  # the interval's few events, in time order
            self._step_to(times[i], events)
            c = int(category[i])
            if self.categories[c].unit == "gpu":
                self.apply_failure(c, gpu=int(targets[i]), events=events)
            else:
                self.apply_failure(c, node=int(targets[i]), events=events)
        self._step_to(end, events)
        return events

    def _step_to(self, when: float, events: list):
        """Advance jobs to ``when``, stopping at any repairs due on the way."""
        while True:
            pending = self.repair_until[(self.repair_until > self.time_s) & (self.repair_until <= when)]
            stop = float(pending.min()) if pending.size else when
            self._run_jobs(stop - self.time_s, events)
            self.time_s = stop
            self._repair(events)
            if stop >= when:
                return

    # --- reading ----------------------------------------------------------------------------

    def metrics(self) -> dict:
        """Headline figures: utilisation, goodput, ETTR so far, interruptions, lost GPU-hours."""
        interval, checkpoint, restart, work = self._params() if self.jobs else ([], [], [], [])
        job_gpus = np.array([j.nodes * self.gpus_per_node for j in self.jobs], float)
        end = np.where(np.isnan(self.job_finished_s), self.time_s, self.job_finished_s) if self.jobs else 0
        elapsed = np.maximum(end - self.job_started_s, 1e-9)
        ettr = self.job_committed_s / elapsed if self.jobs else np.zeros(0)
        remaining = np.maximum(np.asarray(work) - self.job_committed_s, 0) if self.jobs else np.zeros(0)
        rate = np.where(ettr > 0, ettr, np.nan)
        return {
            "time_s": self.time_s,
            "gpus": self.gpus,
            "gpus_by_state": {name: int((self.gpu_state == code).sum()) for code, name in enumerate(STATE_NAMES)},
            "nodes_by_state": {name: int((self.node_state == code).sum()) for code, name in enumerate(STATE_NAMES)},
            "utilization": float((self.node_job >= 0).sum() / self.nodes),
            "goodput_gpu_hours": float((self.job_committed_s * job_gpus).sum() / SECONDS_PER_HOUR),
            "lost_gpu_hours": float((self.job_lost_s * job_gpus).sum() / SECONDS_PER_HOUR),
            "interruptions": int(self.job_interruptions.sum()),
            "jobs": [
                {"name": job.name, "state": JOB_STATE_NAMES[self.job_state[i]], "nodes": job.nodes,
                 "progress": float(self.job_committed_s[i] / job.work_s), "ettr": float(ettr[i]),
                 "interruptions": int(self.job_interruptions[i]),
                 "forecast_remaining_s": None if not np.isfinite(rate[i]) else float(remaining[i] / rate[i])}
                for i, job in enumerate(self.jobs)
            ],
        }

    # --- persistence ------------------------------------------------------------------------

    ARRAYS = ("gpu_state", "node_state", "repair_until", "node_drained", "node_job", "job_state",
              "job_committed_s", "job_segment_s", "job_restart_left_s", "job_started_s", "job_finished_s",
              "job_interruptions", "job_lost_s")

    def to_bytes(self) -> bytes:
        """Everything needed to continue exactly: arrays, clock and the random generator's state."""
        buffer = io.BytesIO()
        meta = {"time_s": self.time_s, "rng": self.rng.bit_generator.state}
        np.savez_compressed(buffer, meta=np.array(json.dumps(meta)), **{k: getattr(self, k) for k in self.ARRAYS})
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, *, nodes, gpus_per_node, jobs, categories=None) -> "Twin":
        with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in cls.ARRAYS}
            meta = json.loads(str(npz["meta"]))
        rng = np.random.default_rng()
        rng.bit_generator.state = meta["rng"]
        return cls(nodes=nodes, gpus_per_node=gpus_per_node, jobs=jobs,
                   categories=categories or fire_flyer_categories(), time_s=meta["time_s"], rng=rng, **arrays)

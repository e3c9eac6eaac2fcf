"""Twin services: create from a plan, advance and persist, control, inject, ingest real events.

Every change is saved as one transaction (new events, state, clock, metrics), then pushed to the
Channels group ``twin.<id>`` as a delta. The API, the driver and the tests all come through here.
"""
import csv
import io
import logging
import re
import time
from collections.abc import Iterator

import numpy as np
from django.conf import settings
from django.db import transaction

import simcore
from config import observability as metrics
from planner.adapters import scenario_document
from planner.events import send_to_group
from planner.models import Visibility
from planner.services import engine as engine_service
from planner.services.errors import InputError
from simcore import reliability
from simcore import twin as engine
from twin.models import Twin, TwinEvent, TwinSample

logger = logging.getLogger(__name__)
SAMPLE_EVERY_S = 3600.0
MAX_SPEED = 10_000_000.0  # about four simulated months per wall second
MAX_JOBS = 64
DEFAULT_PCI_BUS_IDS = [f"0000:{bus:02x}:00.0" for bus in (0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd)]
XID_LINE = re.compile(r"NVRM: Xid \(PCI:(?P<bus>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
                      r"(?P<xid>\d+),")
JOB_FIELDS = ("name", "nodes", "work_s", "interval_s", "checkpoint_s", "restart_s")
OPTIONAL_JOB_FIELDS = {"fault_factor": 0.0, "nodes_per_domain": 0}
DEFAULT_CHECKPOINT_S = 60.0
NO_FAILURE_INTERVAL_S = 86400.0  # a plan whose rates are all zero: a daily checkpoint (any interval is optimal)


class StaleTwin(RuntimeError):
    """The twin was changed by someone else (an injection) since this copy was loaded."""


class TwinInputError(InputError):
    """Bad twin input: ``errors`` maps a field to its reasons (answered as HTTP 400)."""


def twin_group(twin_id: int) -> str:
    return f"twin.{twin_id}"


def _categories(twin_or_plan):
    """The failure categories of a twin or a plan: its profile with its rate overrides."""
    rate = twin_or_plan.failures_per_1000_node_days if twin_or_plan.failure_profile == "per-node-rate" else None
    node_type = (twin_or_plan.plan if isinstance(twin_or_plan, Twin) else twin_or_plan).node_type
    scope = {**node_type.failure_scope(), "domain_spans_nodes": _domain_nodes(twin_or_plan) > 1}
    return reliability.build_categories(
        twin_or_plan.failure_profile, failures_per_1000_node_days=rate, rates=twin_or_plan.category_rates,
        flap_share=twin_or_plan.link_flap_share, flap_s=twin_or_plan.link_flap_s, **scope)


def _domain_nodes(twin_or_plan) -> int:
    if isinstance(twin_or_plan, Twin):
        return int((twin_or_plan.fabric or {}).get("domain_nodes", 1))
    node = twin_or_plan.node_type
    return (node.scaleup_domain_gpus or node.accelerators_per_node) // node.accelerators_per_node


def twin_categories(twin: Twin) -> list[dict]:
    """The failure categories a twin can inject: key, label, what fails (a GPU, a node, a NIC, a
    link, a switch), whether the platform or the job causes it, what fixes it."""
    return [{"key": c.key, "label": c.label, "unit": c.unit, "cause": c.cause, "action": c.action,
             "repair_h": c.repair_h} for c in _categories(twin)]


def _plan_rate(plan):
    return plan.failures_per_1000_node_days if plan.failure_profile == "per-node-rate" else None


def _fabric(twin: Twin) -> engine.Fabric:
    return engine.Fabric(**twin.fabric) if twin.fabric else engine.Fabric()


def plan_fabric(plan, result: dict) -> dict:
    """The compute fabric's parts as the twin counts them, from the plan's evaluation."""
    fabric = result["fabric"]
    return {"nics_per_node": plan.node_type.compute_nics_per_node, "links": int(fabric["compute_fabric_links"]),
            "leaves": int(fabric["compute_fabric_leaf_switches"]), "switches": int(fabric["compute_fabric_switches"]),
            "domain_nodes": _domain_nodes(plan)}


def default_jobs(plan, result: dict | None = None, spare_nodes: int | None = None) -> list[dict]:
    """One production job on all but a spare pool of nodes (``spare_nodes``, or the spares the
    engine sizes at 99%: where a scale-up domain spans nodes, per domain, as a failed tray is
    replaced only from its own rack), with the plan's checkpoint interval (or the optimum for a
    60-s checkpoint) and the restart its restart profile gives (or the plan's)."""
    result = result or engine_service.evaluate(scenario_document(plan))
    nodes = int(result["cluster"]["nodes"])
    domain_nodes, per_domain = _domain_nodes(plan), 0
    availability = result["reliability"]["node_availability"]
    if spare_nodes is None and domain_nodes > 1:
        domains = nodes // domain_nodes
        per_domain = max(1, domain_nodes - int(reliability.spares_per_domain(domain_nodes, domains, availability)))
        spares = nodes - domains * per_domain
    elif spare_nodes is None:
        spares = int(min(max(1, reliability.spares_needed(nodes, availability)), nodes // 2))
    elif isinstance(spare_nodes, bool) or not isinstance(spare_nodes, int) or not 0 <= spare_nodes < nodes:
        raise TwinInputError({"spare_nodes": [f"a whole number of nodes from 0 to {nodes - 1}: the job needs at "
                                              f"least one of the cluster's {nodes}"]})
    else:
        spares = spare_nodes
    job_nodes = max(1, nodes - spares)
    gpus = job_nodes * plan.node_type.accelerators_per_node
    fabric, share = plan_fabric(plan, result), job_nodes / nodes
    domains = -(-job_nodes // fabric["domain_nodes"]) if fabric["domain_nodes"] > 1 else 0
    units = reliability.unit_counts(gpus, job_nodes, nic=job_nodes * fabric["nics_per_node"],
                                    link=fabric["links"] * share, switch=fabric["switches"] * share, domain=domains)
    timing = reliability.restart_timing(plan.restart_profile, collective_timeout_s=plan.collective_timeout_s)
    kinds, restart_s, _, _ = reliability.job_interruptions(_categories(plan), units,
                                                           0.0, timing, gpus, DEFAULT_CHECKPOINT_S)
    rate_s = float(sum(kinds.values())) / 3600
    optimal_s = float(reliability.optimal_interval_s(DEFAULT_CHECKPOINT_S, rate_s))
    interval_s = plan.checkpoint_interval_s or (optimal_s if np.isfinite(optimal_s) else NO_FAILURE_INTERVAL_S)
    return [{"name": "main", "nodes": job_nodes, "work_s": 365 * 86400.0, "interval_s": interval_s,
             "checkpoint_s": DEFAULT_CHECKPOINT_S, "restart_s": plan.restart_s if plan.restart_s is not None
             else float(restart_s), "fault_factor": 0.0, "nodes_per_domain": per_domain}]


def _jobs(specs: list[dict]) -> list[engine.Job]:
    if not isinstance(specs, list) or not specs:
        raise TwinInputError({"jobs": ["give at least one job"]})
    jobs = []
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict) or not set(JOB_FIELDS) <= set(spec) <= set(JOB_FIELDS) | set(OPTIONAL_JOB_FIELDS):
            raise TwinInputError({f"jobs.{i}": [f"needs the fields {', '.join(JOB_FIELDS)} "
                                                f"(and optionally {', '.join(OPTIONAL_JOB_FIELDS)})"]})
        values = {}
        for key in (*JOB_FIELDS[1:], *OPTIONAL_JOB_FIELDS):
            value = spec.get(key, OPTIONAL_JOB_FIELDS.get(key))
            if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
                raise TwinInputError({f"jobs.{i}.{key}": ["must be a number"]})
            values[key] = float(value)
        if not isinstance(spec["name"], str) or not 0 < len(spec["name"]) <= 100 or "\x00" in spec["name"]:
            raise TwinInputError({f"jobs.{i}.name": ["a name of 1 to 100 characters (no NUL)"]})
        jobs.append(engine.Job(name=spec["name"], nodes=int(values["nodes"]), work_s=values["work_s"],
                               interval_s=values["interval_s"], checkpoint_s=values["checkpoint_s"],
                               restart_s=values["restart_s"], fault_factor=values["fault_factor"],
                               nodes_per_domain=int(values["nodes_per_domain"])))
    return jobs


def simulator(twin: Twin, state: bytes | None = None) -> engine.Twin:
    kwargs = dict(nodes=twin.node_count, gpus_per_node=twin.gpus_per_node, jobs=_jobs(twin.jobs),
                  categories=_categories(twin),
                  fabric=_fabric(twin), exclude_after=twin.exclude_after)
    try:
        if state is None:
            return engine.Twin(**kwargs, rng=np.random.default_rng(twin.seed))
        return engine.Twin.from_bytes(state, **kwargs)
    except simcore.ScenarioError as error:
        raise TwinInputError({error.field: [error.reason]}) from error


@transaction.atomic
def twin_create(*, owner, plan, name: str = "", seed: int = 0, speed: float = 3600.0, jobs=None,
                pci_bus_ids=None, exclude_after: int = 3, spare_nodes: int | None = None,
                visibility: str = Visibility.PRIVATE, work_budget_s: float | None = None) -> Twin:
    """A new twin of the plan, paused at time zero; ``work_budget_s`` (web requests) bounds the
    engine work of building it (simcore.budget)."""
    _check_speed(speed)
    if isinstance(exclude_after, bool) or not isinstance(exclude_after, int) or exclude_after < 0:
        raise TwinInputError({"exclude_after": ["a whole number of faults, zero (never exclude) or more"]})
    gpus_per_node = plan.node_type.accelerators_per_node
    if plan.node_count * gpus_per_node > settings.TWIN_MAX_GPUS:
        raise TwinInputError({"plan": [f"{plan.node_count * gpus_per_node:,} GPUs; a twin holds at most "
                                       f"{settings.TWIN_MAX_GPUS:,} (TWIN_MAX_GPUS)"]})
    buses = pci_bus_ids or DEFAULT_PCI_BUS_IDS[:gpus_per_node]
    if len(buses) != gpus_per_node or len({_bus(b) for b in buses}) != gpus_per_node:
        raise TwinInputError({"pci_bus_ids": [f"give {gpus_per_node} distinct PCI bus ids, one per GPU"]})
    if jobs is not None and spare_nodes is not None:
        raise TwinInputError({"spare_nodes": ["sizes the default job's spare pool: give it or jobs, not both"]})
    if jobs is not None and (not isinstance(jobs, list) or len(jobs) > MAX_JOBS):
        raise TwinInputError({"jobs": [f"a list of at most {MAX_JOBS} jobs"]})
    try:
        simcore.budget.check("plan", simcore.budget.twin_s(plan.node_count * gpus_per_node), work_budget_s,
                             "a smaller plan")
        result = engine_service.evaluate(scenario_document(plan), work_budget_s=work_budget_s)
    except simcore.ScenarioError as error:
        raise TwinInputError({error.field: [error.reason]}) from error
    twin = Twin(owner=owner, plan=plan, name=name or f"{plan.name} twin", seed=seed, speed=speed, visibility=visibility,
                node_count=plan.node_count, gpus_per_node=gpus_per_node, failure_profile=plan.failure_profile,
                failures_per_1000_node_days=_plan_rate(plan), category_rates=plan.category_rates,
                link_flap_share=plan.link_flap_share, link_flap_s=plan.link_flap_s,
                fabric=plan_fabric(plan, result),
                exclude_after=exclude_after,
                jobs=jobs if jobs is not None else default_jobs(plan, result, spare_nodes),
                pci_bus_ids=[_bus(b) for b in buses])
    sim = simulator(twin)
    twin.state = sim.to_bytes()
    twin.metrics = sim.metrics()
    twin.save()
    return twin


def _bus(bus: str) -> str:
    """Normalise a PCI bus id to domain:bus:device.function, lower case."""
    text = str(bus).strip().lower()
    return text if "." in text else f"{text}.0"


def _save(twin: Twin, sim: engine.Twin, events: list[engine.TwinEvent], before: tuple | None):
    """Persist the events and the state they lead to together, then push the delta."""
    rows = [TwinEvent(twin=twin, seq=twin.last_seq + i + 1, sim_time_s=e.time_s, kind=e.kind,
                      category=e.category, gpu=e.gpu, node=e.node, job=e.job, message=e.message)
            for i, e in enumerate(events)]
    metrics = sim.metrics()
    sample_due = int(sim.time_s // SAMPLE_EVERY_S) > int(twin.sim_time_s // SAMPLE_EVERY_S)
    with transaction.atomic():
        stored_seq = Twin.objects.select_for_update().values_list("last_seq", flat=True).get(pk=twin.pk)
        if stored_seq != twin.last_seq:
            raise StaleTwin(f"twin {twin.pk} changed underneath (seq {stored_seq}, expected {twin.last_seq})")
        TwinEvent.objects.bulk_create(rows)
        twin.last_seq += len(rows)
        twin.sim_time_s = sim.time_s
        twin.state = sim.to_bytes()
        twin.metrics = metrics
        twin.save(update_fields=["last_seq", "sim_time_s", "state", "metrics", "updated_at"])
        if sample_due:
            TwinSample.objects.create(twin=twin, sim_time_s=sim.time_s, data=_sample(metrics))
    delta = {"time_s": sim.time_s, "last_seq": twin.last_seq, "metrics": metrics,
             "events": [event_json(row) for row in rows[-200:]], "dropped_events": max(0, len(rows) - 200)}
    if before is not None:
        delta["gpus"] = _changes(before[0], sim.gpu_state)
        delta["nodes"] = _changes(before[1], sim.node_state)
    transaction.on_commit(lambda: publish(twin.pk, delta))  # viewers never see a rolled-back change
    return rows


def _sample(metrics: dict) -> dict:
    return {k: metrics[k] for k in ("time_s", "utilization", "goodput_gpu_hours", "lost_gpu_hours",
                                    "interruptions")} | {
        "ettr": [job["ettr"] for job in metrics["jobs"]]}


def _states(sim: engine.Twin) -> tuple[np.ndarray, np.ndarray]:
    """GPU and node states before a change, to send viewers only what it changed."""
    return sim.gpu_state.copy(), sim.node_state.copy()


def _changes(old: np.ndarray, new: np.ndarray) -> list[list[int]]:
    changed = np.flatnonzero(old != new)
    return np.stack([changed, new[changed]], axis=1).tolist() if changed.size else []


def event_json(row: TwinEvent) -> dict:
    return {"seq": row.seq, "time_s": row.sim_time_s, "kind": row.kind, "category": row.category,
            "gpu": row.gpu, "node": row.node, "job": row.job, "message": row.message}


EVENT_CSV_COLUMNS = ("seq", "time_s", "kind", "category", "gpu", "node", "job", "message")


def events_csv(events) -> Iterator[str]:
    """A twin's events as CSV text, a header then a block of rows at a time (for a streamed
    download: the database is read in batches, never all at once)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=EVENT_CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for number, row in enumerate(events.order_by("seq").iterator(chunk_size=2000), start=1):
        writer.writerow(event_json(row))
        if number % 2000 == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()


def publish(twin_id: int, delta: dict):
    """Push a delta to the twin's viewers, stamped with the wall-clock time it left (for latency)."""
    send_to_group(twin_group(twin_id), {"type": "twin.delta", "delta": {**delta, "published_at": time.time()}})


def snapshot(twin: Twin) -> dict:
    """Everything a new viewer needs: component states, metrics, the latest events."""
    sim = simulator(twin, twin.state)
    recent = TwinEvent.objects.filter(twin=twin).order_by("-seq")[:50]
    return {"twin": twin.pk, "status": twin.status, "speed": twin.speed, "time_s": sim.time_s,
            "last_seq": twin.last_seq, "gpus_per_node": sim.gpus_per_node,
            "gpu_state": sim.gpu_state.tolist(), "node_state": sim.node_state.tolist(),
            "node_job": sim.node_job.tolist(), "state_names": list(engine.STATE_NAMES),
            "metrics": sim.metrics(), "events": [event_json(e) for e in reversed(recent)]}


def twin_advance(*, twin: Twin, sim_seconds: float, sim: engine.Twin | None = None) -> engine.Twin:
    """Run the twin ``sim_seconds`` on from its saved state (or the driver's in-memory copy)."""
    sim = sim or simulator(twin, twin.state)
    before = _states(sim)
    events = sim.advance(sim_seconds)
    _save(twin, sim, events, before)
    metrics.TWIN_TICKS.inc()
    return sim


def twin_set_status(*, twin: Twin, status: str) -> Twin:
    """Start, pause or resume a twin; starting one needs its owner under TWIN_MAX_RUNNING_PER_USER."""
    if status == Twin.Status.RUNNING and twin.status != Twin.Status.RUNNING:
        cap = settings.TWIN_MAX_RUNNING_PER_USER
        if Twin.objects.filter(owner_id=twin.owner_id, status=Twin.Status.RUNNING).count() >= cap:
            raise TwinInputError({"status": [
                f"at most {cap} running twins per user (TWIN_MAX_RUNNING_PER_USER); pause one first"]})
    twin.status = status
    twin.error = ""
    twin.save(update_fields=["status", "error", "updated_at"])
    publish(twin.pk, {"status": status, "time_s": twin.sim_time_s, "last_seq": twin.last_seq})
    return twin


def _check_speed(speed):
    if isinstance(speed, bool) or not isinstance(speed, int | float) or not np.isfinite(speed) \
            or not 0 < speed <= MAX_SPEED:
        raise TwinInputError({"speed": [f"simulated seconds per wall second, above 0 and at most {MAX_SPEED:,.0f}"]})


def twin_set_speed(*, twin: Twin, speed) -> Twin:
    _check_speed(speed)
    twin.speed = float(speed)
    twin.save(update_fields=["speed", "updated_at"])
    publish(twin.pk, {"speed": twin.speed, "time_s": twin.sim_time_s, "last_seq": twin.last_seq})
    return twin


def category_index(categories, key: str) -> int:
    keys = [c.key for c in categories]
    if key not in keys:
        raise TwinInputError({"category": [f"unknown category '{key}' for this twin (known: {', '.join(keys)})"]})
    return keys.index(key)


@transaction.atomic
def twin_inject(*, twin: Twin, category: str, gpu: int | None = None, node: int | None = None,
                part: int | None = None, job: int | None = None, kind: str = "injected",
                note: str = "") -> list[TwinEvent]:
    """Apply one failure now, by hand or from a real event; it is logged and pushed like any other.
    A platform fault names the GPU, node or fabric part it hit; a job-caused one the job."""
    twin = Twin.objects.select_for_update().get(pk=twin.pk)
    sim = simulator(twin, twin.state)
    index = category_index(sim.categories, category)
    before = _states(sim)
    chosen = sim.categories[index]
    if chosen.unit in reliability.FABRIC_UNITS and chosen.unit != "switch" and part is None and node is not None:
        part = int(node) * sim.fabric.nics_per_node  # an event from a node: its first NIC and link
    target = {"gpu": ("gpu", gpu, sim.gpus), "node": ("node", node, sim.nodes)}.get(chosen.unit, ("part", part, None))
    if chosen.cause == reliability.JOB:
        if node is None and gpu is not None:  # an Xid line names the GPU: the fault is its node's job's
            node = int(gpu) // sim.gpus_per_node
        target = ("job", job if node is None else node, len(sim.jobs))
    name, value, count = target
    if value is None:
        limit = f" (0-{count - 1})" if count else ""
        raise TwinInputError({f"target.{name}": [f"{category} happens on a {chosen.unit if name == 'part' else name}:"
                                                 f" give {name}{limit}"]})
    try:
        if name == "job":  # a job-caused fault: the job given, or the one holding the node it came from
            events = sim.apply_job_fault(index, -1 if job is None else int(job),
                                         node=-1 if node is None else int(node), kind=kind)
        else:
            events = sim.apply_failure(index, gpu=-1 if gpu is None else int(gpu),
                                       node=-1 if node is None else int(node),
                                       part=-1 if part is None else int(part), kind=kind)
    except simcore.ScenarioError as error:
        raise TwinInputError({error.field: [error.reason]}) from error
    if note:
        events[0].message = f"{events[0].message}: {note}"
    return _save(twin, sim, events, before)


@transaction.atomic
def twin_drain(*, twin: Twin, node, drained: bool) -> list[TwinEvent]:
    """Drain a node (take it out of service; its job restarts elsewhere) or return it."""
    if isinstance(node, bool) or not isinstance(node, int):
        raise TwinInputError({"node": ["give a node index"]})
    twin = Twin.objects.select_for_update().get(pk=twin.pk)
    sim = simulator(twin, twin.state)
    before = _states(sim)
    try:
        events = sim.set_drained(node, drained)
    except simcore.ScenarioError as error:
        raise TwinInputError({"node": [error.reason]}) from error
    return _save(twin, sim, events, before)


def parse_xid_line(twin: Twin, line: str) -> tuple[int, int]:
    """(local GPU index, Xid code) from an NVIDIA driver kernel-log line."""
    match = XID_LINE.search(line or "")
    if match is None:
        raise TwinInputError({"line": ["not an 'NVRM: Xid (PCI:dddd:bb:dd[.f]): <code>, ...' kernel-log line"]})
    bus = _bus(match["bus"])
    if bus not in twin.pci_bus_ids:
        known = ", ".join(twin.pci_bus_ids)
        raise TwinInputError({"line": [f"PCI bus {bus} is not one of this twin's GPUs ({known})"]})
    return twin.pci_bus_ids.index(bus), int(match["xid"])


def twin_ingest(*, twin: Twin, payload: dict) -> list[TwinEvent]:
    """A real event: ``{"node": n, "line": "NVRM: Xid ..."}`` or ``{"node": n, "gpu": local index,
    "xid": code}`` or ``{"node": n, "category": key}``. Unknown Xid codes are refused."""
    if not isinstance(payload, dict):
        raise TwinInputError({"(body)": ["must be a JSON object"]})
    unknown = set(payload) - {"node", "line", "gpu", "xid", "category"}
    if unknown:
        raise TwinInputError({sorted(unknown)[0]: ["unknown field"]})
    node = payload.get("node")
    if isinstance(node, bool) or not isinstance(node, int):
        raise TwinInputError({"node": ["give the node index the event came from"]})
    gpus_per_node = len(twin.pci_bus_ids)
    if "line" in payload:
        if not isinstance(payload["line"], str):
            raise TwinInputError({"line": ["must be a kernel-log line (a string)"]})
        local, xid = parse_xid_line(twin, payload["line"])
        category, note = f"xid-{xid}", payload["line"].strip()[:300]
    elif "xid" in payload:
        local, xid = payload.get("gpu"), payload["xid"]
        if isinstance(local, bool) or not isinstance(local, int) or not 0 <= local < gpus_per_node:
            raise TwinInputError({"gpu": [f"give the GPU's index in its node (0-{gpus_per_node - 1})"]})
        if isinstance(xid, bool) or not isinstance(xid, int):
            raise TwinInputError({"xid": ["must be a whole number"]})
        category, note = f"xid-{xid}", ""
    elif "category" in payload:
        return twin_inject(twin=twin, category=payload["category"], node=node, kind="ingested")
    else:
        raise TwinInputError({"(body)": ["give line, xid (with gpu) or category"]})
    if xid not in reliability.FF_XID_COUNTS:
        raise TwinInputError({"xid": [f"Xid {xid} is not a known category "
                                      f"(known: {', '.join(map(str, reliability.FF_XID_COUNTS))})"]})
    return twin_inject(twin=twin, category=category, gpu=node * gpus_per_node + local, kind="ingested", note=note)


XID_MARKER = "NVRM: Xid"
MAX_LOG_LINES = 100_000


@transaction.atomic
def twin_ingest_log(*, twin: Twin, node, text) -> dict:
    """A node's whole kernel log (``dmesg`` or ``journalctl -k`` output) applied in one transaction:
    every line with an ``NVRM: Xid`` becomes an ingested event, the rest is skipped and counted, and
    an Xid line that cannot be applied (not parseable, a bus the twin lacks, an unknown code) is
    reported with its line number while the others still apply."""
    if not isinstance(text, str):
        raise TwinInputError({"log": ["give the kernel log's text"]})
    if isinstance(node, bool) or not isinstance(node, int) or not 0 <= node < twin.node_count:
        raise TwinInputError({"node": [f"the node the log came from (0-{twin.node_count - 1})"]})
    lines = text.splitlines()
    if len(lines) > MAX_LOG_LINES:
        raise TwinInputError({"log": [f"{len(lines):,} lines; at most {MAX_LOG_LINES:,} per upload"]})
    events, malformed, xid_lines = [], [], 0
    for number, line in enumerate(lines, start=1):
        if XID_MARKER not in line:
            continue
        xid_lines += 1
        try:
            events += twin_ingest(twin=twin, payload={"node": node, "line": line})
        except TwinInputError as error:
            malformed.append({"line": number, "reason": "; ".join(r for reasons in error.errors.values()
                                                                  for r in reasons)})
    return {"lines": len(lines), "xid_lines": xid_lines, "skipped_lines": len(lines) - xid_lines,
            "applied": xid_lines - len(malformed), "malformed": malformed,
            "events": [event_json(e) for e in events]}

class Driver:
    """Advances every running twin by speed x the wall time since its last tick, a few times a
    second. One driver per deployment: the ``run_twins`` command, or a thread in the web process
    when there is no Redis (the embedded default)."""

    def __init__(self, tick_s: float = 0.2):
        self.tick_s = tick_s
        self.sims: dict[int, tuple[engine.Twin, float, int]] = {}
        self.stopping = False

    def tick(self, now: float | None = None):
        now = time.monotonic() if now is None else now
        running = {t.pk: t for t in Twin.objects.filter(status=Twin.Status.RUNNING).select_related(
            "plan__node_type", "plan__switch", "plan__price_book")}
        for pk in list(self.sims):
            if pk not in running:
                del self.sims[pk]
        for pk, twin in running.items():
            try:
                self._tick_one(pk, twin, now)
            except StaleTwin:
                self.sims.pop(pk, None)  # changed elsewhere: reload the saved state on the next tick
            except Exception as error:  # noqa: BLE001 - one broken twin must not stop the others
                logger.exception("twin %s stopped", pk)
                self.sims.pop(pk, None)
                Twin.objects.filter(pk=pk).update(status=Twin.Status.PAUSED, error=f"{type(error).__name__}: {error}")

    def _tick_one(self, pk: int, twin: Twin, now: float):
        cached = self.sims.get(pk)
        if cached is None or cached[2] != twin.last_seq:  # new, or changed elsewhere (inject, ingest)
            self.sims[pk] = (simulator(twin, twin.state), now, twin.last_seq)
            return
        sim, last, _ = cached
        sim = twin_advance(twin=twin, sim_seconds=twin.speed * (now - last), sim=sim)
        self.sims[pk] = (sim, now, twin.last_seq)

    def run(self):
        while not self.stopping:
            start = time.monotonic()
            self.tick(start)
            time.sleep(max(0.0, self.tick_s - (time.monotonic() - start)))

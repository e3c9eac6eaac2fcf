"""Running and controlling a twin: advance, start and pause, speed, inject a failure, drain a node."""
from django.conf import settings
from django.db import transaction

import simcore
from planner import metrics
from simcore.formulas import reliability
from simcore.tools import twin as engine
from twin.models import Twin, TwinEvent
from twin.services.creation import check_speed, checked_pci_bus_ids, simulator
from twin.services.errors import TwinInputError
from twin.services.persistence import component_states, publish, save_change


def twin_advance(*, twin: Twin, sim_seconds: float, sim: engine.Twin | None = None) -> engine.Twin:
    """Run the twin ``sim_seconds`` on from its saved state (or the driver's in-memory copy)."""
    sim = sim or simulator(twin, twin.state)
    before = component_states(sim)
    events = sim.advance(sim_seconds)
    save_change(twin, sim, events, before)
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


def twin_delete(*, twin: Twin) -> None:
    """Delete a twin with everything it recorded. Its row is locked first, as the driver locks it to
    save a tick (``persistence.save_change``), so a tick being saved finishes before the delete
    gathers the twin's samples and events, and one saved after finds the twin gone: a sample the
    delete did not see can no longer block it (a 500 on PostgreSQL's foreign key before)."""
    with transaction.atomic():
        for locked in Twin.objects.select_for_update().filter(pk=twin.pk):
            locked.delete()


def twin_set_pci_bus_ids(*, twin: Twin, pci_bus_ids) -> Twin:
    """Set the GPU addresses a twin maps kernel-log Xid lines by (its nodes' ``nvidia-smi`` order)."""
    twin.pci_bus_ids = checked_pci_bus_ids(pci_bus_ids, twin.gpus_per_node)
    twin.save(update_fields=["pci_bus_ids", "updated_at"])
    return twin


def twin_set_speed(*, twin: Twin, speed) -> Twin:
    check_speed(speed)
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
                note: str = "", logged_at=None) -> list[TwinEvent]:
    """Apply one failure now, by hand or from a real event (``logged_at``: when its log says it
    happened); it is logged and pushed like any other. A platform fault names the GPU, node or
    fabric part it hit; a job-caused one the job."""
    return twin_inject_all(twin=twin, failures=[{"category": category, "gpu": gpu, "node": node, "part": part,
                                                 "job": job, "kind": kind, "note": note, "logged_at": logged_at}])


@transaction.atomic
def twin_inject_all(*, twin: Twin, failures: list[dict]) -> list[TwinEvent]:
    """Several failures (each as :func:`twin_inject` takes one) applied in order to the twin's state,
    loaded once and saved once with every event: a kernel log's faults cost one load and one save."""
    twin = Twin.objects.select_for_update().get(pk=twin.pk)
    sim = simulator(twin, twin.state)
    before = component_states(sim)
    events, logged_at = [], []
    for failure in failures:
        applied = _apply_failure(sim, **{key: value for key, value in failure.items() if key != "logged_at"})
        events += applied
        logged_at += [failure.get("logged_at")] * len(applied)
    return save_change(twin, sim, events, before, logged_at)


def _apply_failure(sim: engine.Twin, *, category: str, gpu=None, node=None, part=None, job=None,
                   kind: str = "injected", note: str = "", repair: tuple[str, float] | None = None
                   ) -> list[engine.TwinEvent]:
    """One failure applied to the simulator: its events."""
    index = category_index(sim.categories, category)
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
                                       part=-1 if part is None else int(part), kind=kind,
                                       repair=None if repair is None else tuple(repair))
    except simcore.ScenarioError as error:
        raise TwinInputError({error.field: [error.reason]}) from error
    if note:
        events[0].message = f"{events[0].message}: {note}"
    return events


@transaction.atomic
def twin_drain(*, twin: Twin, node, drained: bool) -> list[TwinEvent]:
    """Drain a node (take it out of service; its job restarts elsewhere) or return it."""
    if isinstance(node, bool) or not isinstance(node, int):
        raise TwinInputError({"node": ["give a node index"]})
    twin = Twin.objects.select_for_update().get(pk=twin.pk)
    sim = simulator(twin, twin.state)
    before = component_states(sim)
    try:
        events = sim.set_drained(node, drained)
    except simcore.ScenarioError as error:
        raise TwinInputError({"node": [error.reason]}) from error
    return save_change(twin, sim, events, before)

"""Saving a twin's change (new events, state, clock, metrics) as one transaction, then pushing it
to the Channels group ``twin.<id>`` as a delta; what a new viewer gets."""
import time

import numpy as np
from django.db import transaction

from planner.events import send_to_group
from simcore.tools import twin as engine
from twin.models import Twin, TwinEvent, TwinSample
from twin.services.creation import simulator
from twin.services.errors import StaleTwin

SAMPLE_EVERY_S = 3600.0


def twin_group(twin_id: int) -> str:
    return f"twin.{twin_id}"


def save_change(twin: Twin, sim: engine.Twin, events: list[engine.TwinEvent], before: tuple | None,
                logged_at: list | None = None):
    """Persist the events and the state they lead to together, then push the delta; ``logged_at``:
    for each event, when the kernel log that brought it says it happened."""
    times = logged_at or [None] * len(events)
    rows = [TwinEvent(twin=twin, seq=twin.last_seq + i + 1, sim_time_s=e.time_s, kind=e.kind,
                      category=e.category, gpu=e.gpu, node=e.node, job=e.job, message=e.message, logged_at=at)
            for i, (e, at) in enumerate(zip(events, times))]
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
        delta["nodes"] = _changes(before[1], sim.node_view())
    transaction.on_commit(lambda: publish(twin.pk, delta))  # viewers never see a rolled-back change
    return rows


def _sample(metrics: dict) -> dict:
    return {k: metrics[k] for k in ("time_s", "availability", "utilization", "goodput_gpu_hours", "lost_gpu_hours",
                                    "interruptions")} | {
        "ettr": [job["ettr"] for job in metrics["jobs"]]}


def component_states(sim: engine.Twin) -> tuple[np.ndarray, np.ndarray]:
    """GPU and node states (as viewers see them) before a change, to send viewers only what it changed."""
    return sim.gpu_state.copy(), sim.node_view()


def _changes(old: np.ndarray, new: np.ndarray) -> list[list[int]]:
    changed = np.flatnonzero(old != new)
    return np.stack([changed, new[changed]], axis=1).tolist() if changed.size else []


def event_json(row: TwinEvent) -> dict:
    """An event as the API, the pushes and the CSV give it: a GPU, node or job it does not concern is
    null (the simulator's -1)."""
    return {"seq": row.seq, "time_s": row.sim_time_s, "kind": row.kind, "category": row.category,
            **{name: (value if value >= 0 else None) for name, value in (("gpu", row.gpu), ("node", row.node),
                                                                         ("job", row.job))},
            "message": row.message, "logged_at": row.logged_at.isoformat() if row.logged_at else None}


def publish(twin_id: int, delta: dict):
    """Push a delta to the twin's viewers, stamped with the wall-clock time it left (for latency)."""
    send_to_group(twin_group(twin_id), {"type": "twin.delta", "delta": {**delta, "published_at": time.time()}})


def snapshot(twin: Twin) -> dict:
    """Everything a new viewer needs: component states, metrics, the latest events."""
    sim = simulator(twin, twin.state)
    recent = TwinEvent.objects.filter(twin=twin).order_by("-seq")[:50]
    return {"twin": twin.pk, "status": twin.status, "speed": twin.speed, "time_s": sim.time_s,
            "last_seq": twin.last_seq, "gpus_per_node": sim.gpus_per_node,
            "gpu_state": sim.gpu_state.tolist(), "node_state": sim.node_view().tolist(),
            "node_job": sim.node_job.tolist(), "state_names": list(engine.STATE_NAMES),
            "metrics": sim.metrics(), "events": [event_json(e) for e in reversed(recent)]}

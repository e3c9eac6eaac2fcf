"""Submitting a sweep: record it, queue its chunks, and keep nothing of it when the queue is down."""
from planner.models import ClusterPlan, Sweep, Workload
from planner.services.sweeps import sweep_create, sweep_discard
from planner.tasks import QueueUnavailable, runs_in_process, sweep_enqueue


def sweep_submit(*, owner, plan: ClusterPlan, workload: Workload | None, spec: dict, name: str = "") -> Sweep:
    """Create the sweep (an identical finished one is reused) and queue its chunks. Raises
    SweepInputError for bad input and QueueUnavailable when the broker is down, in which case the
    sweep is deleted again: nothing of a sweep that could not be queued stays."""
    sweep = sweep_create(owner=owner, plan=plan, workload=workload, spec=spec, name=name, in_process=runs_in_process())
    if sweep.status != Sweep.Status.DONE:
        try:
            sweep_enqueue(sweep)
        except QueueUnavailable:
            sweep_discard(sweep=sweep)
            raise
        sweep.refresh_from_db()
    return sweep

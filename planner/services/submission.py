"""Submitting a sweep (or a site-first plan's): record it, queue its chunks, and keep nothing of it
when the queue is down."""
from planner.models import ClusterPlan, Sweep, Workload
from planner.services.sites import site_plan_create
from planner.services.sweeps import sweep_create, sweep_discard
from planner.tasks import QueueUnavailable, runs_in_process, sweep_enqueue


def sweep_submit(*, owner, plan: ClusterPlan, workload: Workload | None, spec: dict, name: str = "") -> Sweep:
    """Create the sweep (an identical finished one is reused) and queue its chunks. Raises
    SweepInputError for bad input and QueueUnavailable when the broker is down, in which case the
    sweep is deleted again: nothing of a sweep that could not be queued stays."""
    return queued(sweep_create(owner=owner, plan=plan, workload=workload, spec=spec, name=name,
                               in_process=runs_in_process()))


def site_submit(**request) -> Sweep:
    """Record a site-first plan's sweep (:func:`planner.services.sites.site_plan_create`) and queue it."""
    return queued(site_plan_create(**request, in_process=runs_in_process()))


def queued(sweep: Sweep) -> Sweep:
    """Queue a recorded sweep's chunks (none if it reused finished results); when the broker is
    down, delete it again and raise QueueUnavailable."""
    if sweep.status != Sweep.Status.DONE:
        try:
            sweep_enqueue(sweep)
        except QueueUnavailable:
            sweep_discard(sweep=sweep)
            raise
        sweep.refresh_from_db()
    return sweep

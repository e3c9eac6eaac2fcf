import json
import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from planner.models import ClusterPlan, Sweep, Workload
from planner.services.submission import sweep_submit
from planner.services.sweep_spec import SweepInputError
from planner.tasks import QueueUnavailable


class Command(BaseCommand):
    help = ("Submit a sweep from a JSON file: {plan, workload?, name?, axes, goal?, outputs?} "
            "(the body of POST /api/sweeps/). With --wait, follow it to the end.")

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--user", required=True, help="the sweep's owner")
        parser.add_argument("--wait", action="store_true", help="wait until the sweep finishes")
        parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait at most")

    def handle(self, *args, file, user, wait, timeout, **options):
        try:
            with open(file, encoding="utf-8") as handle:
                request = json.load(handle)
        except (OSError, json.JSONDecodeError) as error:
            raise CommandError(f"cannot read {file}: {error}") from error
        if not isinstance(request, dict):
            raise CommandError("the file must hold a JSON object")
        owner = get_user_model().objects.filter(username=user).first()
        if owner is None:
            raise CommandError(f"no user '{user}'")
        plan = ClusterPlan.objects.filter(slug=request.get("plan")).first()
        if plan is None:
            raise CommandError(f"no plan {request.get('plan')!r}")
        workload = None
        if request.get("workload"):
            workload = Workload.objects.filter(slug=request["workload"]).first()
            if workload is None:
                raise CommandError(f"no workload {request['workload']!r}")
        spec = {key: request[key] for key in ("axes", "goal", "outputs") if request.get(key) is not None}
        unknown = set(request) - {"plan", "workload", "name", "axes", "goal", "outputs"}
        if unknown:
            raise CommandError(f"{sorted(unknown)[0]}: unknown field")
        try:
            sweep = sweep_submit(owner=owner, plan=plan, workload=workload, spec=spec, name=request.get("name", ""))
        except SweepInputError as error:
            raise CommandError(str(error)) from error
        except QueueUnavailable as error:
            raise CommandError(QueueUnavailable.MESSAGE) from error
        self.stdout.write(f"sweep {sweep.pk}: {sweep.total_points:,} points in {sweep.chunk_count} chunks"
                          + (f" (reusing sweep {sweep.reused_from_id})" if sweep.reused_from_id else ""))
        if not wait:
            return
        deadline = time.monotonic() + timeout
        shown = -1
        while True:
            sweep.refresh_from_db()
            if sweep.completed_chunks != shown:
                shown = sweep.completed_chunks
                self.stdout.write(f"  {sweep.status} {sweep.progress:6.1%}")
            if sweep.status in Sweep.FINAL:
                break
            if time.monotonic() > deadline:
                raise CommandError(f"sweep {sweep.pk} still {sweep.status} after {timeout:g} s")
            time.sleep(0.5)
        if sweep.status != Sweep.Status.DONE:
            raise CommandError(f"sweep {sweep.pk} {sweep.status}: {sweep.error}")
        if sweep.goal_result:
            self.stdout.write(json.dumps(sweep.goal_result, indent=2))

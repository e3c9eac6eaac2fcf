from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from planner.models import ClusterPlan
from planner.services import netbox
from planner.services.errors import InputError


class Command(BaseCommand):
    help = ("Write a plan's NetBox import files as a ZIP, with no work budget: for plans too large for "
            "GET /api/plans/{slug}/netbox/.")

    def add_arguments(self, parser):
        parser.add_argument("plan", help="plan slug")
        parser.add_argument("output", type=Path, help="the ZIP file to write")
        parser.add_argument("--existing", default="", help="comma-separated slugs of plans already imported")
        parser.add_argument("--existing-manufacturers", default="",
                            help="comma-separated names of manufacturers the NetBox already has")
        parser.add_argument("--u-height", action="append", default=[], metavar="PART=U",
                            help="the rack height of a part the catalogue has none for (repeatable)")

    def handle(self, *args, plan, output, existing, existing_manufacturers, u_height, **options):
        slugs = [plan] + [s.strip() for s in existing.split(",") if s.strip()]
        found = {p.slug: p for p in ClusterPlan.objects.filter(slug__in=slugs)}
        missing = [s for s in slugs if s not in found]
        if missing:
            raise CommandError(f"no plan {', '.join(repr(s) for s in missing)}")
        try:
            heights = {part: int(units) for part, units in (item.split("=", 1) for item in u_height)}
        except ValueError:
            raise CommandError("--u-height takes PART=U, U a whole number of rack units") from None
        try:
            files = netbox.plan_netbox(plan=found[plan], u_heights=heights, existing=[found[s] for s in slugs[1:]],
                                       existing_manufacturers=[m.strip() for m in existing_manufacturers.split(",")
                                                               if m.strip()])
        except InputError as error:
            raise CommandError("; ".join(f"{_flag(field)}: {' '.join(reasons)}"
                                         for field, reasons in error.errors.items())) from None
        output.write_bytes(netbox.netbox_zip(files, plan))
        self.stdout.write(f"{output}: {len(files['racks']) - 1:,} racks, {len(files['devices']) - 1:,} devices, "
                          f"{len(files['cables']) - 1:,} cables, {len(files['inventory-items']) - 1:,} modules")


def _flag(field: str) -> str:
    """The command's own way of giving a field the service names (the API's query parameter)."""
    if field.startswith("u_height."):
        return f"--u-height {field.removeprefix('u_height.')}=U"
    return {"existing": "--existing", "existing_manufacturers": "--existing-manufacturers"}.get(field, field)

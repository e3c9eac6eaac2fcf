import json

from django.core.management.base import BaseCommand, CommandError

from planner.models import ClusterPlan, Workload
from planner.services.plans import compare_choice_problems, plan_compare
from simcore.outputs import display_output


class Command(BaseCommand):
    help = "Compare 2-4 cluster plans side by side; ratios are to the first."

    def add_arguments(self, parser):
        parser.add_argument("plans", nargs="+", help="2 to 4 plan slugs; the first is the reference")
        parser.add_argument("--workload", help="workload slug to train on every plan")
        parser.add_argument("--format", choices=["json", "table"], default="table")

    def handle(self, *args, plans, workload, format, **options):
        problems = compare_choice_problems(plans)
        if problems:
            raise CommandError("; ".join(problems))
        rows = {p.slug: p for p in ClusterPlan.objects.filter(slug__in=plans)}
        missing = [slug for slug in plans if slug not in rows]
        if missing:
            raise CommandError(f"no plan {', '.join(repr(m) for m in missing)}")
        workload_row = Workload.objects.filter(slug=workload).first() if workload else None
        if workload and workload_row is None:
            raise CommandError(f"no workload '{workload}'")
        comparison = plan_compare(plans=[rows[s] for s in plans], workload=workload_row)
        if format == "json":
            self.stdout.write(json.dumps(comparison, indent=2))
            return
        currency = comparison["currency"] or "price"
        rows = []
        for metric in comparison["metrics"]:  # a price's unit already names the currency ("TFLOPS/USD")
            unit = "currency" if metric["unit"] == comparison["currency"] else metric["unit"]
            cells = [display_output(value, unit, currency)
                     + ("" if value is None or ratio is None or ratio == 1 else f" ({ratio:.2f}x)")
                     for value, ratio in zip(metric["values"], metric["ratio_to_first"])]
            rows.append((metric["label"], cells))
        label_width = max(len(label) for label, _ in [("metric", None), *rows])
        width = max(len(text) for text in [*plans, *(cell for _, cells in rows for cell in cells)])
        self.stdout.write(f"{'metric':{label_width}}" + "".join(f"  {s:>{width}}" for s in plans))
        for label, cells in rows:
            self.stdout.write(f"{label:{label_width}}" + "".join(f"  {cell:>{width}}" for cell in cells))
        for slug, parts in comparison["announced"].items():
            self.stdout.write(f"{slug} is announced, not shipping: "
                              + "; ".join(f"{p['part']} {p['name']}" for p in parts))
        for slug, reasons in comparison["infeasible"].items():
            self.stdout.write(f"{slug} cannot run: {'; '.join(reasons)}")

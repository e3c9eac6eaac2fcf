import json

from django.core.management.base import BaseCommand, CommandError

from planner.models import ClusterPlan, Workload
from planner.services.plans import compare_choice_problems, plan_compare
from simcore.outputs import SI_UNITS, display


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
        width = max(22, *(len(s) for s in plans))
        currency = comparison["currency"] or "price"
        self.stdout.write(f"{'metric':38}" + "".join(f"{s:>{width + 2}}" for s in plans))
        for metric in comparison["metrics"]:
            money = metric["unit"] == "currency"
            unit = currency if money else metric["unit"]
            cells = []
            for value, ratio in zip(metric["values"], metric["ratio_to_first"]):
                text = display(value, unit if money or unit in SI_UNITS else "", money=money)
                text += "" if value is None or ratio is None or ratio == 1 else f" ({ratio:.2f}x)"
                cells.append(f"{text:>{width + 2}}")
            self.stdout.write(f"{metric['label'] + ' [' + unit + ']':38}" + "".join(cells))
        for slug, reasons in comparison["infeasible"].items():
            self.stdout.write(f"{slug} cannot run: {'; '.join(reasons)}")

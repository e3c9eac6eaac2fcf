import json

from django.core.management.base import BaseCommand, CommandError

import simcore
from planner.models import ClusterPlan, Workload
from planner.services.plans import PlanInfeasible, bom_csv, plan_bom, plan_evaluate
from simcore import outputs


class Command(BaseCommand):
    help = "Evaluate a cluster plan (optionally with a workload) and print the result."

    def add_arguments(self, parser):
        parser.add_argument("plan", help="plan slug")
        parser.add_argument("--workload", help="workload slug")
        parser.add_argument("--format", choices=["json", "csv", "table"], default="table",
                            help="json: the full result; csv: the bill of materials; table: headline figures")

    def handle(self, *args, plan, workload, format, **options):
        plan_row = ClusterPlan.objects.filter(slug=plan).first()
        if plan_row is None:
            raise CommandError(f"no plan '{plan}'")
        workload_row = None
        if workload:
            workload_row = Workload.objects.filter(slug=workload).first()
            if workload_row is None:
                raise CommandError(f"no workload '{workload}'")
        try:
            evaluation = plan_evaluate(plan=plan_row, workload=workload_row)
        except PlanInfeasible as error:
            raise CommandError("the plan cannot run: " + "; ".join(error.reasons)) from error
        except simcore.ScenarioError as error:
            raise CommandError(str(error)) from error
        if format == "json":
            self.stdout.write(json.dumps(evaluation, indent=2))
        elif format == "csv":
            self.stdout.write(bom_csv(plan_bom(plan=plan_row, result=evaluation["result"])), ending="")
        else:
            result = evaluation["result"]
            self.stdout.write(f"{plan_row.name} (engine {evaluation['engine_version']})")
            currency = result["cost"]["currency"]
            for output in outputs.selected("table"):
                value = output.read(result)
                if value is None:
                    continue
                money = output.unit == "currency"
                text = outputs.display(value, currency if money else output.unit, money=money)
                self.stdout.write(f"  {output.label:28} {text:>20}")
            for constraint in result["constraints"]:
                self.stdout.write(f"  note: {constraint['message']}")

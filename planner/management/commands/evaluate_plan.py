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
            self.write_table(plan_row.name, evaluation)

    def write_table(self, name: str, evaluation: dict):
        """The headline figures as the pages write them, each training band beside its figure, the
        announced parts and the constraints' notes."""
        result = evaluation["result"]
        self.stdout.write(f"{name} (engine {evaluation['engine_version']})")
        currency = result["cost"]["currency"]
        rows = [(output, output.read(result)) for output in outputs.selected("table")]
        rows = [(output, value) for output, value in rows if value is not None]
        width = max(len(output.label) for output, _ in rows)
        for output, value in rows:
            text = outputs.display_output(value, output.unit, currency)
            band = evaluation["bands"].get(output.path)
            if band is not None and band["group"] != "price book":
                low, high = (outputs.display_output(band[key], output.unit, currency)
                             for key in ("actual_low", "actual_high"))
                text += f"  (runs like it: {low} to {high}, {band['cases']} published)"
            self.stdout.write(f"  {output.label:{width}}  {text}")
        for part in evaluation["announced"]:
            self.stdout.write(f"  announced, not shipping: {part['part']} {part['name']} ({part['source']})")
        for constraint in result["constraints"]:
            self.stdout.write(f"  note: {constraint['message']}")

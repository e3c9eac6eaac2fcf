import json

from django.core.management.base import BaseCommand, CommandError

import simcore
from planner.models import ClusterPlan, Workload
from planner.services.plans import PlanInfeasible, bom_csv, plan_bom, plan_evaluate
from simcore.sweep import dig

TABLE_ROWS = [
    ("GPUs", "cluster.gpus", ""),
    ("switches", "fabric.switches", ""),
    ("total price", "cost.capex_total", "currency"),
    ("network price", "cost.network", "currency"),
    ("IT power", "power.it_total_w", "W"),
    ("TF32 GEMM per GPU", "compute.gemm_tf32_tflops", "TFLOPS"),
    ("FP16 GEMM per GPU", "compute.gemm_fp16_tflops", "TFLOPS"),
    ("HFReduce, whole cluster", "collectives.hfreduce.algbw_gbyte_s", "GB/s"),
    ("NCCL, whole cluster", "collectives.nccl.algbw_gbyte_s", "GB/s"),
    ("platform interruptions per day", "reliability.platform_interruptions_per_day", ""),
    ("fabric share of interruptions", "reliability.fabric_interruption_share", ""),
    ("step time", "training.step_time_s", "s"),
    ("MFU", "training.mfu", ""),
    ("time to train", "training.time_to_train_days", "days"),
    ("restart time", "reliability.restart_time_s", "s"),
    ("ETTR", "reliability.ettr", ""),
]


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
            for label, path, unit in TABLE_ROWS:
                value = dig(result, path, missing=None)
                if value is None:
                    continue
                unit = currency if unit == "currency" else unit
                self.stdout.write(f"  {label:28} {value:>14,.4g} {unit}")
            for constraint in result["constraints"]:
                self.stdout.write(f"  note: {constraint['message']}")

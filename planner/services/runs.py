"""Your runs: training runs measured on your own cluster, as cases of the validation record that are
yours alone.

A run is entered by hand (a plan, the workload it ran and the step time measured) or taken from a
profiler trace stored against a plan (the traced layers' compute time). Either way it is stored as a
case in the record's own form (``simcore/data/reference_cases.yaml``, its schema checks it): the
scenario document of the plan and workload as they were, on the family's own constants, so that its
error is the engine's, as a published run's is. A run joins the error bands of its owner's plans
(:func:`planner.services.engine.prediction_bands`), never anyone else's, and each band names the
runs that made it.
"""
import json
import math

import jsonschema
from django.db import transaction

import simcore
from planner.adapters import scenario_document
from planner.models import ClusterPlan, MeasuredRun, Measurement, Workload
from planner.services import engine
from planner.services.engine import OWN_PREFIX
from planner.services.errors import InputError, QuotaExceeded
from planner.services.plans import PlanInfeasible, plan_evaluate
from planner.services.quotas import lock_owner
from simcore import EngineParams, ScenarioError
from simcore.tools.megatron import MAX_STEP_MS, STEP_TIMERS, parse_megatron_log
from simcore.tools.references import SCHEMA_PATH, case_from, case_row, parallel_scheme
from simcore.tools.trace import COMPUTE

OWN_MODEL = "training: your runs"
# A user's runs are evaluated with every evaluation of their plans (memoized): a bound keeps that work small.
MAX_RUNS_PER_USER = 500
# Each run is held to the tolerance of the published step times it sits beside (the DGX Cloud recipes').
RUN_TOLERANCE = 0.10
CASE_VALIDATOR = jsonschema.Draft202012Validator({"$defs": json.loads(SCHEMA_PATH.read_text())["$defs"],
                                                   "$ref": "#/$defs/case"})


def _case(*, name: str, measured_s: float, source: str, prediction: dict, plan: ClusterPlan,
          workload: Workload) -> dict:
    """A run as a case of the record: its family, kind and parallel scheme are the plan's and workload's."""
    case = {"key": f"{OWN_PREFIX}new", "model": OWN_MODEL, "quantity": name, "unit": "s", "published": measured_s,
            "source": source, "rel_tolerance": RUN_TOLERANCE,
            "trains": {"family": plan.node_type.accelerator.family, "kind": engine.workload_kind(workload),
                       "parallel": parallel_scheme(workload.zero_stage)},
            "predict": prediction}
    problems = sorted(CASE_VALIDATOR.iter_errors(case), key=lambda error: error.json_path)
    if problems:
        raise InputError({"case": [f"{problems[0].json_path}: {problems[0].message}"]})
    return case


def _room_for_one_more(owner, locked: bool = False) -> None:
    """Refused (409) when the owner has their bound of runs: first before any work, then again, with
    ``locked``, on the owner's row locked in the transaction that inserts (:mod:`planner.services.quotas`)."""
    if locked:
        lock_owner(owner)
    if MeasuredRun.objects.filter(owner=owner).count() >= MAX_RUNS_PER_USER:
        raise QuotaExceeded("runs", f"at most {MAX_RUNS_PER_USER} runs a user: delete some first", 409)


# A step (or a trace's layers) measured: at most about 11.6 days, as a Megatron log's interval is read.
MAX_MEASURED_S = MAX_STEP_MS / 1e3


def _measured(value, field: str) -> float:
    if value is None or not math.isfinite(value) or not 0 < value <= MAX_MEASURED_S:
        raise InputError({field: [f"give the time measured, in seconds, a positive number of at most "
                                  f"{MAX_MEASURED_S:,.0f}"]})
    return float(value)


def run_create(*, owner, plan: ClusterPlan, workload: Workload, measured_s: float | None = None,
               megatron_log: str = "", name: str = "", source: str = "", measured_on=None) -> MeasuredRun:
    """A run entered by hand: the plan it ran as, its workload and the step time measured, given as a
    number or as the Megatron-LM training log that printed it (:mod:`simcore.tools.megatron`: the
    median interval's elapsed time per iteration, its timers kept in ``details``). A plan the engine
    cannot run with that workload is refused (400 naming the workload): it predicts nothing."""
    _room_for_one_more(owner)
    details = {}
    if megatron_log:
        try:
            log = parse_megatron_log(megatron_log)
        except ScenarioError as error:
            raise InputError({error.field: [error.reason]}) from None
        measured_s = log.step_time_s()
        details = {"megatron": {"iterations": log.iterations, "elapsed_ms": log.elapsed_ms,
                                "timers_ms": log.timer_means_ms()}}
        source = source or (f"Megatron-LM log: the median of {max(len(log.elapsed_ms) - 1, 1)} logged intervals' "
                            f"elapsed time per iteration (iterations {log.iterations[0]} to {log.iterations[-1]}, "
                            "the first interval left out)")
    if not source:
        raise InputError({"source": ["say where, when and how the run was measured"]})
    measured_s = _measured(measured_s, "measured_s")
    try:
        plan_evaluate(plan=plan, workload=workload, overrides={})
    except PlanInfeasible as error:
        raise InputError({"workload": error.reasons}) from None
    except ScenarioError as error:
        raise InputError({error.field: [error.reason]}) from None
    name = name or f"{workload.slug} on {plan.slug}"
    prediction = {"scenario": scenario_document(plan, workload, overrides={}), "output": "training.step_time_s"}
    case = _case(name=name, measured_s=measured_s, source=source, prediction=prediction, plan=plan, workload=workload)
    run = MeasuredRun(owner=owner, name=name, quantity=MeasuredRun.Quantity.STEP_TIME, measured_s=measured_s,
                      source=source, measured_on=measured_on, plan=plan, workload_slug=workload.slug, case=case,
                      details=details)
    stored_prediction(run)
    with transaction.atomic():
        _room_for_one_more(owner, locked=True)
        run.save()
    return run


def run_from_trace(*, owner, trace: Measurement, name: str = "", source: str = "") -> MeasuredRun:
    """A run from a stored trace of the owner's: the compute time of its traced layers (the mean over
    its ranks), predicted by the engine for the same layers on the trace's plan and workload."""
    if trace.kind != Measurement.Kind.TRACE or trace.owner_id != owner.pk:
        raise InputError({"trace": ["give a profiler trace of yours"]})
    _room_for_one_more(owner)
    facts = trace.provenance
    workload = Workload.objects.filter(slug=facts["workload"]).first()
    if trace.plan is None or workload is None:
        raise InputError({"trace": [f"the trace's plan or its workload '{facts['workload']}' is gone"]})
    measured_s = _measured(sum(row["traced_us"] for row in trace.rows if row["part"] in COMPUTE) / 1e6, "trace")
    name = name or f"{trace.name}: {facts['moe_layers']} MoE and {facts['dense_layers']} dense layers traced"
    source = source or (f"profiler trace {trace.filename} (sha256 {facts['sha256'][:12]}), uploaded "
                        f"{trace.created_at:%Y-%m-%d}" + (f": {trace.note}" if trace.note else ""))
    prediction = {"measure": "traced_compute", "scenario": scenario_document(trace.plan, workload, overrides={}),
                  "moe_layers": facts["moe_layers"], "dense_layers": facts["dense_layers"]}
    case = _case(name=name, measured_s=measured_s, source=source, prediction=prediction, plan=trace.plan,
                 workload=workload)
    run = MeasuredRun(owner=owner, name=name, quantity=MeasuredRun.Quantity.TRACED_COMPUTE, measured_s=measured_s,
                      source=source, plan=trace.plan, workload_slug=workload.slug, trace=trace, case=case)
    stored_prediction(run)
    with transaction.atomic():
        _room_for_one_more(owner, locked=True)
        run.save()
    return run


def run_update(*, run: MeasuredRun, changes: dict) -> MeasuredRun:
    """Rename a run or say again where it was measured (its case's quantity and source follow); what
    ran and what was measured stay: enter the run again to change them."""
    for field, value in changes.items():
        setattr(run, field, value)
    run.case = {**run.case, "quantity": run.name, "source": run.source}
    run.save(update_fields=[*changes, "case"])
    return run


def run_group(row: dict) -> str:
    """The band group a run's validation row is shown under: step_time:<family>:<kind>."""
    return "step_time:{}:{}".format(*row["trains"])


def stored_prediction(run: MeasuredRun) -> dict:
    """The run's prediction as stored with it: the engine's figure for its case and, for a step time,
    the step's parts (seconds). Computed when the run is made and again only when the engine version
    changes (then stored), so lists and bands read it rather than evaluate (issue 69: 505 runs listed in
    11.5 s once a 10-minute memo lapsed)."""
    if run.prediction.get("engine_version") == simcore.ENGINE_VERSION:
        return run.prediction
    case = case_from({**run.case, "key": f"{OWN_PREFIX}{run.pk or 'new'}"})
    prediction = {"engine_version": simcore.ENGINE_VERSION, "predicted": case.predict(EngineParams())}
    if run.details.get("megatron", {}).get("timers_ms"):
        parts = engine.evaluate(run.case["predict"]["scenario"])["training"]["step_parts_s"]
        prediction["step_parts_s"] = {name: float(value) for name, value in parts.items()}
    run.prediction = prediction
    if run.pk is not None:
        MeasuredRun.objects.filter(pk=run.pk).update(prediction=prediction)
    return prediction


def run_row(run: MeasuredRun) -> dict:
    """A run's validation row (as a published case's, :func:`simcore.tools.references.case_row`), from its
    stored prediction (:func:`stored_prediction`)."""
    case = case_from({**run.case, "key": f"{OWN_PREFIX}{run.pk}"})
    return {**case_row(case, stored_prediction(run)["predicted"]), "run": run.pk, "name": run.name}


# A Megatron timer -> the engine's step parts it sits beside (seconds, summed).
TIMER_PARTS = {"forward-backward": ("forward", "backward", "recomputation", "pipeline_bubble", "comm_sms",
                                    "host_launch", "stragglers", "tp_traffic", "cp_traffic", "pp_traffic",
                                    "ep_all_to_all", "activation_offload", "host_preprocessing"),
               "forward-compute": ("forward",), "backward-compute": ("backward", "recomputation"),
               "all-grads-sync": ("dp_exposed",), "optimizer": ("optimizer",)}


def megatron_timers(run: MeasuredRun) -> list[dict]:
    """A run from a Megatron-LM log: each per-iteration timer it printed (the median after the first
    report, the slowest rank's) beside the engine's step parts that do the same work, for its scenario
    on the family's constants (none for a timer without such parts, as the parameter gather)."""
    timers = run.details.get("megatron", {}).get("timers_ms", {})
    if not timers:
        return []
    parts = stored_prediction(run)["step_parts_s"]
    return [{"timer": name, "measured_ms": value, "meaning": STEP_TIMERS[name],
             "engine_ms": sum(parts[p] for p in TIMER_PARTS[name]) * 1e3 if name in TIMER_PARTS else None}
            for name, value in timers.items()]


def own_rows(user) -> list[dict]:
    """The validation rows of ``user``'s runs (none for anyone signed out)."""
    return [run_row(run) for run in MeasuredRun.objects.visible_to(user)]


def _owns(user, plan: ClusterPlan) -> bool:
    """Whether ``user`` owns ``plan``: only then do their runs go with it (another's runs are private,
    and yours say nothing of their plans)."""
    return user.is_authenticated and plan.owner_id == user.pk


def plan_rows(plan: ClusterPlan, user) -> list[dict]:
    """The runs that join a plan's bands for ``user``: their own, on a plan of their own; none on
    anyone else's plan."""
    return own_rows(user) if _owns(user, plan) else []


def _listed(found) -> list[dict]:
    rows = []
    for run in found.select_related("plan"):
        row = run_row(run)
        family, kind = row["trains"]
        rows.append({"run": run, "row": row, "group": run_group(row),
                     "band": f"{engine.KINDS[kind]} training on {family} GPUs", "timers": megatron_timers(run)})
    return rows


def user_runs(user) -> list[dict]:
    """Every run of the user's, each with its validation row and the band it joins, by group key and in
    words (a page's table)."""
    return _listed(MeasuredRun.objects.visible_to(user))


def plan_runs(plan: ClusterPlan, user) -> list[dict]:
    """The user's runs entered on this plan, on a plan of their own (none on anyone else's)."""
    return _listed(MeasuredRun.objects.visible_to(user).filter(plan=plan)) if _owns(user, plan) else []

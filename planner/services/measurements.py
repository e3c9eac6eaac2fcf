"""Measurement services: upload (parse, compare, fit, store in one step), compare, mark as override.

The engine reads the files and predicts (:mod:`simcore.tools.measurements`); this module stores what it
read with its provenance. A file that does not read is refused with a field error naming the line,
and nothing is stored.
"""
import hashlib
import tempfile

import numpy as np
from django.conf import settings
from django.db import models, transaction

from planner.adapters import calibration, node_document, scenario_document
from planner.models import CarriedCalibration, ClusterPlan, ComputeNodeType, Measurement, Workload
from planner.services.engine import memoized
from planner.services.errors import InputError, QuotaExceeded
from planner.services.quotas import lock_owner
from simcore import ScenarioError
from simcore.tools import measurements as engine
from simcore.tools import trace as trace_engine

MAX_FILE_BYTES = 2 * 2**20
# Each user's measurements: a bound on their count, and so on the bytes they store (each file at most
# MAX_FILE_BYTES), taken under the owner's row lock (planner.services.quotas).
MAX_MEASUREMENTS_PER_USER = 500


def room_for_one_more(owner, locked: bool = False) -> None:
    """Refuse (409) a measurement past the owner's MAX_MEASUREMENTS_PER_USER; ``locked``: on the owner's
    row locked, so that two uploads at once cannot both take the last place (inside a transaction)."""
    if locked:
        lock_owner(owner)
    if Measurement.objects.filter(owner=owner).count() >= MAX_MEASUREMENTS_PER_USER:
        raise QuotaExceeded("measurements", f"at most {MAX_MEASUREMENTS_PER_USER} measurements a user: delete some "
                                            "first", 409)


def _decode(content: bytes) -> str:
    if len(content) > MAX_FILE_BYTES:
        raise InputError({"file": [f"{len(content):,} bytes; at most {MAX_FILE_BYTES:,} per upload"]})
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError({"file": [f"is not UTF-8 text (byte {error.start})"]}) from None


def _read(kind: str, text: str, node: dict, collective: str):
    """(parsed rows, what the file says about the run, the comparison) for one file."""
    if kind == Measurement.Kind.GEMM:
        table = engine.parse_gemm_csv(text)
        return table.rows(), {}, engine.compare_gemm(node, table)
    run = engine.parse_nccl_tests(text)
    collective = collective or run.collective
    if not collective:
        raise InputError({"collective": ["the file does not name its collective: give one of "
                                         + ", ".join(engine.COLLECTIVES)]})
    facts = {"ranks": run.ranks, "hosts": list(run.hosts), "devices": list(run.devices), "header": run.header}
    return run.rows(), facts, engine.compare_nccl(node, run, collective)


def trace_upload_check(content: bytes, plan: ClusterPlan | None, traced: dict) -> None:
    """Refuse (400) a trace upload that could not be read whatever its file holds: no plan or workload
    to compare it with, or a file over MAX_FILE_BYTES."""
    if plan is None:
        raise InputError({"plan": ["a trace is compared with a plan and a workload: give the plan"]})
    if traced.get("workload") is None:
        raise InputError({"workload": ["give the workload the trace ran (its layers are predicted beside it)"]})
    if len(content) > MAX_FILE_BYTES:
        raise InputError({"file": [f"{len(content):,} bytes; at most {MAX_FILE_BYTES:,} per upload (gzip the "
                                   "trace: JSON packs about 10 to 1)"]})


def _read_trace(content: bytes, plan: ClusterPlan | None, traced: dict):
    """(the parts as stored, what the trace says, the comparison) for a profiler trace uploaded
    against ``plan`` with the workload and layers it traced and, optionally, the profiler steps to
    keep (``traced``: first and last); at most TRACE_MAX_JSON_BYTES of JSON once gunzipped."""
    trace_upload_check(content, plan, traced)
    with tempfile.NamedTemporaryFile(suffix=".json") as file:
        file.write(content)
        file.flush()
        rows, facts = trace_engine.trace_rows(file.name, steps=traced.get("steps"),
                                              max_bytes=settings.TRACE_MAX_JSON_BYTES)
    facts.update(workload=traced["workload"].slug, moe_layers=traced["moe_layers"],
                 dense_layers=traced["dense_layers"])
    return rows, facts, _compare_trace(plan, traced["workload"], rows, facts)


def trace_reads_later(content: bytes) -> bool:
    """Whether a trace is read by a worker (:mod:`planner.services.trace_reads`) rather than in its
    request: more than TRACE_INLINE_MAX_BYTES of JSON once gunzipped (a few megabytes of gzip can
    hold hundreds of megabytes of events)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as file:
        file.write(content)
        file.flush()
        return trace_engine.json_bytes_over(file.name, settings.TRACE_INLINE_MAX_BYTES)


def _compare_trace(plan: ClusterPlan, workload: Workload, rows: list[dict], facts: dict) -> dict:
    """The trace beside the engine's prediction for the plan and workload, on the family's own shares
    (never on an override the trace itself made); memoized as evaluations are, since a page shows it
    on every visit and it evaluates the whole step and calibrates up to three times."""
    document = scenario_document(plan, workload, overrides={})
    layers = facts["moe_layers"], facts["dense_layers"]
    return memoized("trace-comparison", {"scenario": document, "rows": rows, "layers": layers},
                    lambda: trace_engine.compare_trace(document, rows, *layers))


def measurement_upload(*, owner, kind: str, content: bytes, filename: str, name: str = "",
                       plan: ClusterPlan | None = None, node_type: ComputeNodeType | None = None,
                       collective: str = "", note: str = "", use_as_override: bool = False,
                       traced: dict | None = None) -> Measurement:
    """Read, compare and store one measurement file against a plan or a node type (one of them); a
    trace against a plan, with ``traced`` its workload and the MoE and dense layers it holds."""
    if kind not in Measurement.Kind.values:
        raise InputError({"kind": [f"must be one of {', '.join(Measurement.Kind.values)}"]})
    if (plan is None) == (node_type is None):
        raise InputError({"plan": ["give the plan or the node type the measurement is of, one of them"]})
    room_for_one_more(owner)
    node_type = node_type or plan.node_type
    try:
        if kind == Measurement.Kind.TRACE:
            rows, facts, comparison = _read_trace(content, plan, traced or {})
        else:
            rows, facts, comparison = _read(kind, _decode(content), node_document(node_type), collective)
    except ScenarioError as error:
        raise InputError({error.field: [error.reason]}) from None
    if use_as_override and not comparison["fitted"]:
        raise InputError({"use_as_override": [_no_fit_reason(comparison)]})
    facts["sha256"] = hashlib.sha256(content).hexdigest()
    facts["bytes"] = len(content)
    with transaction.atomic():
        room_for_one_more(owner, locked=True)
        return Measurement.objects.create(
            owner=owner, name=name or filename, kind=kind, node_type=node_type, plan=plan,
            collective=comparison.get("collective", ""), filename=filename, note=note, provenance=facts, rows=rows,
            fitted=comparison["fitted"], use_as_override=use_as_override)


def _no_fit_reason(comparison: dict) -> str:
    if comparison["kind"] == "trace":
        return "the trace has no GEMM, cast or other compute time to calibrate against"
    if comparison["kind"] == "gemm":
        return "no compute-bound 16-bit or FP8 rows: nothing to fit (TF32 rows are compared only)"
    return f"this run crossed the {comparison['link']} path, not the scale-up link: nothing to fit"


def measurement_compare(measurement: Measurement) -> dict:
    """Measured against predicted for a stored measurement, on its node type as the catalogue has it now."""
    if measurement.kind == Measurement.Kind.TRACE:
        workload = Workload.objects.filter(slug=measurement.provenance["workload"]).first()
        if workload is None or measurement.plan is None:
            raise ScenarioError("workload", f"the traced workload '{measurement.provenance['workload']}' or its plan "
                                            "is gone: upload the trace again")
        return _compare_trace(measurement.plan, workload, measurement.rows, measurement.provenance)
    node = node_document(measurement.node_type)
    if measurement.kind == Measurement.Kind.GEMM:
        rows = measurement.rows
        # As numbers whatever the database hands back (PostgreSQL's jsonb returns 1e308 as an integer).
        table = engine.GemmTable(*(np.array([row[c] for row in rows], dtype=str if c == "dtype" else float)
                                   for c in engine.GEMM_COLUMNS))
        return engine.compare_gemm(node, table)
    facts = measurement.provenance
    columns = {c: np.array([row[c] for row in measurement.rows], float)
               for c in ("size_bytes", "time_us", "algbw_gbyte_s", "busbw_gbyte_s")}
    run = engine.NcclRun(measurement.collective, facts["ranks"], tuple(facts["hosts"]), tuple(facts["devices"]),
                         header=facts.get("header", ""), **columns)
    return engine.compare_nccl(node, run, measurement.collective)


def measurement_update(*, measurement: Measurement, changes: dict) -> Measurement:
    """Rename, annotate, or mark (or unmark) as an override; a measurement with nothing fitted cannot
    be an override."""
    if changes.get("use_as_override") and not measurement.fitted:
        raise InputError({"use_as_override": [_no_fit_reason(measurement_compare(measurement))]})
    for field, value in changes.items():
        setattr(measurement, field, value)
    measurement.save(update_fields=list(changes))
    return measurement


def measurement_carry(*, measurement: Measurement, plan: ClusterPlan) -> CarriedCalibration:
    """Carry a trace's calibrated shares to another build of the same accelerator family (the
    owner's choice): they replace the family's constants in that plan's evaluations and sweeps,
    marked as carried. A GEMM or nccl-tests fit stays with its node type; a trace that calibrated
    nothing, another family's build, or the trace's own plan (mark it as an override there) is refused
    naming the field."""
    if measurement.kind != Measurement.Kind.TRACE or not measurement.fitted:
        raise InputError({"measurement": ["only a profiler trace's calibration is carried to another build"]})
    family, target = measurement.node_type.accelerator.family, plan.node_type.accelerator.family
    if family != target:
        raise InputError({"plan": [f"a trace of {family} GPUs calibrates {family} builds; '{plan.slug}' is {target}"]})
    if measurement.plan_id == plan.pk:
        raise InputError({"plan": ["the trace was uploaded against this plan: use it as an override instead"]})
    carried, created = CarriedCalibration.objects.get_or_create(plan=plan, measurement=measurement)
    if not created:
        raise InputError({"plan": [f"already carried to '{plan.slug}'"]})
    return carried


def measurement_uncarry(*, measurement: Measurement, plan: ClusterPlan) -> None:
    """Stop carrying a trace to a plan: the plan's evaluations are on the family's constants again."""
    deleted, _ = CarriedCalibration.objects.filter(plan=plan, measurement=measurement).delete()
    if not deleted:
        raise InputError({"plan": [f"this trace is not carried to '{plan.slug}'"]})


def plan_carried(*, plan: ClusterPlan, user) -> list[CarriedCalibration]:
    """The traces carried to a plan, as a page lists them (the measurements the user may see)."""
    visible = Measurement.objects.visible_to(user)
    return list(CarriedCalibration.objects.filter(plan=plan, measurement__in=visible).select_related(
        "measurement__plan", "measurement__node_type"))


MEASURED_NODE = ("node_type__accelerator", "node_type__cpu", "node_type__compute_nic", "node_type__storage_nic",
                 "owner", "plan")


def _with_comparisons(found, applied=frozenset()) -> list[dict]:
    """Each measurement with its comparison on the node type as the catalogue has it now (or why
    there is none: the node type changed so that the engine refuses it)."""
    rows = []
    for measurement in found.select_related(*MEASURED_NODE):
        try:
            comparison, problem = measurement_compare(measurement), ""
        except ScenarioError as error:
            comparison, problem = None, f"{error.field}: {error.reason}"
        rows.append({"measurement": measurement, "comparison": comparison, "problem": problem,
                     "applied": measurement.pk in applied, "chart": _chart(comparison),
                     "carry_targets": _carry_targets(measurement)})
    return rows


def _carry_targets(measurement: Measurement) -> list[ClusterPlan]:
    """The owner's other builds of the trace's family it may be carried to (none for other kinds)."""
    if measurement.kind != Measurement.Kind.TRACE or not measurement.fitted:
        return []
    return list(ClusterPlan.objects.filter(
        owner_id=measurement.owner_id, node_type__accelerator__family=measurement.node_type.accelerator.family
    ).exclude(pk=measurement.plan_id).exclude(carried__measurement=measurement).order_by("slug"))


def _chart(comparison: dict | None) -> dict | None:
    """An nccl-tests comparison as the page charts it: bus bandwidth against message size, measured
    and predicted (a GEMM comparison stays a table: its shapes do not order along one axis)."""
    if comparison is None or comparison["kind"] != "nccl-tests":
        return None
    rows = comparison["rows"]
    return {"x": [row["size_bytes"] for row in rows], "measured": [row["busbw_gbyte_s"] for row in rows],
            "predicted": [row["predicted_busbw_gbyte_s"] for row in rows],
            "title": f"{comparison['collective']} on {comparison['ranks']} ranks: bus bandwidth against size"}


def plan_measurements(*, plan: ClusterPlan, user) -> list[dict]:
    """A plan page's measurements: those uploaded against the plan and its owner's of its node type,
    each with its comparison and whether it overrides the plan's constants now."""
    applied = {fit["measurement"] for fit in calibration(plan).values()}
    found = Measurement.objects.visible_to(user).filter(
        models.Q(plan=plan) | models.Q(plan__isnull=True, owner_id=plan.owner_id, node_type_id=plan.node_type_id))
    return _with_comparisons(found, applied)


def node_type_measurements(*, node_type: ComputeNodeType, user) -> list[dict]:
    """A node type's page: the measurements of it the user may see, with their comparisons."""
    return _with_comparisons(Measurement.objects.visible_to(user).filter(node_type=node_type))


def user_measurements(*, user) -> list[dict]:
    """Every measurement the user uploaded, with its comparison (the validation page)."""
    if not user.is_authenticated:
        return []
    return _with_comparisons(Measurement.objects.filter(owner=user))


def overrides_seen_by(overrides: dict[str, dict], user) -> dict[str, dict]:
    """An evaluation's ``overrides`` as ``user`` may see them: a measurement the user cannot read
    (another user's, uploaded against their node type alone, or carried from their private plan) is
    named only by its kind (and a carried one by its node type)."""
    ids = [fit["measurement"] for fit in overrides.values()]
    visible = set(Measurement.objects.visible_to(user).filter(pk__in=ids).values_list("pk", flat=True))
    return {constant: fit if fit["measurement"] in visible else {
        **fit, "measurement": None, "name": None, "carried": fit["carried"] and {**fit["carried"], "plan": None}}
            for constant, fit in overrides.items()}

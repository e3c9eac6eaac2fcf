"""Typed descriptions of the API's response bodies, for the OpenAPI schema: each operation's answer
with its fields, the engine's result through its JSON Schema (from the output registry) and the
scenario document's through its field spec. The views build the bodies; these say what is in them."""
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from planner.choices import RentTerm
from planner.serializers.base import NumberField
from simcore.outputs import result_json_schema

RESULT_SCHEMA = result_json_schema()


def numbers(help_text="", required=True):
    return serializers.ListField(child=NumberField(allow_null=True), help_text=help_text, required=required)


@extend_schema_field(RESULT_SCHEMA)
class EngineResultField(serializers.JSONField):
    """The engine's result document (docs/scenario-format.md)."""


class MatchingPartSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    fits = serializers.BooleanField()
    reason = serializers.CharField(help_text="why it cannot be cabled to the node type (and switch); empty if it fits")


class MatchingPartsSerializer(serializers.Serializer):
    switch = MatchingPartSerializer(many=True)
    endpoint_cable = MatchingPartSerializer(many=True, help_text="judged against the given switch, or the first "
                                                                 "that fits")
    transceiver = MatchingPartSerializer(many=True)
    fiber = MatchingPartSerializer(many=True)


class TokenIssuedSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="The new key of your default token, shown this once.")


class CarriedFromSerializer(serializers.Serializer):
    plan = serializers.CharField(allow_null=True, help_text="the plan the trace was uploaded against (null: not "
                                                            "yours to read)")
    node_type = serializers.CharField(help_text="the node type it was traced on")
    low = NumberField(help_text="the share at every traced part's slowest rank or step")
    high = NumberField(help_text="at every part's fastest rank or step")


class CarriedShareSerializer(serializers.Serializer):
    value = NumberField()
    low = NumberField()
    high = NumberField()


class CarriedFiguresSerializer(serializers.Serializer):
    constants = serializers.DictField(child=CarriedShareSerializer(), help_text="each carried constant")
    family = serializers.DictField(child=NumberField(allow_null=True), allow_null=True,
                                   help_text="with a workload: training.step_time_s and training.mfu on the family's "
                                             "own constants, beside the headline's on the carried ones")
    spread = serializers.DictField(child=serializers.ListField(child=NumberField()), allow_null=True,
                                   help_text="with a workload: each figure's [low, high] with every carried share at "
                                             "its low and at its high (the trace's spread over its ranks and steps)")


class OverrideSerializer(serializers.Serializer):
    value = NumberField(help_text="The measured value used instead of the family's.")
    measurement = serializers.IntegerField(allow_null=True, help_text="The measurement's id (/api/measurements/{id}/); "
                                                                       "null when it is not yours to read")
    name = serializers.CharField(allow_null=True)
    kind = serializers.CharField(help_text="nccl-tests, gemm or trace")
    carried = CarriedFromSerializer(allow_null=True, help_text="a trace carried here from another build of the "
                                                               "family (POST /api/measurements/{id}/carry/); null: "
                                                               "a measurement of this build's own")


class AllreduceCurveSerializer(serializers.Serializer):
    gpus = serializers.JSONField(help_text="GPU counts (against GPUs), or the cluster's GPUs (against size)")
    message_bytes = serializers.JSONField(help_text="message sizes (against size), or the one size (against GPUs)")
    hfreduce = numbers("HFReduce algorithm bandwidth, GB/s")
    nccl = numbers("NCCL algorithm bandwidth, GB/s")
    hfreduce_nvlink = numbers("HFReduce with NVLink pairs, GB/s (only for nodes with bridged pairs)", required=False)
    nccl_algorithm = serializers.ListField(child=serializers.ChoiceField(["ring", "tree"]),
                                           help_text="NCCL's algorithm at each point")


class ScalingCurveSerializer(serializers.Serializer):
    gpus = numbers()
    strong_step_time_s = numbers("step time with the global batch fixed, s")
    strong_efficiency = numbers("T(n0) / T(n)")
    weak_global_batch = numbers()
    weak_step_time_s = numbers("step time with the batch per GPU fixed, s")
    weak_efficiency = numbers("n0 T(n0) / (n T(n))")


class EttrCurveSerializer(serializers.Serializer):
    """What both ETTR curves carry: the ratio along the curve and the plan's own point."""

    ettr = numbers()
    plan_ettr = NumberField()


class EttrIntervalCurveSerializer(EttrCurveSerializer):
    interval_s = numbers()
    optimal_interval_s = NumberField()
    ettr_at_optimum = NumberField()
    plan_interval_s = NumberField()


class EttrRestartCurveSerializer(EttrCurveSerializer):
    restart_s = numbers()
    interval_s = NumberField()
    plan_restart_s = NumberField()


class CurvesSerializer(serializers.Serializer):
    allreduce_vs_gpus = AllreduceCurveSerializer()
    allreduce_vs_size = AllreduceCurveSerializer()
    scaling = ScalingCurveSerializer(required=False, help_text="with a workload")
    ettr_vs_interval = EttrIntervalCurveSerializer(required=False, help_text="with a workload")
    ettr_vs_restart = EttrRestartCurveSerializer(required=False, help_text="with a workload")


class TrustSerializer(serializers.Serializer):
    family = serializers.CharField()
    kind = serializers.ChoiceField(choices=["dense", "moe", "cnn"])
    cases = serializers.IntegerField(help_text="published runs of this family and kind in the validation set "
                                               "(the /validation/ page)")
    passing = serializers.IntegerField(help_text="of them, predicted within their tolerance")
    median_abs_error = NumberField(allow_null=True)
    max_abs_error = NumberField(allow_null=True)
    models = serializers.ListField(child=serializers.CharField(), help_text="the validation groups they belong to")
    own_cases = serializers.IntegerField(help_text="your own runs of this family and kind (on your own plans)")
    own_passing = serializers.IntegerField(help_text="of them, predicted within their tolerance")
    trusted = serializers.BooleanField(help_text="every such run, published and yours, is predicted within its "
                                                 "tolerance")
    message = serializers.CharField()


class BandSerializer(serializers.Serializer):
    value = NumberField(help_text="the prediction")
    low_error = NumberField(help_text="the lowest signed error (predicted / published - 1) of the "
                                                 "band's published cases")
    high_error = NumberField(help_text="the highest")
    actual_low = NumberField(help_text="value / (1 + high_error): where runs like it came in, at least")
    actual_high = NumberField(help_text="value / (1 + low_error): at most")
    cases = serializers.IntegerField(allow_null=True, help_text="cases the band is made of (none that set a "
                                                               "constant); null for the price book's band")
    own_cases = serializers.IntegerField(help_text="of them, your own runs (/api/runs/): only on a plan of yours")
    keys = serializers.ListField(child=serializers.CharField(), help_text="every case's key: a published case's "
                                 "as /validation/ lists it, your run's own-<id>")
    group = serializers.CharField(help_text="step_time:<family>:<kind>:<scheme> (scheme 3d or zero3), "
                                            "step_time:<family>:<kind>, step_time (every training run) or power: "
                                            "the /validation/ page lists each group's cases; 'price book': the "
                                            "total price's band from the book's estimates' lows and highs")
    validated = serializers.BooleanField(help_text="false: no case of this family and kind is validated, so "
                                                   "the band is that of every training run")
    basis = serializers.CharField()
    headline_inside = serializers.BooleanField(
        help_text="false: every published case of the group missed one way, so the prediction itself lies outside "
                  "where runs like it came in (actual_low to actual_high); pages flag such a headline")
    message = serializers.CharField()


class AnnouncedPartSerializer(serializers.Serializer):
    part = serializers.CharField(help_text="its role in the plan: compute node, accelerator, CPU, NIC or switch")
    slug = serializers.CharField()
    name = serializers.CharField()
    source = serializers.CharField(help_text="the announcements its figures come from, with their dates")


@extend_schema_field(BandSerializer)  # with allow_null, the schema says "or null"
class NullableBandField(serializers.JSONField):
    """A plan's band for a compared metric (:class:`BandSerializer`), or null where it has none."""


class HostSerializer(serializers.Serializer):
    cpu = serializers.CharField(help_text="the node's CPU")
    op_us = NumberField(help_text="host microseconds per eager kernel launch (its CPU's measurement, else an x86 "
                                  "server's 7.66)")
    module_us = NumberField(help_text="host microseconds per Transformer Engine module forward (likewise; 13.5)")
    measured = serializers.BooleanField(help_text="the CPU's own measurement, not the x86 server's")


class EvaluationSerializer(serializers.Serializer):
    plan = serializers.CharField()
    workload = serializers.CharField(allow_null=True)
    engine_version = serializers.CharField()
    overrides = serializers.DictField(child=OverrideSerializer(),
                                      help_text="engine constant -> the measurement that replaced it")
    result = EngineResultField()
    curves = CurvesSerializer()
    host = HostSerializer(help_text="what the node's host takes to launch kernels: the step's host part's basis")
    trust = TrustSerializer(allow_null=True, help_text="with a workload: the validation record of its kind of "
                                                       "training run on the plan's GPU family")
    carried = CarriedFiguresSerializer(allow_null=True, help_text="a trace's calibration carried to this plan: "
                                                                  "its figures beside the family's, and their band")
    announced = AnnouncedPartSerializer(many=True, help_text="the plan's parts known only from a vendor's "
                                                              "announcement (confidence 'announced'): their figures "
                                                              "are not a shipping part's")
    bands = serializers.DictField(child=BandSerializer(), help_text="output path (training.step_time_s, "
                                                                    "training.mfu, power.facility_w, cost.capex_total)"
                                                                    " -> its error band from the validation record")


class BomLineSerializer(serializers.Serializer):
    part = serializers.CharField()
    part_kind = serializers.CharField()
    slug = serializers.CharField()
    quantity = serializers.IntegerField()
    unit_price = NumberField(allow_null=True)
    extended_price = NumberField(allow_null=True)
    source = serializers.CharField(help_text="the price's basis, or why it has none")
    price_date = serializers.CharField(help_text="when the price was stated (ISO date; the book's where the item "
                                                 "has none); empty for an unpriced line")
    source_url = serializers.CharField(help_text="where the price was stated; empty if not given")
    confidence = serializers.CharField(help_text="the price's confidence (estimate: low and high below); empty for "
                                                 "an unpriced line")
    extended_low = NumberField(allow_null=True, help_text="quantity x the estimate's low (a quote's "
                                                                     "price); null when unpriced")
    extended_high = NumberField(allow_null=True, help_text="quantity x the estimate's high")


class RentalSerializer(serializers.Serializer):
    term = serializers.ChoiceField(choices=RentTerm.choices, help_text="the rental term")
    term_label = serializers.CharField()
    unit_price = NumberField(help_text="renting one of the plan's GPUs for an hour on this term")
    provider = serializers.CharField(help_text="who rents at this price (an estimate: what it is derived from)")
    estimate = serializers.BooleanField(help_text="the price is an estimate (its basis says how it is derived)")
    basis = serializers.CharField()
    price_date = serializers.CharField()
    source_url = serializers.CharField()


class BomSerializer(serializers.Serializer):
    plan = serializers.CharField()
    price_book = serializers.CharField()
    price_book_owner = serializers.CharField(allow_null=True, help_text="the owner of a user's own book; null: shared")
    price_date = serializers.CharField(help_text="the book's date (ISO)")
    stale = serializers.CharField(allow_null=True, help_text="why the book's prices may no longer hold (over a year "
                                                            "old), else null")
    currency = serializers.CharField()
    lines = BomLineSerializer(many=True)
    total = NumberField(allow_null=True, help_text="null when a counted part has no price (see unpriced)")
    total_low = NumberField(allow_null=True, help_text="the lines' lows added up: the total's band")
    total_high = NumberField(allow_null=True, help_text="the lines' highs added up")
    estimated_share = NumberField(allow_null=True, help_text="the share of the total in estimated lines")
    unpriced = serializers.ListField(child=serializers.CharField(), help_text="parts with no price")
    rentals = RentalSerializer(many=True, help_text="the book's GPU-hour rental prices for the plan's GPU, one a "
                                                    "term, to set owning against")
    bands = serializers.DictField(child=BandSerializer(), help_text="cost.capex_total (the total's band from the "
                                                                    "book's lows and highs) and power.facility_w "
                                                                    "(its error band from the validation record)")


class ComparedMetricSerializer(serializers.Serializer):
    key = serializers.CharField()
    path = serializers.CharField(allow_null=True)
    label = serializers.CharField()
    unit = serializers.CharField()
    better = serializers.CharField(help_text="lower, higher or empty")
    workload = serializers.BooleanField()
    chart = serializers.BooleanField()
    values = numbers("one per plan, in order")
    ratio_to_first = numbers()
    delta_to_first = numbers()
    bands = serializers.ListField(child=NullableBandField(allow_null=True),
                                  help_text="one per plan, in order: its error band, where this metric has one")


class ComparedBasisSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    values = serializers.ListField(child=serializers.CharField(allow_null=True), help_text="one per plan, in order")


class ComparisonSerializer(serializers.Serializer):
    plans = serializers.ListField(child=serializers.CharField())
    workload = serializers.CharField(allow_null=True)
    engine_version = serializers.CharField()
    currency = serializers.CharField(allow_null=True, help_text="null when the plans' price books differ")
    metrics = ComparedMetricSerializer(many=True)
    placements = serializers.DictField(child=serializers.ListField(child=serializers.CharField(allow_null=True)),
                                       help_text="tp, cp, ep, pp -> where each plan runs that traffic")
    bases = ComparedBasisSerializer(many=True, help_text="where each plan's PUE and maximum node power come from")
    announced = serializers.DictField(child=AnnouncedPartSerializer(many=True),
                                      help_text="plan -> its parts known only from a vendor's announcement")
    infeasible = serializers.DictField(child=serializers.ListField(child=serializers.CharField()),
                                       help_text="plan -> why it could not be evaluated")
    unpriced = serializers.DictField(child=serializers.ListField(child=serializers.CharField()),
                                     help_text="plan -> the counted parts its price book does not price")
    cost_comparable = serializers.BooleanField(help_text="every bill complete, in one currency")


class FailureCategorySerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    unit = serializers.CharField(help_text="what fails: GPU, node, NIC, link or switch")
    rate_per_unit_hour = NumberField()
    per_1000_unit_days = NumberField()
    cause = serializers.CharField()
    detection = serializers.CharField()
    interrupts_job = serializers.BooleanField()
    action = serializers.CharField()
    repair_h = NumberField()
    source = serializers.CharField()


class FailureProfileSerializer(serializers.Serializer):
    key = serializers.CharField()
    categories = FailureCategorySerializer(many=True)


class RestartProfileSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    crash_detection_s = NumberField()
    collective_timeout_s = NumberField()
    reschedule_s = NumberField()
    init_base_s = NumberField()
    init_s_per_rank = NumberField()
    warmup_s = NumberField()
    source = serializers.CharField()
    confidence = serializers.CharField()


class ReliabilityProfilesSerializer(serializers.Serializer):
    failure_profiles = FailureProfileSerializer(many=True)
    restart_profiles = RestartProfileSerializer(many=True)
    repair_basis = serializers.CharField()


class SweepRowSerializer(serializers.Serializer):
    point = serializers.IntegerField(help_text="the point's index in the grid")
    axes = serializers.DictField(child=serializers.JSONField(), help_text="axis path -> this point's value")
    valid = serializers.BooleanField()
    invalid_reason = serializers.CharField()
    outputs = serializers.DictField(child=serializers.JSONField(), help_text="metric path -> value")


class SweepResultsSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="points that pass the filters")
    next = serializers.URLField(allow_null=True, help_text="the next page, or null on the last")
    previous = serializers.URLField(allow_null=True, help_text="the page before, or null on the first")
    stored_points = serializers.IntegerField()
    results = SweepRowSerializer(many=True)


class SweepSampleRowSerializer(SweepRowSerializer):
    rejected_by = serializers.ListField(child=serializers.CharField(),
                                        help_text="the goal's constraints this valid point fails (empty: none)")


class SweepSampleSerializer(serializers.Serializer):
    total_points = serializers.IntegerField()
    sampled = serializers.IntegerField()
    always = serializers.ListField(child=serializers.IntegerField(),
                                   help_text="the optimum's and the Pareto fronts' points, always included")
    results = SweepSampleRowSerializer(many=True)

"""Sweeps: submit a grid around a plan, follow its progress, read, filter and export its points."""
import numpy as np
from django.db.models import F, Sum
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from planner.api import bodies
from planner.api.downloads import download
from planner.api.pagination import PlannerPagination
from planner.api.permissions import TokenScopePermission
from planner.choices import CHEAPEST_TERM, RentTerm
from planner.models import ClusterPlan, PriceBook, Sweep, Workload
from planner.serializers.base import ModelSerializer, NumberField
from planner.services import sweeps as services
from planner.services.site_results import site_result_for
from planner.services.sites import site_builds, site_facility
from planner.services.submission import site_submit, sweep_submit
from planner.services.sweep_results import (
    EXPORT_TYPES,
    MAX_CHART_SAMPLE,
    goal_feasible_points,
    selection_keys,
    sweep_export,
    sweep_rows,
    sweep_sample,
    sweep_select,
)
from planner.services.sweep_spec import MAX_COMBINATIONS
from planner.services.sweep_store import sweep_columns
from simcore.formulas.power import HALL_PUE_BASIS, HALLS
from simcore.tools.site import GOALS

SWEEP_EXAMPLE = OpenApiExample(
    "Cheapest Fire-Flyer variant that trains LLaMa-13B steps under 20 s",
    value={
        "plan": "ff2-pcie-2zone", "workload": "llama-13b-512",
        "axes": {"cluster.node_count": {"start": 200, "stop": 1240, "step": 40},
                 "workload.gpus": [64, 128, 256, 512], "plan.switch": ["qm8700", "qm9700"]},
        "goal": {"minimize": "cost.capex_total", "constraints": [{"metric": "training.step_time_s", "max": 20}],
                 "pareto": [["cost.capex_total", "training.step_time_s"]]},
    },
    request_only=True,
)


class SweepCreateSerializer(serializers.Serializer):
    plan = serializers.SlugField()
    workload = serializers.SlugField(required=False, allow_null=True)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    axes = serializers.DictField(help_text="scenario field path -> list of values, or {start, stop, steps|step}")
    goal = serializers.DictField(required=False, allow_null=True)
    outputs = serializers.ListField(child=serializers.CharField(), required=False)


SITE_EXAMPLE = OpenApiExample(
    "A 20 MW liquid-cooled site training a Llama 3 70B-class model within a year",
    value={"name": "20 MW site", "price_book": "usd-2026",
           "facility": {"power_mw": 20, "floor_racks": 400, "rack_power_kw": 130, "cooling": "liquid",
                        "hall": "hyperscale", "storage_write_gbyte_s": 2000},
           "goal": {"workload": "llama3-70b-class-1152", "objective": "by_date", "deadline": "2027-12-01"}},
    request_only=True,
)


class SiteFacilitySerializer(serializers.Serializer):
    power_mw = NumberField(min_value=0.001, max_value=10_000, help_text="facility power, MW")
    floor_racks = serializers.IntegerField(min_value=1, max_value=1_000_000, help_text="racks the floor holds")
    rack_power_kw = NumberField(min_value=0.1, max_value=10_000, required=False, allow_null=True,
                                           help_text="a rack's power and cooling limit, kW; null: no limit")
    cooling = serializers.ChoiceField(["air", "liquid"], default="air",
                                      help_text="air: builds whose nodes are liquid cooled cannot stand here")
    hall = serializers.ChoiceField(list(HALL_PUE_BASIS.items()), default=HALLS[0],
                                   help_text="the hall's class, which sets the PUE")
    pue = NumberField(min_value=1.0, max_value=5.0, required=False, allow_null=True,
                                 help_text="the site's own PUE, over the hall's")
    storage_write_gbyte_s = NumberField(
        min_value=0.001, max_value=1e9, required=False, allow_null=True,
        help_text="the site's storage system, sustained write GB/s: where builds without storage nodes write "
                  "checkpoints, in place of the external system a plan names; null: each plan's own (a build "
                  "with none has an unknown time to train)")


class SiteGoalSerializer(serializers.Serializer):
    workload = serializers.SlugField(help_text="the model to train")
    tokens = NumberField(min_value=1.0, max_value=1e18, required=False, allow_null=True,
                                    help_text="tokens to train; null: the workload's tokens_to_train")
    objective = serializers.ChoiceField(GOALS, help_text="by_date: the cheapest way to have the tokens trained by "
                                                         "the deadline; per_dollar: the lowest cost per token")
    deadline = serializers.DateField(required=False, allow_null=True, help_text="by_date: the day the tokens are "
                                                                                "due; per_dollar: optional")
    confidence = NumberField(min_value=0.01, max_value=0.99, required=False, allow_null=True,
                             help_text="plan at this share of each build's error band (0.5: its middle, 0.95: "
                                       "all but its worst 5%), the band taken as uniform; null: the engine's "
                                       "figures. Each build's chance of meeting the deadline and the budget is "
                                       "given either way.")
    rent_term = serializers.ChoiceField(
        [*RentTerm.values, CHEAPEST_TERM], required=False, default=RentTerm.ON_DEMAND,
        help_text="the rental term every rented build is compared on (each GPU at its book's rate on that term; a "
                  "GPU with no rate on it is unpriced), or cheapest: each at the cheapest of its book's terms that "
                  "covers the run. Default on-demand, the one term every GPU on sale is rented on.")

    def validate_deadline(self, deadline):
        """A past deadline is named with the request's other field errors, not after them (issue 70, item 13)."""
        if deadline is not None and deadline <= timezone.now().date():
            raise serializers.ValidationError(f"{deadline.isoformat()} is not after today")
        return deadline


class SitePlanCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    facility = SiteFacilitySerializer()
    goal = SiteGoalSerializer()
    budget = NumberField(min_value=0.01, max_value=1e15, required=False, allow_null=True,
                                    help_text="in the price book's currency; null: no budget")
    price_book = serializers.SlugField()
    builds = serializers.ListField(child=serializers.SlugField(), required=False, min_length=1,
                                   max_length=MAX_COMBINATIONS, help_text="plans to weigh; default every shared plan")


class SweepSerializer(ModelSerializer):
    plan = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    workload = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)
    progress = NumberField(read_only=True)
    calibration = serializers.ListField(
        child=serializers.DictField(child=NumberField()), read_only=True,
        help_text="per combination of swept catalogue parts (one entry when none is swept): engine constant -> the "
                  "measured value that replaced the family's there (the plan's overrides at submission)")

    class Meta:
        model = Sweep
        fields = ["id", "name", "owner", "plan", "workload", "spec", "status", "progress", "total_points",
                  "chunk_size", "chunk_count", "completed_chunks", "error", "engine_version", "input_hash",
                  "reused_from", "goal_result", "site", "site_result", "calibration", "created_at", "started_at",
                  "finished_at"]



def bool_param(request, name):
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise serializers.ValidationError({name: ["must be true or false"]})


class SweepViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin,
                   viewsets.GenericViewSet):
    """Your sweeps (staff see all). Progress is also pushed on the websocket ``/ws/sweeps/<id>/``."""

    serializer_class = SweepSerializer
    permission_classes = [TokenScopePermission, IsAuthenticated]

    def get_throttles(self):
        if self.action in ("create", "site"):
            self.throttle_scope = "sweep"
            return [ScopedRateThrottle()]
        return super().get_throttles()

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Sweep.objects.none()
        return Sweep.objects.select_related("plan", "workload", "owner").visible_to(self.request.user)

    def retrieve(self, request, *args, **kwargs):
        """A sweep; a site plan's ranking as its owner's runs now stand (:func:`site_result_for`: ranked
        again once after a run is added or deleted). A list answers each ranking as stored (its
        ``site_result.runs`` says which runs it was made with), so that no list ranks many plans at once."""
        sweep = self.get_object()
        sweep.site_result = site_result_for(sweep, request.user)
        return Response(self.get_serializer(sweep).data)

    @extend_schema(request=SweepCreateSerializer, responses={201: SweepSerializer}, examples=[SWEEP_EXAMPLE],
                   description="Submit a sweep: the Cartesian product of the axes around the plan (and workload), "
                               "optionally with a goal. Bad axes, goals or grids answer 400 naming the field.")
    def create(self, request):
        body = SweepCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        plan = ClusterPlan.objects.visible_slug(request.user, data["plan"], field="plan")
        workload = None
        if data.get("workload"):
            workload = Workload.objects.visible_slug(request.user, data["workload"], field="workload")
        spec = {key: data[key] for key in ("axes", "goal", "outputs") if data.get(key) is not None}
        sweep = sweep_submit(owner=request.user, plan=plan, workload=workload, spec=spec, name=data.get("name", ""))
        return Response(SweepSerializer(sweep).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=SitePlanCreateSerializer, responses={201: SweepSerializer}, examples=[SITE_EXAMPLE],
                   description="Plan from a site: a facility, a budget and a goal in; a sweep over the catalogue's "
                               "builds (each shared plan, or the ones named, moved onto the site), sized and laid "
                               "out every way the workload's batch allows. When done, site_result ranks every build, "
                               "owned and rented, with its best point, the limit that binds it and the error band "
                               "of its time to train. Bad input answers 400 naming the field.")
    @action(detail=False, methods=["post"])
    def site(self, request):
        body = SitePlanCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        facility, goal = data["facility"], data["goal"]
        workload = Workload.objects.visible_slug(request.user, goal["workload"], field="goal.workload")
        book = PriceBook.objects.visible_slug(request.user, data["price_book"], field="price_book")
        sweep = site_submit(
            owner=request.user, name=data.get("name", ""), workload=workload, price_book=book,
            budget=data.get("budget"), builds=site_builds(request.user, data.get("builds")),
            goal={key: goal.get(key) for key in ("objective", "deadline", "tokens", "confidence", "rent_term")},
            facility=site_facility(**facility))
        return Response(SweepSerializer(sweep).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: SweepSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        return Response(SweepSerializer(services.sweep_cancel(sweep=self.get_object())).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("valid", bool, description="only valid (true) or invalid (false) points"),
            OpenApiParameter("feasible", bool, description="only points meeting the goal's constraints"),
            OpenApiParameter("order_by", str, description="an output or axis:<path>; prefix - for descending"),
            OpenApiParameter("page", int), OpenApiParameter("page_size", int, description="1 to 500; 50 unless given"),
        ],
        responses={200: bodies.SweepResultsSerializer},
    )
    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        sweep = self.get_object()
        paginator = PlannerPagination()
        page, size = paginator.page_number(request), paginator.get_page_size(request)
        unfiltered = not any(request.query_params.get(k) for k in ("valid", "feasible", "order_by"))
        if unfiltered:  # read only the chunks that hold this page
            first = (page - 1) * size
            columns = sweep_columns(sweep, range(first, first + size))
            stored = sweep.results_sweep.chunks.aggregate(n=Sum(F("stop") - F("start")))["n"] or 0
            chosen = np.flatnonzero((columns["point"] >= first) & (columns["point"] < first + size))
            return Response({**paginator.links(request, page, size, stored), "stored_points": stored,
                             "results": sweep_rows(columns, chosen)})
        feasible = bool_param(request, "feasible")
        if feasible and not sweep.goal_result:
            raise serializers.ValidationError({"feasible": ["the sweep has no goal (or is not finished)"]})
        order_by = request.query_params.get("order_by")
        # First only the columns the filters and the order read, then every column of the page's points.
        columns = sweep_columns(sweep, keys=selection_keys(sweep, order_by, feasible))
        feasible_points = goal_feasible_points(sweep, columns) if feasible else None
        selection = sweep_select(columns, valid=bool_param(request, "valid"), order_by=order_by,
                                 feasible_points=feasible_points)
        chosen = columns["point"][selection[(page - 1) * size: page * size]]
        page_columns = sweep_columns(sweep, only=np.sort(chosen))
        rows = sweep_rows(page_columns, np.searchsorted(page_columns["point"], chosen))
        return Response({**paginator.links(request, page, size, int(selection.size)),
                         "stored_points": int(columns["point"].size), "results": rows})

    @extend_schema(
        parameters=[OpenApiParameter("points", int, description=f"how many to spread over the grid "
                                                                 f"(1 to {MAX_CHART_SAMPLE:,}; default 5,000)")],
        responses={200: bodies.SweepSampleSerializer},
        description="Points spread evenly over the whole grid for a chart, plus, always, the goal's optimum "
                    "and every point of its Pareto fronts; rows as in results.")
    @action(detail=True, methods=["get"])
    def sample(self, request, pk=None):
        sweep = self.get_object()
        try:
            count = int(request.query_params.get("points", 5000))
        except ValueError:
            raise serializers.ValidationError({"points": ["a whole number"]}) from None
        if not 1 <= count <= MAX_CHART_SAMPLE:
            raise serializers.ValidationError({"points": [f"between 1 and {MAX_CHART_SAMPLE:,}"]})
        return Response(sweep_sample(sweep, count))

    @extend_schema(parameters=[OpenApiParameter("file", str, enum=list(EXPORT_TYPES), required=True,
                                                description="csv for a spreadsheet, parquet for pandas, Polars "
                                                            "or DuckDB, npz for NumPy (each written chunk by "
                                                            "chunk, any size, and sent as it is read); one "
                                                            "download per user at a time, until its last byte "
                                                            "is sent (429 meanwhile)")],
                   # (a binary type first: a client generated from the schema reads the answer as bytes)
                   responses={(200, media_type): OpenApiTypes.BINARY
                              for media_type in sorted(EXPORT_TYPES.values(), key=lambda m: m.startswith("text/"))})
    @action(detail=True, methods=["get"], url_path="export")
    def export(self, request, pk=None):
        sweep = self.get_object()
        kind = request.query_params.get("file")
        if kind not in EXPORT_TYPES:
            raise serializers.ValidationError({"file": [" or ".join(EXPORT_TYPES)]})
        return download(request, lambda: sweep_export(sweep, kind), content_type=EXPORT_TYPES[kind],
                        filename=f"sweep-{sweep.pk}.{kind}")

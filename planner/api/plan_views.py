"""Plans, workloads, evaluations, comparisons, bills of materials and API tokens."""
from django.conf import settings
from django.contrib.auth import authenticate
from django.db.models import Prefetch
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

import simcore
from planner import serializers as api
from planner.adapters import calibration, scenario_document
from planner.api import bodies
from planner.api.permissions import OwnedEntryPermission, TokenScopePermission
from planner.models import AccessToken, ClusterPlan, ComputeNodeType, StorageNodeType, Workload
from planner.services import engine, netbox
from planner.services import plans as services
from planner.services.accounts import token_issue
from planner.services.measurements import overrides_seen_by
from planner.services.spreadsheets import XLSX_MEDIA_TYPE, bom_xlsx, comparison_xlsx


class FileRenderer(BaseRenderer):
    """A file the view has already built (text or bytes), passed through as it is."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, str | bytes) else b""


class CSVRenderer(FileRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"


class XLSXRenderer(FileRenderer):
    media_type = XLSX_MEDIA_TYPE
    format = "xlsx"
    charset = None
    render_style = "binary"


def _attachment(content, filename: str) -> Response:
    response = Response(content)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def enforce_engine_limits(document) -> None:
    """Refuse (400) requests that would ask the engine for more than one request may: too many
    scenario points or Monte Carlo replicas (API_MAX_SCENARIO_POINTS, API_MAX_MONTE_CARLO_REPLICAS)."""
    options = document.get("options") if isinstance(document, dict) else None
    replicas = options.get("monte_carlo_replicas") if isinstance(options, dict) else None
    cap = settings.API_MAX_MONTE_CARLO_REPLICAS
    if isinstance(replicas, int | float) and not isinstance(replicas, bool) and replicas > cap:
        raise serializers.ValidationError({"options.monte_carlo_replicas": [f"at most {cap:,} through the API"]})
    points = simcore.scenario.point_count(document)
    if points > settings.API_MAX_SCENARIO_POINTS:
        raise serializers.ValidationError({"(document)": [
            f"{points:,} scenario points; at most {settings.API_MAX_SCENARIO_POINTS:,} per request "
            "(submit a sweep for more)"]})


def evaluation_response(request, plan, workload=None, options=None) -> Response:
    """A plan's evaluation within the API's engine limits, its measured overrides as the caller may
    see them; bad options or an impossible build answer 400 (through the API's exception handler)."""
    overrides = calibration(plan)
    document = scenario_document(plan, workload, options, overrides)
    enforce_engine_limits(document)
    evaluation = services.plan_evaluate(plan=plan, workload=workload, options=options, document=document,
                                        overrides=overrides, work_budget_s=settings.API_WORK_BUDGET_S)
    return Response({**evaluation, "overrides": overrides_seen_by(evaluation["overrides"], request.user)})


class OwnedEntryViewSet(viewsets.ModelViewSet):
    lookup_field = "slug"
    permission_classes = [TokenScopePermission, OwnedEntryPermission]
    filterset_fields = ["slug", "visibility"]
    ordering_fields = ["slug", "name", "updated_at"]

    def get_queryset(self):
        return self.model.objects.select_related("owner").visible_to(self.request.user)

    def perform_create(self, serializer):
        serializer.save(owner=self.request.user)


PLAN_TAG = ["plans"]
EVALUATE_EXAMPLE = OpenApiExample(
    "Fire-Flyer 2 with LLaMa-13B on 512 GPUs",
    value={"workload": "llama-13b-512", "options": {"message_bytes": 195035136}},
    request_only=True,
)


@extend_schema_view(
    list=extend_schema(tags=PLAN_TAG, description="Plans you own, shared plans and presets."),
    retrieve=extend_schema(tags=PLAN_TAG),
    create=extend_schema(tags=PLAN_TAG, description="Create a plan; you own it. Give node_count or gpu_count."),
    update=extend_schema(tags=PLAN_TAG),
    partial_update=extend_schema(tags=PLAN_TAG),
    destroy=extend_schema(tags=PLAN_TAG),
)
class ClusterPlanViewSet(OwnedEntryViewSet):
    """Cluster plans: a node type and count, a fabric, storage, a price book and a reliability policy."""

    model = ClusterPlan
    serializer_class = api.ClusterPlanSerializer
    throttle_scope = None  # the evaluate action sets "evaluate"
    filterset_fields = ["slug", "visibility", "node_type__slug", "fabric_layers"]

    def get_queryset(self):
        """The plan with every part it names, in three queries: one join of all fifteen tables took
        PostgreSQL about 15 ms to plan (more tables than its exhaustive join search handles
        quickly) and 0.5 ms to run, on every evaluation."""
        return super().get_queryset().select_related(
            "switch", "price_book", "endpoint_cable", "transceiver", "fiber"
        ).prefetch_related(
            Prefetch("node_type", ComputeNodeType.objects.select_related("accelerator", "cpu", "compute_nic",
                                                                          "storage_nic")),
            Prefetch("storage_node_type", StorageNodeType.objects.select_related("nic", "cpu")),
        )

    def _workload(self, slug):
        if not slug:
            return None
        return Workload.objects.visible_slug(self.request.user, slug, field="workload")

    @extend_schema(
        tags=PLAN_TAG, request=api.EvaluateRequestSerializer, examples=[EVALUATE_EXAMPLE],
        responses={200: bodies.EvaluationSerializer,
                   400: OpenApiResponse(description="bad options or an impossible plan")},
        description="Evaluate the plan, optionally training a workload: cost, power, performance, collectives, "
                    "reliability, with units in every name and the binding constraint of each bound. An impossible "
                    "plan answers 400 with the reasons instead of numbers.",
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated],
            throttle_classes=[ScopedRateThrottle], throttle_scope="evaluate")
    def evaluate(self, request, slug=None):
        """A POST that stores nothing: anyone who can read the plan may evaluate it, read-only
        tokens included."""
        plan = self.get_object()
        body = api.EvaluateRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        workload = self._workload(body.validated_data.get("workload"))
        return evaluation_response(request, plan, workload, body.validated_data.get("options"))

    @extend_schema(
        tags=PLAN_TAG, request=api.PlanPreviewSerializer,
        responses={200: bodies.EvaluationSerializer,
                   400: OpenApiResponse(description="field errors or an impossible plan")},
        description="Check and evaluate a would-be plan without saving it (the plan builder's live preview): "
                    "the same fields as creating a plan, slug and name optional, plus an optional workload. "
                    "Bad fields answer 400 naming them; an impossible build answers 400 with the reasons.",
    )
    @action(detail=False, methods=["post"], permission_classes=[IsAuthenticated],
            throttle_classes=[ScopedRateThrottle], throttle_scope="evaluate")
    def preview(self, request):
        body = api.PlanPreviewSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fields = dict(body.validated_data)
        workload = self._workload(fields.pop("workload", None))
        return evaluation_response(request, ClusterPlan(slug="preview", name="preview", **fields), workload)

    @extend_schema(
        tags=PLAN_TAG,
        parameters=[
            OpenApiParameter("ids", str, required=True, description="2 to 4 plan slugs, comma-separated; the "
                             "first is the reference for ratios and differences."),
            OpenApiParameter("workload", str, description="A workload slug to train on every plan."),
            OpenApiParameter("format", str, enum=["json", "xlsx"], description="xlsx for an Excel workbook"),
        ],
        responses={(200, "application/json"): bodies.ComparisonSerializer, (200, XLSX_MEDIA_TYPE): OpenApiTypes.BINARY},
        description="Evaluate 2-4 plans and align their metrics, with ratios and differences to the first.",
    )
    @action(detail=False, methods=["get"], renderer_classes=[JSONRenderer, XLSXRenderer])
    def compare(self, request):
        slugs = [s.strip() for s in request.query_params.get("ids", "").split(",") if s.strip()]
        problems = services.compare_choice_problems(slugs)
        if problems:
            raise serializers.ValidationError({"ids": problems})
        found = {plan.slug: plan for plan in self.get_queryset().filter(slug__in=slugs)}
        missing = [slug for slug in slugs if slug not in found]
        if missing:
            raise serializers.ValidationError({"ids": [f"no plan '{slug}' is visible to you" for slug in missing]})
        workload = self._workload(request.query_params.get("workload"))
        comparison = services.plan_compare(plans=[found[s] for s in slugs], workload=workload,
                                           work_budget_s=settings.API_WORK_BUDGET_S)
        if request.accepted_renderer.format == "xlsx":
            return _attachment(comparison_xlsx(comparison), f"comparison-{'-'.join(slugs)}.xlsx")
        return Response(comparison)

    @extend_schema(
        tags=PLAN_TAG, responses={(200, "application/json"): bodies.BomSerializer, (200, "text/csv"): OpenApiTypes.STR,
                                  (200, XLSX_MEDIA_TYPE): OpenApiTypes.BINARY},
        parameters=[OpenApiParameter("format", str, enum=["json", "csv", "xlsx"],
                                     description="csv for a spreadsheet, xlsx for an Excel workbook (a sheet per "
                                                 "part list)")],
        description="Bill of materials: part, slug, quantity, unit price, extended price and the price's source.",
    )
    @action(detail=True, methods=["get"], renderer_classes=[JSONRenderer, CSVRenderer, XLSXRenderer])
    def bom(self, request, slug=None):
        plan = self.get_object()
        bom = services.plan_bom(plan=plan)
        export = {"csv": services.bom_csv, "xlsx": bom_xlsx}.get(request.accepted_renderer.format)
        if export is None:
            return Response(bom)
        return _attachment(export(bom), f"{plan.slug}-bom.{request.accepted_renderer.format}")

    @extend_schema(
        tags=PLAN_TAG,
        parameters=[OpenApiParameter("file", str, enum=list(netbox.FILES),
                                     description="one import file as CSV; without it, all of them in a ZIP archive")],
        responses={(200, "application/zip"): OpenApiTypes.BINARY, (200, "text/csv"): OpenApiTypes.STR},
        description="The plan's built fabric as NetBox bulk-import CSV files (manufacturers, device roles, site, "
                    "device types, devices, interfaces, cables; import them in that order), everything 'planned'. "
                    "Device, interface and cable counts equal the bill of materials.",
    )
    @action(detail=True, methods=["get"])
    def netbox(self, request, slug=None):
        """Files as they are (errors as JSON, through the API's renderers)."""
        plan = self.get_object()
        name = request.query_params.get("file")
        if name is not None and name not in netbox.FILES:
            raise serializers.ValidationError({"file": [f"must be one of {', '.join(netbox.FILES)}"]})
        files = netbox.plan_netbox(plan=plan)
        if name is None:
            response = HttpResponse(netbox.netbox_zip(files, plan.slug), content_type="application/zip")
            filename = f"{plan.slug}-netbox.zip"
        else:
            response = HttpResponse(netbox.netbox_csv(files[name]), content_type="text/csv; charset=utf-8")
            filename = f"{plan.slug}-netbox-{name}.csv"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response

    @extend_schema(tags=PLAN_TAG, request=api.CloneRequestSerializer, responses={201: api.ClusterPlanSerializer},
                   description="Copy a visible plan (for example a preset) into a private plan you own.")
    @action(detail=True, methods=["post"], permission_classes=[TokenScopePermission, IsAuthenticated])
    def clone(self, request, slug=None):
        plan = self.get_object()
        body = api.CloneRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        copy = services.plan_clone(plan=plan, owner=request.user, slug=body.validated_data["slug"],
                                   name=body.validated_data.get("name"))
        return Response(api.ClusterPlanSerializer(copy).data, status=status.HTTP_201_CREATED)


@extend_schema_view(
    list=extend_schema(tags=["workloads"]), retrieve=extend_schema(tags=["workloads"]),
    create=extend_schema(tags=["workloads"]), update=extend_schema(tags=["workloads"]),
    partial_update=extend_schema(tags=["workloads"]), destroy=extend_schema(tags=["workloads"]),
)
class WorkloadViewSet(OwnedEntryViewSet):
    """Workloads: a transformer (dense or MoE) or a CNN, its batch and its parallel layout."""

    model = Workload
    serializer_class = api.WorkloadSerializer
    throttle_scope = None  # the preview action sets "evaluate"
    filterset_fields = ["slug", "visibility", "kind", "collective", "recompute", "experts"]

    @extend_schema(
        tags=["workloads"], request=api.WorkloadPreviewSerializer,
        responses={200: bodies.EvaluationSerializer,
                   400: OpenApiResponse(description="field errors or an impossible layout")},
        description="Check and evaluate a would-be workload on a plan without saving it (the workload editor's "
                    "live preview): the same fields as creating a workload, slug and name optional, plus the "
                    "plan's slug. Bad fields answer 400 naming them.",
    )
    @action(detail=False, methods=["post"], permission_classes=[IsAuthenticated],
            throttle_classes=[ScopedRateThrottle], throttle_scope="evaluate")
    def preview(self, request):
        body = api.WorkloadPreviewSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fields = dict(body.validated_data)
        plan = ClusterPlan.objects.visible_slug(request.user, fields.pop("plan"), field="plan")
        return evaluation_response(request, plan, Workload(slug="preview", name="preview", **fields))


SCENARIO_EXAMPLE = OpenApiExample(
    "Two-layer fat-tree of 40-port switches",
    value={"cluster": {"node_count": 100, "node": {"gpus": 8, "accelerator": {"peak_fp16_tflops": 312, "tdp_w": 400},
                                                   "compute_nics": 1, "compute_nic_gbit_s": 200},
                       "fabric": {"switch_radix": 40, "switch_gbit_s": 200}}},
    request_only=True,
)


# The scenario document's JSON Schema, generated from the engine's field spec (docs/scenario-format.md).
SCENARIO_SCHEMA = simcore.document.json_schema()


class EvaluateScenarioView(APIView):
    """Evaluate a full scenario document (docs/scenario-format.md) without saving anything;
    read-only tokens may use it."""

    permission_classes = [IsAuthenticated]

    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "evaluate"

    @extend_schema(tags=["evaluate"], request={"application/json": SCENARIO_SCHEMA},
                   responses={200: bodies.RESULT_SCHEMA}, examples=[SCENARIO_EXAMPLE],
                   description="Any number field may be a list: the result then has one value per point "
                               "(at most API_MAX_SCENARIO_POINTS; submit a sweep for more). The registered metrics "
                               "(GET /api/outputs/ gives each one's label, unit and better direction): "
                               + ", ".join(f"`{o.path}`" for o in simcore.outputs.OUTPUTS if o.path) + ".")
    def post(self, request):
        enforce_engine_limits(request.data)
        return Response(engine.evaluate(request.data, work_budget_s=settings.API_WORK_BUDGET_S, kind="scenario",
                                        memoize=False))


class ReliabilityProfilesView(APIView):
    """The failure profiles (every category's rate, unit, cause, detection, repair and source) and
    the restart profiles (each part's seconds, source and confidence) plans and scenarios choose from."""

    permission_classes = [IsAuthenticated]

    @extend_schema(tags=["catalogue"], responses={200: bodies.ReliabilityProfilesSerializer})
    def get(self, request):
        return Response(simcore.reliability.describe_profiles())


class OutputsView(APIView):
    """The output registry: every metric the product names (comparisons, sweeps, the CLI table, the
    pages), with its path into an evaluation's result, label, unit and which way is better."""

    permission_classes = [IsAuthenticated]

    @extend_schema(tags=["evaluate"], responses={200: api.OutputSerializer(many=True)})
    def get(self, request):
        rows = [{**o.describe(), "compare": o.compare, "sweep": o.sweep} for o in simcore.outputs.OUTPUTS]
        return Response(api.OutputSerializer(rows, many=True).data)


class TokenViewSet(mixins.ListModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin,
                   viewsets.GenericViewSet):
    """Your API tokens: create full or read-only tokens for scripts, list them, revoke them."""

    serializer_class = api.AccessTokenSerializer
    permission_classes = [TokenScopePermission, IsAuthenticated]
    pagination_class = None

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return AccessToken.objects.none()
        return AccessToken.objects.filter(user=self.request.user)

    def perform_create(self, serializer):
        serializer.save(user=self.request.user)

    def get_serializer_class(self):
        return api.AccessTokenListSerializer if self.action == "list" else api.AccessTokenSerializer


LOGIN_TOKEN_NAME = "default"


class ObtainTokenSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)


class ObtainTokenView(APIView):
    """Exchange a username and password for a new key of your default (full-access) API token.

    Only the key's digest is stored, so each call issues a new key and the previous one stops
    working; give each script a named token (``POST /api/tokens/``) instead of sharing this one."""

    permission_classes = [AllowAny]
    authentication_classes = []
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "login"

    @extend_schema(tags=["tokens"], request=ObtainTokenSerializer,
                   responses={200: bodies.TokenIssuedSerializer, 400: OpenApiResponse(description="wrong credentials"),
                              429: OpenApiResponse(description="too many failed logins: locked out")})
    def post(self, request):
        body = ObtainTokenSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        # The Django request, on which the lockout check (django-axes) marks a locked-out login.
        user = authenticate(request._request, username=body.validated_data["username"],
                            password=body.validated_data["password"])
        if user is None or not user.is_active:
            raise serializers.ValidationError({"non_field_errors": ["unable to log in with those credentials"]})
        return Response({"token": token_issue(user, name=LOGIN_TOKEN_NAME)})

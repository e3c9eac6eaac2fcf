"""Plans and workloads: their evaluations, previews, comparisons, bills of materials and exports."""
from django.conf import settings
from django.db import transaction
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
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

import simcore
from planner import serializers as api
from planner.adapters import calibration, scenario_document
from planner.api import bodies
from planner.api.limits import enforce_engine_limits
from planner.api.permissions import OwnedEntryPermission, TokenScopePermission
from planner.api.renderers import CSVRenderer, XLSXRenderer, attachment
from planner.api.versions import VersionedEntryMixin
from planner.models import ClusterPlan, ComputeNodeType, PriceBook, StorageNodeType, Visibility, Workload
from planner.services import netbox, runs, sharing
from planner.services import plans as services
from planner.services import prices as price_services
from planner.services.measurements import overrides_seen_by
from planner.services.spreadsheets import XLSX_MEDIA_TYPE, bom_xlsx, comparison_csv, comparison_xlsx


def evaluation_response(request, plan, workload=None, options=None) -> Response:
    """A plan's evaluation within the API's engine limits, its measured overrides as the caller may
    see them and, on the caller's own plan, their own runs in its bands; bad options or an impossible
    build answer 400 (through the API's exception handler)."""
    overrides = calibration(plan)
    document = scenario_document(plan, workload, options, overrides)
    enforce_engine_limits(document)
    evaluation = services.plan_evaluate(plan=plan, workload=workload, options=options, document=document,
                                        overrides=overrides, work_budget_s=settings.API_WORK_BUDGET_S,
                                        own_rows=runs.plan_rows(plan, request.user) if workload else None)
    return Response({**evaluation, "overrides": overrides_seen_by(evaluation["overrides"], request.user)})


COMPARE_IDS = OpenApiParameter("ids", str, required=True, description="2 to 4 plan slugs, comma-separated; the "
                                                                     "first is the reference for ratios and "
                                                                     "differences.")
COMPARE_WORKLOAD = OpenApiParameter("workload", str, description="A workload slug to train on every plan.")
FILE_FORMAT = OpenApiParameter("format", str, enum=["csv", "xlsx"], required=True,
                               description="csv for a spreadsheet, xlsx for an Excel workbook")


class OwnedEntryViewSet(VersionedEntryMixin, viewsets.ModelViewSet):
    """Plans and workloads, versioned (:mod:`planner.api.versions`); when one stops being shared
    (deleted or made private), others' work that names it gets their own copy
    (:mod:`planner.services.sharing`)."""

    lookup_field = "slug"
    permission_classes = [TokenScopePermission, OwnedEntryPermission]
    filterset_fields = ["slug", "visibility"]
    ordering_fields = ["slug", "name", "updated_at"]

    def get_queryset(self):
        return self.model.objects.select_related("owner").visible_to(self.request.user)

    def perform_create(self, serializer):
        serializer.save(owner=self.request.user)

    @transaction.atomic
    def perform_destroy(self, instance):
        sharing.hand_over_references(entry=instance)
        instance.delete()

    def before_update(self, entry, changes: dict) -> None:
        if entry.visibility == Visibility.SHARED and changes.get("visibility") == Visibility.PRIVATE:
            sharing.hand_over_references(entry=entry)


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
                                                                          "storage_nic", "scaleup_optic")),
            Prefetch("storage_node_type", StorageNodeType.objects.select_related("nic", "cpu")),
        )

    def _workload(self, slug):
        if not slug:
            return None
        return Workload.objects.visible_slug(self.request.user, slug, field="workload")

    @extend_schema(
        tags=PLAN_TAG, request=api.EvaluateSerializer, examples=[EVALUATE_EXAMPLE],
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
        body = api.EvaluateSerializer(data=request.data)
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
        body = api.PlanPreviewSerializer(data=request.data, context=self.get_serializer_context())
        body.is_valid(raise_exception=True)
        fields = dict(body.validated_data)
        workload = self._workload(fields.pop("workload", None))
        return evaluation_response(request, ClusterPlan(slug="preview", name="preview", **fields), workload)

    @extend_schema(
        tags=PLAN_TAG,
        parameters=[
            COMPARE_IDS, COMPARE_WORKLOAD,
            OpenApiParameter("format", str, enum=["json", "csv", "xlsx"],
                             description="csv for the metrics table, xlsx for an Excel workbook"),
        ],
        responses={(200, "application/json"): bodies.ComparisonSerializer, (200, "text/csv"): OpenApiTypes.STR,
                   (200, XLSX_MEDIA_TYPE): OpenApiTypes.BINARY},
        description="Evaluate 2-4 plans and align their metrics, with ratios and differences to the first.",
    )
    @action(detail=False, methods=["get"], renderer_classes=[JSONRenderer, CSVRenderer, XLSXRenderer])
    def compare(self, request):
        slugs, comparison = self._comparison(request)
        if request.accepted_renderer.format == "json":
            return Response(comparison)
        return _comparison_file(request, slugs, comparison)

    @extend_schema(
        tags=PLAN_TAG,
        parameters=[COMPARE_IDS, COMPARE_WORKLOAD, FILE_FORMAT],
        responses={(200, XLSX_MEDIA_TYPE): OpenApiTypes.BINARY, (200, "text/csv"): OpenApiTypes.BINARY},
        description="The comparison as a download alone (what GET /api/plans/compare/?format= also gives): a "
                    "client generated from this schema reads it as a file, whatever its format.",
    )
    @action(detail=False, methods=["get"], url_path="compare/file", renderer_classes=[XLSXRenderer, CSVRenderer])
    def compare_file(self, request):
        _file_format_given(request)
        return _comparison_file(request, *self._comparison(request))

    def _comparison(self, request) -> tuple[list[str], dict]:
        """The plans the request names (``ids``, 2 to 4 visible to the caller) compared on its workload."""
        slugs = [s.strip() for s in request.query_params.get("ids", "").split(",") if s.strip()]
        problems = services.compare_choice_problems(slugs)
        if problems:
            raise serializers.ValidationError({"ids": problems})
        found = {plan.slug: plan for plan in self.get_queryset().filter(slug__in=slugs)}
        missing = [slug for slug in slugs if slug not in found]
        if missing:
            raise serializers.ValidationError({"ids": [f"no plan '{slug}' is visible to you" for slug in missing]})
        workload = self._workload(request.query_params.get("workload"))
        return slugs, services.plan_compare(plans=[found[s] for s in slugs], workload=workload,
                                            work_budget_s=settings.API_WORK_BUDGET_S)

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
        if request.accepted_renderer.format == "json":
            return Response(bom)
        return _bom_file(request, plan, bom)

    @extend_schema(
        tags=PLAN_TAG, parameters=[FILE_FORMAT],
        responses={(200, XLSX_MEDIA_TYPE): OpenApiTypes.BINARY, (200, "text/csv"): OpenApiTypes.BINARY},
        description="The bill of materials as a download alone (what GET /api/plans/{slug}/bom/?format= also "
                    "gives): a client generated from this schema reads it as a file, whatever its format.",
    )
    @action(detail=True, methods=["get"], url_path="bom/file", renderer_classes=[XLSXRenderer, CSVRenderer])
    def bom_file(self, request, slug=None):
        _file_format_given(request)
        plan = self.get_object()
        return _bom_file(request, plan, services.plan_bom(plan=plan))

    @extend_schema(
        tags=PLAN_TAG,
        parameters=[OpenApiParameter("file", str, enum=list(netbox.FILES),
                                     description="one import file (CSV; the device types YAML); without it, all "
                                                 "of them in a ZIP archive"),
                    OpenApiParameter("existing", str, description="comma-separated slugs of plans already imported "
                                                                  "into the same NetBox: the manufacturers, roles "
                                                                  "and device types their files created are left "
                                                                  "out"),
                    OpenApiParameter("existing_manufacturers", str,
                                     description="comma-separated names of manufacturers the NetBox "
                                                 "has already (NVIDIA from the device-type library, say): left "
                                                 "out of the manufacturers file and named as you spell them"),
                    OpenApiParameter("u_height", str, many=True, explode=True,
                                     description="the rack height of a part the catalogue has none for, as "
                                                 "<part slug>=<U> (repeat it for each part); "
                                                 "u_height.<part slug>=<U> is read too")],
        responses={(200, "application/zip"): OpenApiTypes.BINARY, (200, "text/csv"): OpenApiTypes.STR,
                   (200, "application/yaml"): OpenApiTypes.STR},
        description="The plan's built fabric as NetBox bulk-import files (manufacturers, device roles, site, "
                    "racks, device types with their interface templates as YAML, devices placed in the racks, "
                    "cables, optical modules as inventory items; import them in that order), everything "
                    "'planned'. Device and cable counts equal the bill of materials.",
    )
    @action(detail=True, methods=["get"])
    def netbox(self, request, slug=None):
        """Files as they are (errors as JSON, through the API's renderers)."""
        plan = self.get_object()
        name = request.query_params.get("file")
        if name is not None and name not in netbox.FILES:
            raise serializers.ValidationError({"file": [f"must be one of {', '.join(netbox.FILES)}"]})
        existing = [ClusterPlan.objects.visible_slug(request.user, slug.strip(), field="existing")
                    for slug in request.query_params.get("existing", "").split(",") if slug.strip()]
        present = [name.strip() for name in request.query_params.get("existing_manufacturers", "").split(",")
                   if name.strip()]
        files = netbox.plan_netbox(plan=plan, u_heights=_u_heights(request.query_params), existing=existing,
                                   existing_manufacturers=present,
                                   heights_needed=name in (None, "racks", "device-types", "devices"),
                                   work_budget_s=settings.API_WORK_BUDGET_S)
        if name is None:
            response = HttpResponse(netbox.netbox_zip(files, plan.slug), content_type="application/zip")
            filename = f"{plan.slug}-netbox.zip"
        else:
            extension, media_type = netbox.file_format(name)
            response = HttpResponse(netbox.netbox_text(name, files[name]), content_type=media_type)
            filename = f"{plan.slug}-netbox-{name}.{extension}"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response

    @extend_schema(tags=PLAN_TAG, request=api.PriceItemSerializer, responses={200: api.PriceBookSerializer},
                   description="Your quote for a part of your plan, saved to your own price book: the one pricing "
                               "the plan, else your copy of its shared book (made on first use, dated today), "
                               "which then prices the plan. The book comes back whole; nothing shared changes.")
    @action(detail=True, methods=["post"], permission_classes=[TokenScopePermission, IsAuthenticated])
    def quotes(self, request, slug=None):
        plan = self.get_object()
        if plan.owner_id != request.user.id:
            raise PermissionDenied("only the plan's owner may quote its parts: clone the plan to price your own copy")
        item = api.PriceItemSerializer(data=request.data)
        item.is_valid(raise_exception=True)
        book = price_services.plan_quote(plan=plan, owner=request.user, **item.validated_data)
        return Response(api.PriceBookSerializer(PriceBook.objects.prefetch_related("items").get(pk=book.pk)).data)

    @extend_schema(tags=PLAN_TAG, request=api.CloneSerializer, responses={201: api.ClusterPlanSerializer},
                   description="Copy a visible plan (for example a preset) into a private plan you own.")
    @action(detail=True, methods=["post"], permission_classes=[TokenScopePermission, IsAuthenticated])
    def clone(self, request, slug=None):
        plan = self.get_object()
        body = api.CloneSerializer(data=request.data)
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
        try:
            return evaluation_response(request, plan, Workload(slug="preview", name="preview", **fields))
        except simcore.ScenarioError as error:
            # A workload field the plan's hardware cannot run (an FP8 recipe, an attention kernel) is named
            # as the editor names it, so the error sits beside its field.
            if error.field.startswith("workload.") and not isinstance(error, simcore.budget.WorkBudgetExceeded):
                raise serializers.ValidationError({error.field.removeprefix("workload."): [error.reason]}) from error
            raise


def _file_format_given(request) -> None:
    """A download's format is named, not left to content negotiation."""
    if request.query_params.get("format") not in ("csv", "xlsx"):
        raise serializers.ValidationError({"format": ["give csv or xlsx"]})


def _comparison_file(request, slugs: list[str], comparison: dict):
    export = {"csv": comparison_csv, "xlsx": comparison_xlsx}[request.accepted_renderer.format]
    return attachment(export(comparison), f"comparison-{'-'.join(slugs)}.{request.accepted_renderer.format}")


def _bom_file(request, plan: ClusterPlan, bom: dict):
    export = {"csv": services.bom_csv, "xlsx": bom_xlsx}[request.accepted_renderer.format]
    return attachment(export(bom), f"{plan.slug}-bom.{request.accepted_renderer.format}")


def _u_heights(params) -> dict[str, int]:
    """Rack heights by part slug: ``u_height=<part slug>=<rack units>`` (repeated, as a client generated
    from the schema sends an array) or ``u_height.<part slug>=<rack units>``, each a whole number of at
    least 1 (a bad one named as ``u_height.<part slug>``)."""
    given = [(key, value) for key, value in params.items() if key.startswith("u_height.")]
    for item in params.getlist("u_height"):
        part, equals, units = item.partition("=")
        if not (part and equals):
            raise serializers.ValidationError({"u_height": [f"'{item}': give <part slug>=<rack units>"]})
        given.append((f"u_height.{part}", units))
    heights = {}
    for key, value in given:
        if not value.isdigit() or int(value) < 1:
            raise serializers.ValidationError({key: ["a whole number of rack units, at least 1"]})
        heights[key.removeprefix("u_height.")] = int(value)
    return heights

"""Measurements: upload nccl-tests output or a GEMM CSV, read it beside the engine's prediction, use it."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from planner.api.parsers import BoundedJSONParser
from planner.api.permissions import OwnedEntryPermission, TokenScopePermission
from planner.api.renderers import XLSXRenderer, attachment
from planner.models import ClusterPlan, ComputeNodeType, Measurement, TraceRead, Workload
from planner.serializers.base import ModelSerializer, NumberField, validated_changes
from planner.services import measurements as services
from planner.services import trace_reads
from planner.services.spreadsheets import XLSX_MEDIA_TYPE, measurement_xlsx
from planner.tasks import trace_read_enqueue
from simcore import ScenarioError
from simcore.tools.measurements import COLLECTIVES

TAG = ["measurements"]


class FittedSerializer(serializers.Serializer):
    value = NumberField(help_text="The fitted share.")
    family_value = NumberField(help_text="The accelerator family's share it would replace.")
    rows = serializers.IntegerField(help_text="Rows the fit used.")
    low = NumberField(required=False, help_text="trace: the share at every part's slowest rank or step")
    high = NumberField(required=False, help_text="trace: at every part's fastest rank or step")


class MeasurementSerializer(ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    node_type = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    plan = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    fitted = serializers.DictField(child=FittedSerializer(), read_only=True,
                                   help_text="Engine constant -> the value fitted from the rows.")
    provenance = serializers.DictField(read_only=True, help_text="Hosts, devices, ranks, header line, digest.")

    class Meta:
        model = Measurement
        fields = ["id", "name", "kind", "node_type", "plan", "collective", "filename", "note", "provenance",
                  "fitted", "use_as_override", "owner", "created_at"]
        read_only_fields = ["kind", "collective", "filename", "created_at"]


class MeasurementComparisonRowSerializer(serializers.Serializer):
    size_bytes = serializers.IntegerField(required=False, help_text="nccl-tests: message size")
    time_us = NumberField(required=False)
    algbw_gbyte_s = NumberField(required=False)
    busbw_gbyte_s = NumberField(required=False, help_text="nccl-tests: measured bus bandwidth")
    predicted_busbw_gbyte_s = NumberField(required=False)
    m = serializers.IntegerField(required=False)
    n = serializers.IntegerField(required=False)
    k = serializers.IntegerField(required=False)
    dtype = serializers.CharField(required=False)
    tflops = NumberField(required=False, help_text="GEMM: measured TFLOPS")
    predicted_tflops = NumberField(required=False)
    compute_bound = serializers.BooleanField(required=False)
    part = serializers.CharField(required=False, help_text="trace: a part of the step (gemm, attention, ...)")
    traced_us = NumberField(required=False, help_text="trace: its time, the mean over the trace's ranks "
                                                       "(and marked steps)")
    low_us = NumberField(required=False, help_text="trace: the lowest rank's or step's")
    high_us = NumberField(required=False, help_text="trace: the highest rank's or step's")
    predicted_us = NumberField(required=False, allow_null=True, help_text="trace: the engine's (compute parts and "
                                                                          "exposed communication)")
    calibrated_us = NumberField(required=False, allow_null=True,
                                help_text="trace: the engine's with the shares calibrated from the trace")
    error_pct = NumberField(allow_null=True, help_text="(predicted - measured) / measured x 100")


class MeasurementComparisonSerializer(serializers.Serializer):
    kind = serializers.CharField()
    family = serializers.CharField(help_text="The accelerator family whose shares made the prediction.")
    collective = serializers.CharField(required=False)
    ranks = serializers.IntegerField(required=False)
    hosts = serializers.IntegerField(required=False)
    link = serializers.CharField(required=False, help_text="scale-up, PCIe or network: the path the run took")
    rows = MeasurementComparisonRowSerializer(many=True)
    span = serializers.DictField(child=NumberField(allow_null=True), required=False,
                                 help_text="trace: the traced span's traced_us beside the predicted_us and "
                                           "calibrated_us sums (null where the plan cannot run the workload, so "
                                           "its communication is not predicted); copies and idle not predicted")
    mean_abs_error_pct = NumberField(allow_null=True)
    fitted = serializers.DictField(child=FittedSerializer())


class MeasurementDetailSerializer(MeasurementSerializer):
    comparison = serializers.SerializerMethodField()

    class Meta(MeasurementSerializer.Meta):
        fields = [*MeasurementSerializer.Meta.fields, "comparison"]

    @extend_schema_field(MeasurementComparisonSerializer)
    def get_comparison(self, measurement) -> dict:
        return services.measurement_compare(measurement)


class MeasurementUploadSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(Measurement.Kind.choices)
    file = serializers.FileField(help_text="nccl-tests output as printed, a CSV with header m,n,k,dtype,tflops, "
                                            "or a profiler trace (Chrome-trace JSON, gzip or not).")
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    plan = serializers.SlugField(required=False, help_text="A plan of yours that the measurement is for.")
    node_type = serializers.SlugField(required=False, help_text="Or the compute node type alone.")
    collective = serializers.ChoiceField(COLLECTIVES, required=False,
                                         help_text="nccl-tests: needed when the file does not name it.")
    note = serializers.CharField(required=False, allow_blank=True, help_text="Where, when and how it was measured.")
    use_as_override = serializers.BooleanField(default=False)
    workload = serializers.SlugField(required=False, help_text="trace: the workload it ran (visible to you).")
    moe_layers = serializers.IntegerField(required=False, default=0, min_value=0, max_value=10_000,
                                          help_text="trace: the MoE layers it holds, each run forward and backward.")
    dense_layers = serializers.IntegerField(required=False, default=0, min_value=0, max_value=10_000,
                                            help_text="trace: the dense layers it holds, likewise.")
    first_step = serializers.IntegerField(required=False, min_value=0, help_text="trace: the first profiler step "
                                          "(ProfilerStep#N) to keep, with last_step; default every marked step.")
    last_step = serializers.IntegerField(required=False, min_value=0, help_text="trace: the last one kept.")

    def validate(self, data):
        if ("first_step" in data) != ("last_step" in data):
            raise serializers.ValidationError({"first_step": ["give first_step and last_step together"]})
        if data.get("last_step", 0) < data.get("first_step", 0):
            raise serializers.ValidationError({"last_step": ["must not come before first_step"]})
        return data


class TraceReadSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(TraceRead.Status.choices, help_text="queued, running, then done or failed")
    name = serializers.CharField()
    filename = serializers.CharField()
    plan = serializers.CharField(help_text="The plan's slug.")
    workload = serializers.CharField(help_text="The workload's slug.")
    size_bytes = serializers.IntegerField(help_text="The file's size as sent.")
    measurement = serializers.IntegerField(allow_null=True, help_text="done: the measurement stored.")
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()), allow_null=True,
                                   help_text="failed for its input: field -> reasons, as a 400 would give them")
    error = serializers.CharField(allow_blank=True, help_text="failed otherwise: why")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class CarrySerializer(serializers.Serializer):
    plan = serializers.SlugField(help_text="A plan of yours of the same accelerator family.")


class CarriedSerializer(serializers.Serializer):
    plan = serializers.CharField(source="plan.slug")
    measurement = serializers.IntegerField(source="measurement.pk")
    fitted = serializers.DictField(source="measurement.fitted", child=FittedSerializer(),
                                   help_text="The shares carried, each with its low and high over the trace's ranks "
                                             "and steps.")
    created_at = serializers.DateTimeField()


class MeasurementChangeSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, max_length=200)
    note = serializers.CharField(required=False, allow_blank=True)
    use_as_override = serializers.BooleanField(required=False)


@extend_schema_view(
    list=extend_schema(tags=TAG, description="Your measurements, and those of plans you may see."),
    retrieve=extend_schema(tags=TAG, responses=MeasurementDetailSerializer,
                           description="The measurement beside the engine's prediction, row by row."),
    create=extend_schema(tags=TAG, request={"multipart/form-data": MeasurementUploadSerializer},
                         responses={201: MeasurementDetailSerializer, 202: TraceReadSerializer,
                                    400: OpenApiResponse(description="a field error; a file error names its line"),
                                    429: OpenApiResponse(description="another large trace of yours is being read")},
                         description="Upload nccl-tests output or a GEMM CSV against your plan or a node type, or a "
                                     "profiler trace against your plan with the workload and layers it ran. "
                                     "It is read, compared and stored in one step, or refused whole. A trace of "
                                     "more than TRACE_INLINE_MAX_BYTES of JSON once gunzipped (8 MiB by default) "
                                     "is read by a task: the answer is 202 with the read, whose measurement (or "
                                     "why it was refused) is at its Location; one such trace of yours at a time."),
    partial_update=extend_schema(tags=TAG, request={"application/json": MeasurementChangeSerializer},
                                 responses=MeasurementDetailSerializer,
                                 description="Rename, annotate, or mark as an override of the engine's constants."),
    destroy=extend_schema(tags=TAG),
)
class MeasurementViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                         mixins.UpdateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Measured collectives and GEMMs: an override replaces the family's constants in the plan's
    evaluations and sweeps (the evaluation lists it under ``overrides``)."""

    permission_classes = [TokenScopePermission, OwnedEntryPermission]
    parser_classes = [MultiPartParser, FormParser, BoundedJSONParser]
    filterset_fields = ["kind", "use_as_override"]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return Measurement.objects.select_related("owner", "node_type", "plan").visible_to(self.request.user)

    def _reads(self):
        """The caller's own trace reads, without their files."""
        if not self.request.user.is_authenticated:
            return TraceRead.objects.none()
        return TraceRead.objects.filter(owner=self.request.user).select_related("plan", "workload").defer("content")

    def get_serializer_class(self):
        return MeasurementSerializer if self.action == "list" else MeasurementDetailSerializer

    def create(self, request, *args, **kwargs):
        upload = MeasurementUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        data = dict(upload.validated_data)
        plan = node_type = None
        if data.get("plan"):
            plan = ClusterPlan.objects.visible_slug(request.user, data["plan"], field="plan")
            if plan.owner_id != request.user.id and not request.user.is_staff:
                raise PermissionDenied("measurements change a plan's evaluations: upload only against your own plans")
        if data.get("node_type"):
            node_type = ComputeNodeType.objects.filter(slug=data["node_type"]).first()
            if node_type is None:
                raise serializers.ValidationError({"node_type": [f"no compute node type '{data['node_type']}'"]})
        workload = Workload.objects.visible_slug(request.user, data["workload"], field="workload") \
            if data.get("workload") else None
        file = data["file"]
        content = file.read(services.MAX_FILE_BYTES + 1)
        traced = {"workload": workload, "moe_layers": data["moe_layers"], "dense_layers": data["dense_layers"],
                  "steps": (data["first_step"], data["last_step"]) if "first_step" in data else None}
        if data["kind"] == Measurement.Kind.TRACE and services.trace_reads_later(content):
            read = trace_read_enqueue(trace_reads.trace_read_create(
                owner=request.user, plan=plan, content=content, filename=file.name, name=data.get("name", ""),
                note=data.get("note", ""), use_as_override=data["use_as_override"], traced=traced))
            return Response(trace_reads.trace_read_json(read), status=status.HTTP_202_ACCEPTED,
                            headers={"Location": f"/api/measurements/reads/{read.pk}/"})
        measurement = services.measurement_upload(
            owner=request.user, kind=data["kind"], content=content, filename=file.name, name=data.get("name", ""),
            plan=plan, node_type=node_type, collective=data.get("collective", ""), note=data.get("note", ""),
            use_as_override=data["use_as_override"], traced=traced)
        return Response(MeasurementDetailSerializer(measurement).data, status=status.HTTP_201_CREATED)

    @extend_schema(tags=TAG, responses={200: TraceReadSerializer(many=True)},
                   description="Your traces read by a task, newest first, a page at a time.")
    @action(detail=False, methods=["get"], url_path="reads", filter_backends=[])
    def reads(self, request):
        rows = self.paginate_queryset(self._reads())
        return self.get_paginated_response([trace_reads.trace_read_json(row) for row in rows])

    @extend_schema(tags=TAG, responses={200: TraceReadSerializer},
                   parameters=[OpenApiParameter("read_id", int, OpenApiParameter.PATH,
                                                description="The read's id, as the upload's Location gives it.")],
                   description="One trace read by a task: queued, running, then its measurement or why it was "
                               "refused.")
    @action(detail=False, methods=["get"], url_path=r"reads/(?P<read_id>[0-9]+)")
    def read(self, request, read_id=None):
        found = self._reads().filter(pk=read_id).first()
        if found is None:
            raise NotFound("no such trace read of yours")
        return Response(trace_reads.trace_read_json(found))

    @extend_schema(tags=TAG, responses={(200, XLSX_MEDIA_TYPE): OpenApiTypes.BINARY},
                   description="The measurement beside the engine as an Excel workbook: its rows compared, what "
                               "it fits or calibrates, and what the file says of the run.")
    @action(detail=True, methods=["get"], renderer_classes=[XLSXRenderer])
    def workbook(self, request, pk=None):
        measurement = self.get_object()
        try:
            comparison = services.measurement_compare(measurement)
        except ScenarioError as error:
            raise serializers.ValidationError({error.field: [error.reason]}) from None
        return attachment(measurement_xlsx(measurement, comparison), f"measurement-{measurement.pk}.xlsx")

    @extend_schema(tags=TAG, methods=["POST"], request=CarrySerializer,
                   responses={201: CarriedSerializer,
                              400: OpenApiResponse(description="another family's build, the trace's own plan, or no "
                                                               "trace")},
                   description="Carry the trace's calibrated shares to another build of yours of the same family: "
                               "its evaluations use them, marked as carried, beside the family's figures.")
    @extend_schema(tags=TAG, methods=["DELETE"], parameters=[OpenApiParameter("plan", str, required=True)],
                   responses={204: None}, description="Stop carrying the trace to the plan.")
    @action(detail=True, methods=["post", "delete"], parser_classes=[BoundedJSONParser])
    def carry(self, request, pk=None):
        measurement = self.get_object()
        body = CarrySerializer(data=request.data if request.method == "POST" else request.query_params)
        body.is_valid(raise_exception=True)
        plan = ClusterPlan.objects.visible_slug(request.user, body.validated_data["plan"], field="plan")
        if plan.owner_id != request.user.id and not request.user.is_staff:
            raise PermissionDenied("a calibration changes a plan's evaluations: carry it only to your own plans")
        if request.method == "DELETE":
            services.measurement_uncarry(measurement=measurement, plan=plan)
            return Response(status=status.HTTP_204_NO_CONTENT)
        carried = services.measurement_carry(measurement=measurement, plan=plan)
        return Response(CarriedSerializer(carried).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        measurement = self.get_object()
        changes = validated_changes(MeasurementChangeSerializer, request.data, "upload the file again")
        services.measurement_update(measurement=measurement, changes=changes)
        return Response(MeasurementDetailSerializer(measurement).data)

"""Your runs: training runs measured on your own cluster, cases of the validation record that are
yours alone and join the error bands of your plans (:mod:`planner.services.runs`)."""
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.response import Response

from planner.api.permissions import OwnedEntryPermission, TokenScopePermission
from planner.models import ClusterPlan, MeasuredRun, Measurement, Workload
from planner.serializers.base import ModelSerializer, NumberField, validated_changes
from planner.services import runs as services

TAG = ["runs"]


class MegatronTimerSerializer(serializers.Serializer):
    timer = serializers.CharField()
    measured_ms = NumberField()
    engine_ms = NumberField(allow_null=True)
    meaning = serializers.CharField()


class MeasuredRunSerializer(ModelSerializer):
    plan = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    workload = serializers.CharField(source="workload_slug", read_only=True)
    trace = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)
    key = serializers.SerializerMethodField(help_text="The run's key in a band's keys: own-<id>.")
    predicted_s = serializers.SerializerMethodField(help_text="The engine's figure for the run, on the family's "
                                                              "own constants (s).")
    error = serializers.SerializerMethodField(help_text="predicted / measured - 1.")
    passes = serializers.SerializerMethodField(help_text="Within the tolerance of the published step times (10%).")
    group = serializers.SerializerMethodField(help_text="The band the run joins: step_time:<family>:<kind>.")
    megatron_timers = serializers.SerializerMethodField(
        help_text="From a Megatron-LM log: each per-iteration timer (ms, the slowest rank's median) beside the "
                  "engine's step parts that do that work (engine_ms; null where none does).")

    class Meta:
        model = MeasuredRun
        fields = ["id", "key", "name", "quantity", "measured_s", "predicted_s", "error", "passes", "group", "source",
                  "measured_on", "plan", "workload", "trace", "case", "details", "megatron_timers", "created_at"]
        read_only_fields = ["quantity", "measured_s", "case", "details", "created_at"]

    def _row(self, run) -> dict:
        cache = self.context.setdefault("rows", {})
        if run.pk not in cache:
            cache[run.pk] = services.run_row(run)
        return cache[run.pk]

    def get_key(self, run) -> str:
        return self._row(run)["key"]

    def get_predicted_s(self, run) -> float:
        return self._row(run)["predicted"]

    def get_error(self, run) -> float:
        return self._row(run)["error"]

    def get_passes(self, run) -> bool:
        return self._row(run)["passes"]

    def get_group(self, run) -> str:
        return services.run_group(self._row(run))

    @extend_schema_field(MegatronTimerSerializer(many=True))
    def get_megatron_timers(self, run) -> list[dict]:
        return services.megatron_timers(run)


class MeasuredRunCreateSerializer(serializers.Serializer):
    plan = serializers.SlugField(required=False, help_text="The plan the run ran as (visible to you).")
    workload = serializers.SlugField(required=False, help_text="The workload it ran (visible to you).")
    measured_s = NumberField(required=False, help_text="The step time measured, in seconds.")
    megatron_log = serializers.CharField(required=False, trim_whitespace=False, max_length=2_000_000,
                                         help_text="Or the Megatron-LM training log that printed it: the median "
                                                   "interval's elapsed time per iteration, its timers kept.")
    trace = serializers.IntegerField(required=False, help_text="Or a profiler trace of yours (a measurement of kind "
                                                               "trace): its layers' compute time is the run.")
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    source = serializers.CharField(required=False, allow_blank=True,
                                   help_text="Where, when and how it was measured (a trace's says so by itself).")
    measured_on = serializers.DateField(required=False, allow_null=True)

    def validate(self, data):
        if "trace" in data:
            extra = sorted({"plan", "workload", "measured_s"} & set(data))
            if extra:
                raise serializers.ValidationError({extra[0]: ["a run from a trace takes its plan, workload and time "
                                                              "from the trace: give the trace alone"]})
            return data
        if data.get("measured_s") is not None and data.get("megatron_log"):
            raise serializers.ValidationError({"measured_s": ["give the step time or the log that printed it, "
                                                              "one of them"]})
        for field in ("plan", "workload"):
            if not data.get(field):
                raise serializers.ValidationError({field: ["required for a run entered by hand (or give a trace)"]})
        if data.get("measured_s") is None and not data.get("megatron_log"):
            raise serializers.ValidationError({"measured_s": ["give the step time measured, or megatron_log"]})
        return data


class MeasuredRunChangeSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, max_length=200)
    source = serializers.CharField(required=False)
    measured_on = serializers.DateField(required=False, allow_null=True)


@extend_schema_view(
    list=extend_schema(tags=TAG, description="Your runs, each beside the engine's prediction for it."),
    retrieve=extend_schema(tags=TAG),
    create=extend_schema(tags=TAG, request=MeasuredRunCreateSerializer,
                         responses={201: MeasuredRunSerializer, 400: OpenApiResponse(description="a field error")},
                         description="A run measured on your cluster: a plan, its workload and the step time "
                                     "measured, or a profiler trace of yours. It joins the error bands of your plans "
                                     "of its family and kind, and no one else's."),
    partial_update=extend_schema(tags=TAG, request=MeasuredRunChangeSerializer, responses=MeasuredRunSerializer,
                                 description="Rename it, or say again where it was measured."),
    destroy=extend_schema(tags=TAG),
)
class MeasuredRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                         mixins.UpdateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Runs measured on your own cluster: private to you, they join your plans' error bands."""

    permission_classes = [TokenScopePermission, OwnedEntryPermission]
    serializer_class = MeasuredRunSerializer
    filterset_fields = ["quantity"]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return MeasuredRun.objects.select_related("plan").visible_to(self.request.user)

    def create(self, request, *args, **kwargs):
        body = MeasuredRunCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        user, named = request.user, {"name": data.get("name", ""), "source": data.get("source", "")}
        if "trace" in data:
            trace = Measurement.objects.filter(pk=data["trace"], owner=user, kind=Measurement.Kind.TRACE).first()
            if trace is None:
                raise serializers.ValidationError({"trace": [f"no profiler trace {data['trace']} of yours"]})
            run = services.run_from_trace(owner=user, trace=trace, **named)
        else:
            run = services.run_create(
                owner=user, plan=ClusterPlan.objects.visible_slug(user, data["plan"], field="plan"),
                workload=Workload.objects.visible_slug(user, data["workload"], field="workload"),
                measured_s=data.get("measured_s"), megatron_log=data.get("megatron_log", ""),
                measured_on=data.get("measured_on"), **named)
        return Response(MeasuredRunSerializer(run).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        run = self.get_object()
        changes = validated_changes(MeasuredRunChangeSerializer, request.data, "enter the run again")
        services.run_update(run=run, changes=changes)
        return Response(MeasuredRunSerializer(run).data)

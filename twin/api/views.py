"""Twins: create from a plan, control, inject and ingest failures, read state, events and metrics."""
import gzip
import io
import zlib

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import SAFE_METHODS, BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from planner.api.downloads import download
from planner.api.errors import Conflict
from planner.api.limits import one_at_a_time
from planner.api.parsers import BoundedJSONParser
from planner.api.permissions import TokenScopePermission
from planner.models import ClusterPlan, Visibility, Workload
from planner.serializers.base import ModelSerializer, NumberField
from simcore.tools.twin import MAX_EXCLUDE_AFTER
from twin import kernel_log
from twin.api import bodies
from twin.filtersets import TwinEventFilterSet
from twin.local import ensure_local_driver
from twin.models import LogIngest, Twin, TwinEvent, TwinSample
from twin.services import controls, creation, exports, ingestion, log_ingests, persistence
from twin.tasks import log_ingest_enqueue


class TwinSerializer(ModelSerializer):
    plan = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Twin
        fields = ["id", "name", "owner", "plan", "status", "error", "visibility", "seed", "speed", "node_count",
                  "gpus_per_node", "failure_profile", "fabric", "exclude_after", "sim_time_s", "last_seq", "jobs",
                  "pci_bus_ids", "metrics", "created_at", "updated_at"]


class TwinCreateSerializer(serializers.Serializer):
    plan = serializers.SlugField()
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    seed = serializers.IntegerField(min_value=0, max_value=2**32 - 1, default=0)
    speed = NumberField(default=3600.0, help_text="simulated seconds per wall-clock second")
    visibility = serializers.ChoiceField(choices=Visibility.choices, default=Visibility.PRIVATE)
    jobs = serializers.ListField(child=serializers.DictField(), required=False,
                                 help_text="[{name, nodes, work_s, interval_s, checkpoint_s, restart_s, "
                                           "fault_factor, nodes_per_domain}] (fault_factor: the job's own faults "
                                           "as a multiple of the profile's per-GPU rate, default 0; "
                                           "nodes_per_domain: where a scale-up domain spans nodes, the job's "
                                           "nodes in each, default 0: whole domains); default: one production "
                                           "job on all but the spare nodes")
    spare_nodes = serializers.IntegerField(required=False, help_text="nodes left idle as the spare pool for the "
                                                                     "default job; default: the engine's 99% sizing")
    exclude_after = serializers.IntegerField(min_value=0, max_value=MAX_EXCLUDE_AFTER, default=3,
                                             help_text="platform faults within a week after which a node is "
                                                       "excluded until the next weekly validation; 0: never")
    pci_bus_ids = serializers.ListField(child=serializers.CharField(), required=False,
                                        help_text="PCI bus id of each GPU of a node, in GPU index order")
    workload = serializers.SlugField(required=False, help_text="size the job to train this workload: its GPUs' "
                                                               "nodes, its tokens at the engine's training rate, "
                                                               "the engine's checkpoint stall and interval")
    tokens = NumberField(min_value=1.0, max_value=1e18, required=False,
                         help_text="tokens the workload's job trains; default: its tokens_to_train")


class InjectSerializer(serializers.Serializer):
    category = serializers.CharField(help_text="a failure category key, e.g. xid-74, xid-43, ib-link")
    gpu = serializers.IntegerField(required=False, min_value=0, help_text="cluster-wide GPU index")
    node = serializers.IntegerField(required=False, min_value=0)
    part = serializers.IntegerField(required=False, min_value=0,
                                    help_text="a NIC, link or switch index, for the fabric's categories")
    job = serializers.IntegerField(required=False, min_value=0, help_text="the job, for a job-caused category")


class OwnerControls(BasePermission):
    """Anyone who may see a twin may read it; only its owner (or staff) may control it."""

    def has_object_permission(self, request, view, obj):
        return request.method in SAFE_METHODS or obj.owner_id == request.user.id or request.user.is_staff


class BoundedReader(io.RawIOBase):
    """A binary stream read through, raising :class:`twin.kernel_log.LogSizeError` once more than
    ``limit_bytes`` have come from it (a gzip file's text, say, which may be far larger than the file)."""

    def __init__(self, source, limit_bytes: int):
        self.source, self.limit_bytes, self.read_bytes = source, limit_bytes, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        block = self.source.read(len(buffer))
        self.read_bytes += len(block)
        if self.read_bytes > self.limit_bytes:
            raise kernel_log.LogSizeError(f"more than {self.limit_bytes:,} bytes of log once decompressed "
                                           "(KERNEL_LOG_MAX_BYTES)")
        buffer[:len(block)] = block
        return len(block)


class KernelLogSerializer(serializers.Serializer):
    node = serializers.IntegerField(min_value=0, help_text="The node the log came from.")
    log = serializers.CharField(required=False, trim_whitespace=False, help_text="The log's text.")
    file = serializers.FileField(required=False, help_text="The log as a file (multipart), plain or gzip-compressed: "
                                                           "at most KERNEL_LOG_MAX_BYTES (32 MiB) sent and once "
                                                           "decompressed.")
    boot_time = serializers.DateTimeField(required=False, help_text="When the node booted (ISO 8601; `uptime -s`): "
                                                                    "needed for dmesg's seconds since boot.")
    year = serializers.IntegerField(required=False, min_value=1970, max_value=9999,
                                    help_text="The year of journald's short times (which have none); empty: the "
                                              "boot time's.")
    timezone = serializers.CharField(required=False, default="UTC", max_length=64,
                                     help_text="The IANA zone of the log's times that carry none (dmesg -T, "
                                               "journald short): UTC unless given.")

    def validate_log(self, text: str) -> list[str]:
        try:
            return ingestion.log_text_lines(text)
        except kernel_log.LogSizeError as error:
            raise serializers.ValidationError(str(error)) from None

    def validate_file(self, upload) -> list[str]:
        """The file's lines, read as they come (gunzipped when it starts with gzip's magic bytes):
        no more than MAX_LOG_LINES lines or KERNEL_LOG_MAX_BYTES bytes of text is ever read or held."""
        upload.seek(0)
        compressed = upload.read(2) == b"\x1f\x8b"
        upload.seek(0)
        limit_bytes = settings.KERNEL_LOG_MAX_BYTES
        source = gzip.GzipFile(fileobj=upload) if compressed else upload
        text = io.TextIOWrapper(BoundedReader(source, limit_bytes), encoding="utf-8", errors="replace", newline=None)
        try:
            return kernel_log.log_lines(text, max_lines=ingestion.MAX_LOG_LINES, max_chars=limit_bytes)
        except (OSError, EOFError, zlib.error) as error:
            raise serializers.ValidationError(f"not a readable gzip file: {error}") from error
        except kernel_log.LogSizeError as error:
            raise serializers.ValidationError(f"{error}; send it in parts") from None

    def validate(self, data):
        if ("log" in data) == ("file" in data):
            raise serializers.ValidationError({"log": ["give the log's text or a file, one of them"]})
        return data


def body(request) -> dict:
    if not isinstance(request.data, dict):
        raise serializers.ValidationError({"(body)": ["must be a JSON object"]})
    return request.data


INGEST_EXAMPLE = OpenApiExample("A kernel-log line from node 3", request_only=True, value={
    "node": 3, "line": "NVRM: Xid (PCI:0000:47:00): 74, pid=1234, name=python, NVLink: fatal error detected"})


class TwinViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin,
                  viewsets.GenericViewSet):
    """Live twins of plans. Viewers follow ``/ws/twins/<id>/``."""

    serializer_class = TwinSerializer
    permission_classes = [TokenScopePermission, IsAuthenticated, OwnerControls]

    def perform_destroy(self, instance):
        controls.twin_delete(twin=instance)

    def get_throttles(self):
        if self.action == "create":
            self.throttle_scope = "twin"
            return [ScopedRateThrottle()]
        return super().get_throttles()

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Twin.objects.none()
        return Twin.objects.select_related("plan__node_type", "owner").visible_to(self.request.user)

    @extend_schema(request=TwinCreateSerializer, responses={201: TwinSerializer})
    def create(self, request):
        request_body = TwinCreateSerializer(data=request.data)
        request_body.is_valid(raise_exception=True)
        data = request_body.validated_data
        plan = ClusterPlan.objects.visible_slug(request.user, data["plan"], field="plan")
        workload = (Workload.objects.visible_slug(request.user, data["workload"], field="workload")
                    if data.get("workload") else None)
        twin = creation.twin_create(owner=request.user, plan=plan, name=data.get("name", ""), seed=data["seed"],
                                    speed=data["speed"], jobs=data.get("jobs"), pci_bus_ids=data.get("pci_bus_ids"),
                                    exclude_after=data["exclude_after"], spare_nodes=data.get("spare_nodes"),
                                    workload=workload, tokens=data.get("tokens"), visibility=data["visibility"],
                                    work_budget_s=settings.API_WORK_BUDGET_S)
        return Response(TwinSerializer(twin).data, status=status.HTTP_201_CREATED)

    def _status(self, new_status):
        twin = controls.twin_set_status(twin=self.get_object(), status=new_status)
        if new_status == Twin.Status.RUNNING:
            ensure_local_driver()
        return Response(TwinSerializer(twin).data)

    @extend_schema(request=None, responses={200: TwinSerializer})
    @action(detail=True, methods=["post"])
    def start(self, request, pk=None):
        return self._status(Twin.Status.RUNNING)

    @extend_schema(request=None, responses={200: TwinSerializer})
    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None):
        return self._status(Twin.Status.PAUSED)

    @extend_schema(request=None, responses={200: TwinSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        return self._status(Twin.Status.RUNNING)

    @extend_schema(request=bodies.SpeedSerializer, responses={200: TwinSerializer},
                   examples=[OpenApiExample("Ten simulated hours a second", value={"speed": 36000}, request_only=True)])
    @action(detail=True, methods=["post"])
    def speed(self, request, pk=None):
        twin = self.get_object()
        controls.twin_set_speed(twin=twin, speed=body(request).get("speed"))
        return Response(TwinSerializer(twin).data)

    @extend_schema(request=bodies.PciBusIdsSerializer, responses={200: TwinSerializer},
                   description="The GPU addresses kernel-log Xid lines are mapped by, in your nodes' nvidia-smi "
                               "order (the owner's; 400 naming pci_bus_ids unless one distinct address per GPU).")
    @action(detail=True, methods=["post"], url_path="pci-bus-ids")
    def pci_bus_ids(self, request, pk=None):
        twin = self.get_object()
        controls.twin_set_pci_bus_ids(twin=twin, pci_bus_ids=body(request).get("pci_bus_ids"))
        return Response(TwinSerializer(twin).data)

    @extend_schema(request=InjectSerializer, responses={201: bodies.EventsSerializer})
    @action(detail=True, methods=["post"])
    def inject(self, request, pk=None):
        twin = self.get_object()
        request_body = InjectSerializer(data=request.data)
        request_body.is_valid(raise_exception=True)
        rows = controls.twin_inject(twin=twin, **request_body.validated_data)
        return Response({"events": [persistence.event_json(r) for r in rows]}, status=status.HTTP_201_CREATED)

    @extend_schema(request=bodies.IngestSerializer, responses={201: bodies.EventsSerializer}, examples=[INGEST_EXAMPLE],
                   description="A real event: {node, line} with an 'NVRM: Xid' kernel-log line, {node, gpu, xid} "
                               "or {node, category}. Unknown Xid codes and unparseable lines answer 400.")
    @action(detail=True, methods=["post"])
    def ingest(self, request, pk=None):
        twin = self.get_object()
        rows = ingestion.twin_ingest(twin=twin, payload=request.data)
        return Response({"events": [persistence.event_json(r) for r in rows]}, status=status.HTTP_201_CREATED)

    @extend_schema(request={"multipart/form-data": KernelLogSerializer},
                   responses={201: bodies.IngestLogResultSerializer, 202: bodies.LogIngestSerializer},
                   description="A node's whole kernel log (dmesg, dmesg -T or -x; journalctl -k in any short "
                               "layout), as a multipart upload (node and file, or node and log; JSON {node, log} "
                               "is also read, though the schema declares one body per operation), in one "
                               "transaction: its 'NVRM: Xid' lines at the times the log gives them, the Xids of "
                               "one fault (within 30 s, one per GPU with a fault Xid) one ingested event, read "
                               "with NVIDIA's Xid catalogue; "
                               "other lines are skipped and counted, and Xid lines that cannot be applied (a time "
                               "in no layout read among them) are listed with their line numbers. "
                               "A log of more than TWIN_INGEST_INLINE_MAX_LINES lines (10,000 by default) is "
                               "ingested by a task: the answer is 202 with the ingest, whose lines read and result "
                               "are at its Location. One log into a twin at a time: another sent meanwhile answers "
                               "409.")
    @action(detail=True, methods=["post"], url_path="ingest-log",
            parser_classes=[BoundedJSONParser, MultiPartParser])  # {node, log} as JSON, or a file
    def ingest_log(self, request, pk=None):
        twin = self.get_object()
        upload = KernelLogSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        data = upload.validated_data
        lines = data["log"] if "log" in data else data["file"]
        inputs = {"boot_time": data.get("boot_time"), "year": data.get("year"), "timezone_name": data["timezone"]}
        checked = ingestion.kernel_log_upload(twin=twin, node=data["node"], text=lines, **inputs)
        busy = Conflict("a kernel log is being ingested into this twin; send the next when it has finished")
        with one_at_a_time(f"twin-ingest:{twin.pk}", busy):  # one log into a twin at a time
            if log_ingests.ingest_in_progress(twin):
                raise busy
            if not log_ingests.runs_after_its_request(checked):
                return Response(ingestion.twin_ingest_log(twin=twin, upload=checked), status=status.HTTP_201_CREATED)
            ingest = log_ingests.log_ingest_create(twin=twin, upload=checked, **inputs)
        # The queued record now holds the twin until its task ends (the embedded default runs it here).
        ingest = log_ingest_enqueue(ingest)
        return Response(log_ingests.log_ingest_json(ingest), status=status.HTTP_202_ACCEPTED,
                        headers={"Location": f"/api/twins/{twin.pk}/ingests/{ingest.pk}/"})

    @extend_schema(request=bodies.DrainSerializer, responses={201: bodies.EventsSerializer},
                   examples=[OpenApiExample("Drain node 12", value={"node": 12, "drained": True}, request_only=True)],
                   description="Take a node out of service (drained: true; its job restarts on a spare) or back.")
    @action(detail=True, methods=["post"])
    def drain(self, request, pk=None):
        twin = self.get_object()
        data = body(request)
        drained = data.get("drained", True)
        if not isinstance(drained, bool):
            return Response({"drained": ["must be true or false"]}, status=status.HTTP_400_BAD_REQUEST)
        rows = controls.twin_drain(twin=twin, node=data.get("node"), drained=drained)
        return Response({"events": [persistence.event_json(r) for r in rows]}, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: bodies.LogIngestSerializer(many=True)},
                   description="The twin's kernel logs ingested by a task, newest first, a page at a time.")
    @action(detail=True, methods=["get"], filter_backends=[])
    def ingests(self, request, pk=None):
        rows = self.paginate_queryset(LogIngest.objects.filter(twin=self.get_object()).defer("log").order_by("-pk"))
        return self.get_paginated_response([log_ingests.log_ingest_json(row) for row in rows])

    @extend_schema(responses={200: bodies.LogIngestSerializer},
                   parameters=[OpenApiParameter("ingest_id", int, OpenApiParameter.PATH,
                                                description="The ingest's id, as the twin's ingests list it.")],
                   description="One kernel log's ingest: lines read so far, then its result (or why it failed).")
    @action(detail=True, methods=["get"], url_path=r"ingests/(?P<ingest_id>[0-9]+)")
    def ingest_status(self, request, pk=None, ingest_id=None):
        found = LogIngest.objects.filter(twin=self.get_object(), pk=ingest_id).defer("log").first()
        if found is None:
            raise NotFound("no such ingest of this twin")
        return Response(log_ingests.log_ingest_json(found))

    @extend_schema(responses={200: bodies.TwinStateSerializer}, description="Component states, metrics, latest events.")
    @action(detail=True, methods=["get"])
    def state(self, request, pk=None):
        return Response(persistence.snapshot(self.get_object()))

    @extend_schema(parameters=[
        OpenApiParameter("kind", str), OpenApiParameter("category", str),
        OpenApiParameter("since_seq", int, description="only events after this sequence number"),
        OpenApiParameter("node", int)],
        responses={200: bodies.EventSerializer(many=True)},
        description="The twin's events, oldest first, a page at a time; poll with since_seq, the last seq seen.")
    @action(detail=True, methods=["get"], filter_backends=[])
    def events(self, request, pk=None):
        rows = self.paginate_queryset(self._event_filter(request).qs)
        return self.get_paginated_response([persistence.event_json(e) for e in rows])

    def _event_filter(self, request) -> TwinEventFilterSet:
        """The twin's events under the request's filters, or a field error naming a bad one."""
        found = TwinEventFilterSet(request.query_params, queryset=TwinEvent.objects.filter(twin=self.get_object()))
        if not found.is_valid():
            raise serializers.ValidationError(found.errors)
        return found

    @extend_schema(parameters=[OpenApiParameter("kind", str), OpenApiParameter("category", str),
                               OpenApiParameter("node", int)],
                   responses={(200, "text/csv"): OpenApiTypes.STR},
                   description="Every event of the twin (or those of a kind, category or node) as CSV, streamed; "
                               "one download per user at a time, until its last byte is sent (429 meanwhile).")
    @action(detail=True, methods=["get"], url_path="events/export")
    def events_export(self, request, pk=None):
        found = self._event_filter(request)
        return download(request, lambda: exports.events_csv(found.filter_queryset(found.queryset)),
                        content_type="text/csv", filename=f"twin-{pk}-events.csv")

    @extend_schema(responses={200: bodies.TwinMetricsHistorySerializer},
                   description="Hourly samples of the headline metrics.")
    @action(detail=True, methods=["get"])
    def metrics(self, request, pk=None):
        twin = self.get_object()
        samples = TwinSample.objects.filter(twin=twin).order_by("sim_time_s").values_list("data", flat=True)
        return Response({"samples": list(samples[:100_000]), "current": twin.metrics})

"""Typed descriptions of the twin API's request and response bodies, for the OpenAPI schema (the
services validate every request themselves and answer 400 naming the field)."""
from rest_framework import serializers

from planner.serializers.base import NumberField
from simcore.tools.twin import JOB_STATE_NAMES, STATE_NAMES
from twin.models import LogIngest


class SpeedSerializer(serializers.Serializer):
    speed = NumberField(help_text="simulated seconds per wall-clock second")


class PciBusIdsSerializer(serializers.Serializer):
    pci_bus_ids = serializers.ListField(child=serializers.CharField(), help_text="each GPU's PCI address "
                                                                                 "(dddd:bb:dd.f) in nvidia-smi order")


class DrainSerializer(serializers.Serializer):
    node = serializers.IntegerField(min_value=0)
    drained = serializers.BooleanField(default=True, help_text="true takes the node out of service, false back")


class IngestSerializer(serializers.Serializer):
    node = serializers.IntegerField(min_value=0, help_text="the node the event came from")
    line = serializers.CharField(required=False, help_text="an 'NVRM: Xid' kernel-log line")
    gpu = serializers.IntegerField(required=False, min_value=0, help_text="with xid: the GPU's index in its node")
    xid = serializers.IntegerField(required=False, help_text="an Xid code, with gpu")
    category = serializers.CharField(required=False, help_text="a failure category key")


class EventSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    time_s = NumberField(help_text="simulated time")
    kind = serializers.CharField()
    category = serializers.CharField()
    gpu = serializers.IntegerField(allow_null=True)
    node = serializers.IntegerField(allow_null=True)
    job = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()
    logged_at = serializers.DateTimeField(allow_null=True, help_text="an ingested event's time in its kernel log (UTC)")


class EventsSerializer(serializers.Serializer):
    events = EventSerializer(many=True)


class MalformedLineSerializer(serializers.Serializer):
    line = serializers.IntegerField(help_text="its line number in the upload")
    reason = serializers.CharField()


class IngestLogResultSerializer(EventsSerializer):
    lines = serializers.IntegerField()
    xid_lines = serializers.IntegerField()
    skipped_lines = serializers.IntegerField(help_text="lines without an Xid")
    applied = serializers.IntegerField(help_text="Xid lines read and applied (a fault's several lines count each)")
    faults = serializers.IntegerField(help_text="the faults those lines make (one event each, or none when "
                                                "nothing is to be done)")
    noted = serializers.IntegerField(help_text="faults that need no action (NVIDIA's catalogue: IGNORE)")
    already_ingested = serializers.IntegerField(help_text="faults an earlier upload of the same log already ingested "
                                                          "(the same category on the same GPU at the same logged "
                                                          "time): not applied again")
    malformed = MalformedLineSerializer(many=True)


class LogIngestSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    twin = serializers.IntegerField()
    node = serializers.IntegerField()
    status = serializers.ChoiceField(choices=LogIngest.Status.choices)
    lines_total = serializers.IntegerField()
    lines_read = serializers.IntegerField(help_text="lines read so far; all of them once applying starts")
    progress = NumberField(help_text="lines_read / lines_total")
    result = IngestLogResultSerializer(allow_null=True, help_text="when done: what a small log's answer gives")
    errors = serializers.DictField(allow_null=True, help_text="when the log was refused: field -> reasons")
    error = serializers.CharField(help_text="why it failed, when not for its input")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


def _by_state():
    return serializers.DictField(child=serializers.IntegerField(),
                                 help_text=f"state ({', '.join(STATE_NAMES)}) -> count")


class TwinJobSerializer(serializers.Serializer):
    name = serializers.CharField()
    state = serializers.ChoiceField(JOB_STATE_NAMES)
    nodes = serializers.IntegerField()
    progress = NumberField()
    ettr = NumberField()
    ettr_closed_form = NumberField()
    interruptions = serializers.IntegerField()
    goodput_gpu_hours = NumberField()
    forecast_remaining_s = NumberField(allow_null=True)


class HeadlineSerializer(serializers.Serializer):
    """The figures an hourly sample keeps and the current metrics carry too."""

    time_s = NumberField()
    availability = NumberField(required=False, help_text="share of nodes in service: healthy, not "
                                          "drained, their leaf switch up (samples before 2026-12-04 lack it)")
    utilization = NumberField(help_text="share of nodes running a job (not restarting or waiting)")
    goodput_gpu_hours = NumberField()
    lost_gpu_hours = NumberField()
    interruptions = serializers.IntegerField()


class TwinMetricsSerializer(HeadlineSerializer):
    gpus = serializers.IntegerField()
    gpus_by_state = _by_state()
    nodes_by_state = _by_state()
    leaf_switches_down = serializers.IntegerField()
    jobs = TwinJobSerializer(many=True)


class TwinSampleSerializer(HeadlineSerializer):
    ettr = serializers.ListField(child=NumberField(), help_text="each job's")


class TwinMetricsHistorySerializer(serializers.Serializer):
    samples = TwinSampleSerializer(many=True)
    current = TwinMetricsSerializer()


class TwinStateSerializer(EventsSerializer):
    twin = serializers.IntegerField()
    status = serializers.CharField()
    speed = NumberField()
    time_s = NumberField()
    last_seq = serializers.IntegerField()
    gpus_per_node = serializers.IntegerField()
    gpu_state = serializers.ListField(child=serializers.IntegerField(), help_text="each GPU's index into state_names")
    node_state = serializers.ListField(child=serializers.IntegerField(), help_text=(
        "each node's index into state_names; a node that is up under a leaf switch that is down is 'cut off'"))
    node_job = serializers.ListField(child=serializers.IntegerField(), help_text="the job holding each node, -1: idle")
    state_names = serializers.ListField(child=serializers.CharField())
    metrics = TwinMetricsSerializer()

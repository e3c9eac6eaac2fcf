"""Live twins of a plan: their persisted simulator state and an append-only event log.

A twin copies its cluster's dimensions and failure profile from the plan when it is made, so
later edits to the plan do not change a running twin.

Each driver tick saves the new events and the state they lead to in one transaction, so a
driver that dies and restarts continues from the last saved state and neither loses nor
replays events.
"""
from django.conf import settings
from django.db import models

from planner.models import ClusterPlan, Visibility, VisibleQuerySet


class Twin(models.Model):
    class Status(models.TextChoices):
        CREATED = "created", "Created"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="twins")
    plan = models.ForeignKey(ClusterPlan, on_delete=models.PROTECT, related_name="twins")
    name = models.CharField(max_length=200)
    seed = models.PositiveIntegerField(default=0)
    speed = models.FloatField(default=3600.0, help_text="Simulated seconds per wall-clock second.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CREATED)
    visibility = models.CharField(max_length=8, choices=Visibility.choices, default=Visibility.PRIVATE)
    node_count = models.PositiveIntegerField(help_text="The cluster's nodes when the twin was made.")
    gpus_per_node = models.PositiveIntegerField()
    failure_profile = models.CharField(max_length=16, choices=ClusterPlan.FailureProfile.choices,
                                       default=ClusterPlan.FailureProfile.FIRE_FLYER)
    failures_per_1000_node_days = models.FloatField(
        null=True, blank=True, help_text="The plan's per-node failure rate (the per-node-rate profile).")
    category_rates = models.JSONField(default=dict, help_text="The plan's failure-rate overrides: category key -> "
                                                             "events per unit-hour.")
    link_flap_share = models.FloatField(default=0.0, help_text="The plan's share of link failures that are flaps.")
    link_flap_s = models.FloatField(default=1.0, help_text="The plan's flap length (s).")
    fabric = models.JSONField(default=dict, help_text="The compute fabric's parts: nics_per_node, links, leaves, "
                                                      "switches (from the plan's bill of materials).")
    exclude_after = models.PositiveIntegerField(
        default=3, help_text="Platform faults within a week after which a node is excluded until the next weekly "
                             "validation; 0: never.")
    jobs = models.JSONField(help_text="The job mix: name, nodes, work_s, interval_s, checkpoint_s, restart_s and "
                                      "optionally fault_factor.")
    pci_bus_ids = models.JSONField(help_text="PCI bus id of each GPU of a node, in GPU order, to map Xid lines.")
    sim_time_s = models.FloatField(default=0.0)
    state = models.BinaryField(help_text="The simulator's arrays, clock and random-generator state.")
    last_seq = models.BigIntegerField(default=0, help_text="Sequence number of the newest event.")
    error = models.TextField(blank=True, default="", help_text="Why the driver paused the twin, if it did.")
    metrics = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = VisibleQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return self.name


class TwinEvent(models.Model):
    twin = models.ForeignKey(Twin, on_delete=models.CASCADE, related_name="events")
    seq = models.BigIntegerField()
    sim_time_s = models.FloatField()
    kind = models.CharField(max_length=32)
    category = models.CharField(max_length=32, blank=True, default="")
    gpu = models.IntegerField(default=-1)
    node = models.IntegerField(default=-1)
    job = models.IntegerField(default=-1)
    message = models.TextField(blank=True, default="")
    logged_at = models.DateTimeField(null=True, blank=True,
                                     help_text="For an ingested event: when its kernel log says it happened (UTC).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["seq"]
        constraints = [models.UniqueConstraint(fields=["twin", "seq"], name="unique_event_seq_per_twin")]
        indexes = [models.Index(fields=["twin", "kind"]), models.Index(fields=["twin", "sim_time_s"])]


class TwinSample(models.Model):
    """A metrics sample for the time series: one per driver tick that crosses a simulated hour."""

    twin = models.ForeignKey(Twin, on_delete=models.CASCADE, related_name="samples")
    sim_time_s = models.FloatField()
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["sim_time_s"]


class LogIngest(models.Model):
    """A kernel log too large for its request, read and applied by a Celery task
    (:mod:`twin.services.log_ingests`): its lines read so far, then its result or why it failed."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    twin = models.ForeignKey(Twin, on_delete=models.CASCADE, related_name="log_ingests")
    node = models.PositiveIntegerField(help_text="The node whose kernel log this is.")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    lines_total = models.PositiveIntegerField()
    lines_read = models.PositiveIntegerField(default=0)
    log = models.TextField(help_text="The log's text until it has been ingested (then emptied).")
    boot_time = models.DateTimeField(null=True, blank=True)
    year = models.PositiveIntegerField(null=True, blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    result = models.JSONField(default=dict, help_text="What the ingest applied, as the inline answer gives it.")
    errors = models.JSONField(default=dict, help_text="Field -> reasons, when the log was refused.")
    error = models.TextField(blank=True, default="", help_text="Why the ingest failed, when not for its input.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, help_text="The last progress; an active ingest untouched for "
                                                               "longer than a task may run has lost its worker.")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["twin", "status"], name="log_ingest_twin_status")]

    def __str__(self):
        return f"kernel log of node {self.node} into {self.twin}"

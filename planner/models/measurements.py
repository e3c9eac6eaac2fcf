"""Measurements uploaded from the user's own cluster: nccl-tests output and GEMM benchmark CSVs.

A measurement is of a compute node type, uploaded against that node type or against a plan that
uses it; its parsed rows, what the file says about where it ran, and the engine constants fitted
from it are stored together. With ``use_as_override`` its fitted constants replace the accelerator
family's in evaluations and sweeps: of the plan it was uploaded against, or (uploaded against the
node type) of its owner's plans built from that node type (:func:`planner.adapters.calibration`).
"""
from django.conf import settings
from django.db import models

from planner.models.catalog import ComputeNodeType
from planner.models.plans import ClusterPlan, Workload


class MeasurementQuerySet(models.QuerySet):
    def visible_to(self, user):
        """The owner's, and those uploaded against a plan the user may see; staff see all."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self
        return self.filter(models.Q(owner=user) | models.Q(plan__in=ClusterPlan.objects.visible_to(user)))


class Measurement(models.Model):
    class Kind(models.TextChoices):
        NCCL_TESTS = "nccl-tests", "nccl-tests output"
        GEMM = "gemm", "GEMM benchmark CSV"
        TRACE = "trace", "Profiler trace (Chrome-trace JSON, gzip or not)"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    node_type = models.ForeignKey(ComputeNodeType, on_delete=models.PROTECT, related_name="measurements",
                                  help_text="The node type measured.")
    plan = models.ForeignKey(ClusterPlan, on_delete=models.CASCADE, null=True, blank=True,
                             related_name="measurements", help_text="The plan it was uploaded against, if any.")
    collective = models.CharField(max_length=20, blank=True, default="",
                                  help_text="nccl-tests: all_reduce, all_gather, reduce_scatter or alltoall.")
    filename = models.CharField(max_length=255)
    note = models.TextField(blank=True, default="", help_text="Where and how it was measured (the uploader's words).")
    provenance = models.JSONField(default=dict, help_text="What the file says: hosts, devices, ranks, its digest.")
    rows = models.JSONField(help_text="The parsed rows.")
    fitted = models.JSONField(default=dict, help_text="Engine constant -> fitted value, family value, rows used.")
    use_as_override = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = MeasurementQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.name


class CarriedCalibration(models.Model):
    """A trace's calibrated shares carried to another build of the same accelerator family, as its
    owner chose: they replace the family's constants in that plan's evaluations and sweeps, marked as
    carried (:func:`planner.adapters.calibration`), below any measurement of the plan's own."""

    plan = models.ForeignKey(ClusterPlan, on_delete=models.CASCADE, related_name="carried")
    measurement = models.ForeignKey(Measurement, on_delete=models.CASCADE, related_name="carried_to")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["plan", "measurement"], name="carried_once")]


class MeasuredRunQuerySet(models.QuerySet):
    def visible_to(self, user):
        """A run is its owner's alone (it tells of their cluster); staff see none of others' either."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(owner=user)


class MeasuredRun(models.Model):
    """A training run measured on the owner's own cluster: a case of the validation record that is
    theirs alone (:mod:`planner.services.runs`). ``case`` is the case in the record's form, the
    scenario document it ran (the plan and workload as they were, on the family's constants), the
    quantity and the figure; it joins the error bands of its owner's plans and no one else's."""

    class Quantity(models.TextChoices):
        STEP_TIME = "step_time_s", "Step time (s)"
        TRACED_COMPUTE = "traced_compute_s", "Compute time of a trace's layers (s)"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    quantity = models.CharField(max_length=20, choices=Quantity.choices)
    measured_s = models.FloatField(help_text="The figure measured, in seconds.")
    source = models.TextField(help_text="Where, when and how it was measured (the owner's words).")
    measured_on = models.DateField(null=True, blank=True)
    plan = models.ForeignKey(ClusterPlan, on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                             help_text="The plan it ran as (the case keeps the scenario as it was).")
    workload_slug = models.CharField(max_length=100)
    trace = models.ForeignKey("Measurement", on_delete=models.SET_NULL, null=True, blank=True, related_name="runs",
                              help_text="The trace it was measured from, if any.")
    case = models.JSONField(help_text="The case in the validation record's form (simcore/data/reference_cases.yaml).")
    details = models.JSONField(default=dict, blank=True,
                               help_text="What a Megatron-LM log said: its intervals' step times and timers.")
    prediction = models.JSONField(default=dict, blank=True,
                                  help_text="The engine's prediction for the case as stored: its engine version, the "
                                            "figure and, for a step time, the step's parts (computed again only "
                                            "when the engine changes).")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = MeasuredRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.name


class TraceRead(models.Model):
    """A profiler trace too large to read in its request (more than ``TRACE_INLINE_MAX_BYTES`` of JSON
    once gunzipped), read, compared and stored as a :class:`Measurement` by a Celery task
    (:mod:`planner.services.trace_reads`): one per user at a time; its file is kept until it has been
    read, then its measurement or why it was refused."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    plan = models.ForeignKey(ClusterPlan, on_delete=models.CASCADE, related_name="+")
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    name = models.CharField(max_length=200)
    filename = models.CharField(max_length=255)
    note = models.TextField(blank=True, default="")
    use_as_override = models.BooleanField(default=False)
    moe_layers = models.PositiveIntegerField(default=0)
    dense_layers = models.PositiveIntegerField(default=0)
    first_step = models.BigIntegerField(null=True, blank=True)
    last_step = models.BigIntegerField(null=True, blank=True)
    content = models.BinaryField(help_text="The file as sent until it has been read (then emptied).")
    size_bytes = models.PositiveIntegerField(help_text="The file's size as sent.")
    measurement = models.ForeignKey(Measurement, on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                                    help_text="What the read stored.")
    errors = models.JSONField(default=dict, help_text="Field -> reasons, when the trace was refused.")
    error = models.TextField(blank=True, default="", help_text="Why the read failed, when not for its input.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, help_text="The last progress; an active read untouched for "
                                                               "longer than a task may run has lost its worker.")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "status"], name="trace_read_owner_status")]

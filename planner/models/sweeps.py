"""Sweeps: a grid of scenario points around a plan (and workload), evaluated in chunks.

The sweep row is the record of truth (status, progress, errors, goal result); the task queue is
only transport. Each chunk's results are stored once (unique per sweep and index) as compressed
NumPy arrays, so a million-point sweep stays a few hundred rows.
"""
from django.conf import settings
from django.db import models

from planner.models.plans import ClusterPlan, VisibleQuerySet, Workload


class Sweep(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    FINAL = (Status.DONE, Status.FAILED, Status.CANCELLED)

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sweeps")
    name = models.CharField(max_length=200)
    plan = models.ForeignKey(ClusterPlan, on_delete=models.PROTECT, related_name="sweeps")
    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, null=True, blank=True, related_name="sweeps")
    spec = models.JSONField(help_text="axes, goal and outputs as submitted")
    base_document = models.JSONField(help_text="the plan (and workload) as a scenario document at submission")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    total_points = models.BigIntegerField()
    chunk_size = models.PositiveIntegerField()
    chunk_count = models.PositiveIntegerField()
    completed_chunks = models.PositiveIntegerField(default=0)
    released_chunks = models.PositiveIntegerField(
        default=0, help_text="How many chunks, the first of the sweep, were queued so far: its owner's share of "
                             "the workers (SWEEP_CHUNKS_IN_FLIGHT_PER_USER) releases the rest as chunks finish.")
    error = models.TextField(blank=True, default="")
    engine_version = models.CharField(max_length=32)
    input_hash = models.CharField(max_length=64, db_index=True)
    reused_from = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="reused_by",
                                    help_text="An identical earlier sweep of the same owner whose results this "
                                              "one shows.")
    goal_result = models.JSONField(null=True, blank=True)
    site = models.JSONField(null=True, blank=True, help_text="a site-first plan's facility, budget and goal, as "
                                                             "submitted (null: an ordinary sweep)")
    site_result = models.JSONField(null=True, blank=True, help_text="a finished site-first plan's ranked builds")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = VisibleQuerySet.as_manager()

    @property
    def calibration(self) -> list[dict[str, float]]:
        """Per combination of catalogue parts (one entry when none is swept), the measured constants
        that replaced the family's there: the plan's measurements marked as overrides at submission,
        each applying only where the sweep keeps the node type it was taken on."""
        return [document["cluster"].get("calibration", {}) for document in self.base_document["documents"]]

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.name} ({self.status})"

    @property
    def progress(self) -> float:
        return 1.0 if self.status == self.Status.DONE else self.completed_chunks / max(self.chunk_count, 1)

    @property
    def results_sweep(self) -> "Sweep":
        """Where the results live: this sweep, or the identical one it reused."""
        return self.reused_from or self


class SweepChunk(models.Model):
    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    start = models.BigIntegerField()
    stop = models.BigIntegerField()
    data = models.BinaryField(help_text="np.savez_compressed of the output arrays")
    invalid_points = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["sweep", "index"], name="unique_chunk_per_sweep")]

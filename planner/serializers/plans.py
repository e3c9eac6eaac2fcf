"""Plans and workloads, their previews and the requests about them (evaluate, clone)."""
from rest_framework import serializers

from planner.models import ClusterPlan, ComputeNodeType, LinkPart, PriceBook, StorageNodeType, Switch, Workload
from planner.serializers.base import SLUG_TAKEN, CleanModelSerializer, VisibleSlugReference, slug_is_free, slug_ref


class OwnedEntrySerializer(CleanModelSerializer):
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True,
                                         help_text="The owner's username; null for presets.")
    is_preset = serializers.BooleanField(read_only=True)


class ClusterPlanSerializer(OwnedEntrySerializer):
    node_type = slug_ref(ComputeNodeType)
    switch = slug_ref(Switch)
    storage_node_type = slug_ref(StorageNodeType, allow_null=True, required=False)
    endpoint_cable = slug_ref(LinkPart, allow_null=True, required=False)
    transceiver = slug_ref(LinkPart, allow_null=True, required=False)
    fiber = slug_ref(LinkPart, allow_null=True, required=False)
    price_book = VisibleSlugReference(slug_field="slug", queryset=PriceBook.objects.all(),
                                      help_text="A shared price book or one of your own.")
    node_count = serializers.IntegerField(min_value=1, required=False)
    gpu_count = serializers.IntegerField(
        min_value=1, required=False, help_text="Give the GPU count instead of node_count; it must fill whole nodes."
    )

    class Meta:
        model = ClusterPlan
        exclude = ["id"]
        read_only_fields = ["created_at", "updated_at", "version"]
        extra_kwargs = {"slug": {"validators": [slug_is_free(ClusterPlan, "plan")]}}

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["gpu_count"] = instance.gpu_count
        return data

    def validate(self, attrs):
        gpu_count = attrs.pop("gpu_count", None)
        if gpu_count is not None:
            node = attrs.get("node_type") or getattr(self.instance, "node_type", None)
            if node is not None:
                per_node = node.accelerators_per_node
                if gpu_count % per_node:
                    raise serializers.ValidationError(
                        {"gpu_count": f"{gpu_count} GPUs do not fill whole {per_node}-GPU nodes"})
                if "node_count" in attrs and attrs["node_count"] * per_node != gpu_count:
                    raise serializers.ValidationError({"gpu_count": "disagrees with node_count; give one of them"})
                attrs["node_count"] = gpu_count // per_node
        if self.instance is None and "node_count" not in attrs:
            raise serializers.ValidationError({"node_count": "give node_count or gpu_count"})
        return super().validate(attrs)


class PlanPreviewSerializer(ClusterPlanSerializer):
    """A would-be plan (no slug or name needed) and optionally a workload, checked and evaluated unsaved."""

    workload = serializers.SlugField(required=False, allow_null=True, help_text="A workload's slug.")
    nested_fields = ("workload",)
    clean_exclude = ("slug", "name", "description", "visibility")

    class Meta(ClusterPlanSerializer.Meta):
        exclude = ["id", "slug", "name", "description", "visibility"]


class WorkloadSerializer(OwnedEntrySerializer):
    class Meta:
        model = Workload
        exclude = ["id"]
        read_only_fields = ["created_at", "updated_at", "version"]
        extra_kwargs = {"slug": {"validators": [slug_is_free(Workload, "workload")]}}


class WorkloadPreviewSerializer(WorkloadSerializer):
    """A would-be workload (no slug or name needed) and the plan to train it on, checked and evaluated unsaved."""

    plan = serializers.SlugField(help_text="A plan's slug.")
    nested_fields = ("plan",)
    clean_exclude = ("slug", "name", "description", "visibility")

    class Meta(WorkloadSerializer.Meta):
        exclude = ["id", "slug", "name", "description", "visibility"]


class EvaluateSerializer(serializers.Serializer):
    workload = serializers.SlugField(required=False, allow_null=True, help_text="A workload's slug.")
    options = serializers.DictField(required=False, help_text="Engine options (see the scenario format).")


class CloneSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=100)
    name = serializers.CharField(max_length=200, required=False)

    def validate_slug(self, slug):
        if ClusterPlan.objects.filter(slug=slug).exists():
            raise serializers.ValidationError(SLUG_TAKEN.format(noun="plan"))
        return slug

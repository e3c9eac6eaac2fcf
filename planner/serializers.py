"""Catalogue serializers. Each one runs the model's ``full_clean()`` so that the rules in
``Model.clean()`` hold for API writes exactly as for the admin and the seed loader."""
import re

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from rest_framework import serializers

from planner.models import (
    CPU,
    NIC,
    Accelerator,
    AccessToken,
    ClusterPlan,
    ComputeNodeType,
    LinkPart,
    PriceBook,
    PriceItem,
    StorageNodeType,
    Switch,
    Workload,
)


def as_drf_validation_error(error: DjangoValidationError) -> serializers.ValidationError:
    """Turn a model ``ValidationError`` into DRF's, keeping the field names."""
    if hasattr(error, "error_dict"):
        return serializers.ValidationError(
            {field: [str(m) for m in msgs] for field, msgs in error.message_dict.items()})
    return serializers.ValidationError({"non_field_errors": error.messages})


def full_clean_or_raise(instance, exclude=None):
    try:
        instance.full_clean(exclude=exclude)
    except DjangoValidationError as error:
        raise as_drf_validation_error(error) from error


class CleanModelSerializer(serializers.ModelSerializer):
    """Validates by building the would-be instance and calling ``full_clean()`` on it."""

    nested_fields: tuple[str, ...] = ()
    clean_exclude: tuple[str, ...] = ()

    def validate(self, attrs):
        attrs = super().validate(attrs)
        model = self.Meta.model
        if self.instance is not None:
            candidate = model.objects.get(pk=self.instance.pk)
        else:
            candidate = model()
        for field, value in attrs.items():
            if field not in self.nested_fields:
                setattr(candidate, field, value)
        full_clean_or_raise(candidate, exclude=list(self.clean_exclude) or None)
        return attrs


SLUG = re.compile(r"[-a-zA-Z0-9_]+")


class SlugReference(serializers.SlugRelatedField):
    """A catalogue or preset entry by slug; text that cannot be a slug (a NUL byte, spaces) is a
    field error before any database look-up."""

    def to_internal_value(self, data):
        if not isinstance(data, str) or not SLUG.fullmatch(data):
            self.fail("does_not_exist", slug_name=self.slug_field, value=str(data)[:100])
        return super().to_internal_value(data)


def slug_ref(model, **kwargs):
    return SlugReference(slug_field="slug", queryset=model.objects.all(), **kwargs)


class AcceleratorSerializer(CleanModelSerializer):
    class Meta:
        model = Accelerator
        exclude = ["id"]


class CPUSerializer(CleanModelSerializer):
    class Meta:
        model = CPU
        exclude = ["id"]


class NICSerializer(CleanModelSerializer):
    class Meta:
        model = NIC
        exclude = ["id"]


class SwitchSerializer(CleanModelSerializer):
    class Meta:
        model = Switch
        exclude = ["id"]


class LinkPartSerializer(CleanModelSerializer):
    class Meta:
        model = LinkPart
        exclude = ["id"]


class ComputeNodeTypeSerializer(CleanModelSerializer):
    accelerator = slug_ref(Accelerator)
    cpu = slug_ref(CPU, allow_null=True, required=False)
    compute_nic = slug_ref(NIC)
    storage_nic = slug_ref(NIC, allow_null=True, required=False)

    class Meta:
        model = ComputeNodeType
        exclude = ["id"]


class StorageNodeTypeSerializer(CleanModelSerializer):
    cpu = slug_ref(CPU, allow_null=True, required=False)
    nic = slug_ref(NIC)

    class Meta:
        model = StorageNodeType
        exclude = ["id"]


class PriceItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = PriceItem
        fields = ["part_kind", "part_slug", "unit_price", "basis", "confidence"]

    def validate(self, attrs):
        full_clean_or_raise(PriceItem(**attrs), exclude=["price_book"])
        return attrs


class PriceBookSerializer(CleanModelSerializer):
    """A price book with its items; writing ``items`` replaces the whole list atomically."""

    items = PriceItemSerializer(many=True, required=False)
    nested_fields = ("items",)

    class Meta:
        model = PriceBook
        exclude = ["id"]

    def validate_items(self, items):
        seen = set()
        for index, item in enumerate(items):
            key = (item["part_kind"], item["part_slug"])
            if key in seen:
                raise serializers.ValidationError(
                    f"item {index}: {key[0]} '{key[1]}' is priced twice in this book"
                )
            seen.add(key)
        return items

    @transaction.atomic
    def create(self, validated_data):
        items = validated_data.pop("items", [])
        book = super().create(validated_data)
        PriceItem.objects.bulk_create(PriceItem(price_book=book, **item) for item in items)
        return book

    @transaction.atomic
    def update(self, instance, validated_data):
        items = validated_data.pop("items", None)
        book = super().update(instance, validated_data)
        if items is not None:
            book.items.all().delete()
            PriceItem.objects.bulk_create(PriceItem(price_book=book, **item) for item in items)
        return book


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
    price_book = slug_ref(PriceBook)
    node_count = serializers.IntegerField(min_value=1, required=False)
    gpu_count = serializers.IntegerField(
        min_value=1, required=False, help_text="Give the GPU count instead of node_count; it must fill whole nodes."
    )

    class Meta:
        model = ClusterPlan
        exclude = ["id"]
        read_only_fields = ["created_at", "updated_at"]

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
        read_only_fields = ["created_at", "updated_at"]


class WorkloadPreviewSerializer(WorkloadSerializer):
    """A would-be workload (no slug or name needed) and the plan to train it on, checked and evaluated unsaved."""

    plan = serializers.SlugField(help_text="A plan's slug.")
    nested_fields = ("plan",)
    clean_exclude = ("slug", "name", "description", "visibility")

    class Meta(WorkloadSerializer.Meta):
        exclude = ["id", "slug", "name", "description", "visibility"]


class AccessTokenListSerializer(serializers.ModelSerializer):
    """A token as listed: never its key, only the key's first characters."""

    class Meta:
        model = AccessToken
        fields = ["id", "name", "prefix", "read_only", "created_at", "last_used_at"]
        read_only_fields = fields


class AccessTokenSerializer(serializers.ModelSerializer):
    key = serializers.CharField(read_only=True, help_text="Shown once, when the token is created.")

    class Meta:
        model = AccessToken
        fields = ["id", "name", "prefix", "read_only", "key", "created_at", "last_used_at"]
        read_only_fields = ["prefix", "created_at", "last_used_at"]
        extra_kwargs = {"name": {"required": True}}

    def validate_name(self, name):
        if name == "default":
            raise serializers.ValidationError("'default' is the full-access token of POST /api/auth/token/")
        user = self.context["request"].user
        if AccessToken.objects.filter(user=user, name=name).exists():
            raise serializers.ValidationError(f"you already have a token named '{name}'")
        return name


class EvaluateRequestSerializer(serializers.Serializer):
    workload = serializers.SlugField(required=False, allow_null=True, help_text="A workload's slug.")
    options = serializers.DictField(required=False, help_text="Engine options (see the scenario format).")


class CloneRequestSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=100)
    name = serializers.CharField(max_length=200, required=False)

    def validate_slug(self, slug):
        if ClusterPlan.objects.filter(slug=slug).exists():
            raise serializers.ValidationError(f"a plan with slug '{slug}' already exists")
        return slug


class OutputSerializer(serializers.Serializer):
    """One entry of the engine's output registry (simcore/outputs.py)."""

    key = serializers.CharField()
    path = serializers.CharField(allow_null=True, help_text="Dotted path into an evaluation's result; null for a "
                                                            "metric derived from several fields.")
    label = serializers.CharField()
    unit = serializers.CharField(help_text='"currency" is the price book\'s currency.')
    better = serializers.ChoiceField(choices=["lower", "higher", ""], help_text="Which way is better, if either.")
    workload = serializers.BooleanField(help_text="Present only when a workload is trained.")
    chart = serializers.BooleanField(help_text="Charted on the comparison page.")
    compare = serializers.BooleanField(help_text="Lined up by GET /api/plans/compare/.")
    sweep = serializers.BooleanField(help_text="Stored by a sweep that names no outputs.")

"""The catalogue's serializers: parts, node types and price books."""
from django.db import transaction
from rest_framework import serializers

from planner.models import (
    CPU,
    NIC,
    Accelerator,
    ComputeNodeType,
    LinkPart,
    PriceBook,
    PriceItem,
    StorageNodeType,
    Switch,
)
from planner.serializers.base import CleanModelSerializer, ModelSerializer, full_clean_or_raise, slug_is_free, slug_ref


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
    scaleup_optic = slug_ref(LinkPart, allow_null=True, required=False)

    class Meta:
        model = ComputeNodeType
        exclude = ["id"]


class StorageNodeTypeSerializer(CleanModelSerializer):
    cpu = slug_ref(CPU, allow_null=True, required=False)
    nic = slug_ref(NIC)

    class Meta:
        model = StorageNodeType
        exclude = ["id"]


class PriceItemSerializer(ModelSerializer):
    class Meta:
        model = PriceItem
        fields = ["part_kind", "part_slug", "term", "provider", "unit_price", "low_price", "high_price", "basis",
                  "confidence", "price_date", "source_url"]

    def validate(self, attrs):
        full_clean_or_raise(PriceItem(**attrs), exclude=["price_book"])
        return attrs


class PriceBookSerializer(CleanModelSerializer):
    """A price book with its items; writing ``items`` replaces the whole list atomically."""

    items = PriceItemSerializer(many=True, required=False)
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True,
                                         help_text="The owner of a user's own book; null for a shared book.")
    nested_fields = ("items",)

    class Meta:
        model = PriceBook
        exclude = ["id"]
        extra_kwargs = {"slug": {"validators": [slug_is_free(PriceBook, "price book")]}}

    def validate_items(self, items):
        seen = set()
        for index, item in enumerate(items):
            key = (item["part_kind"], item["part_slug"], item.get("term", ""))
            if key in seen:
                term = f" ({key[2]})" if key[2] else ""
                raise serializers.ValidationError(
                    f"item {index}: {key[0]} '{key[1]}'{term} is priced twice in this book"
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


class PriceBookCopySerializer(serializers.Serializer):
    """A copy of a visible price book as the caller's own, optionally priced into one of their plans."""

    slug = serializers.SlugField(max_length=100, validators=[slug_is_free(PriceBook, "price book")])
    name = serializers.CharField(max_length=200, required=False,
                                 help_text="The copy's name; default: the book's name with '(your quotes)'.")
    plan = serializers.SlugField(required=False, help_text="A plan of yours to price from the copy.")

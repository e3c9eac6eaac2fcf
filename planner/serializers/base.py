"""What every serializer shares: model validation through ``full_clean()`` (so the rules in
``Model.clean()`` hold for API writes exactly as for the admin and the seed loader) and
references by slug."""
import re

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from rest_framework import serializers
from rest_framework.validators import UniqueValidator


class NumberField(serializers.FloatField):
    """DRF's FloatField, refusing what is not a number: a JSON true or false (DRF would take true as
    1.0) and an integer past a float's range (10**400), each a 400 naming the field."""

    default_error_messages = {"boolean": "must be a number, not true or false",
                              "range": "must be a number within a float's range"}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("boolean")
        if isinstance(data, int):
            try:
                float(data)
            except OverflowError:
                self.fail("range")
        return super().to_internal_value(data)


class ModelSerializer(serializers.ModelSerializer):
    """DRF's ModelSerializer, with a model's float fields as :class:`NumberField`."""

    serializer_field_mapping = {**serializers.ModelSerializer.serializer_field_mapping, models.FloatField: NumberField}


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


class CleanModelSerializer(ModelSerializer):
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


class VisibleSlugReference(SlugReference):
    """An owned-or-shared entry by slug, as the caller may see it (:meth:`VisibleQuerySet.visible_to`):
    another user's own entry does not exist for them. Without a request (the seed loader), the shared
    entries alone."""

    def get_queryset(self):
        request = self.context.get("request")
        queryset = super().get_queryset()
        return queryset.filter(owner__isnull=True) if request is None else queryset.visible_to(request.user)


SLUG_TAKEN = "is taken: slugs name {noun}s across every user, so choose another"


def slug_is_free(model, noun: str) -> UniqueValidator:
    """A slug unique across every user's entries, refused with the same words whoever holds it:
    a private entry's slug is seen as taken, never as someone's private plan."""
    return UniqueValidator(queryset=model.objects.all(), message=SLUG_TAKEN.format(noun=noun))


def validated_changes(serializer_class, data, redo: str) -> dict:
    """The fields a PATCH may change, validated; a field it may not change is refused naming it and
    what to do instead (``redo``: "upload the file again", say)."""
    changes = serializer_class(data=data)
    changes.is_valid(raise_exception=True)
    unknown = sorted(set(data) - set(changes.fields))
    if unknown:
        raise serializers.ValidationError({unknown[0]: [f"cannot be changed: {redo} instead"]})
    return dict(changes.validated_data)

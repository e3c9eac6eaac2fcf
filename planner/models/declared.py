"""The web side of the one field declaration, :data:`simcore.document.SPEC`.

Every engine field with an editor ``group`` is an input people set, so a model stores it: the
workload section on :class:`Workload`, the plan's fabric, storage and reliability fields on
:class:`ClusterPlan`. From the declaration come each stored field's model column (type, range,
default, label, help), its form label with its unit, its preset-file JSON Schema and its place in
the engine document; nothing here names a field except where a plan calls it otherwise.
"""
from dataclasses import dataclass
from functools import reduce

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from planner.models.catalog import validate_positive
from simcore.arrays import as_array
from simcore.document import SPEC, Choice, Flag, Num, Rates, Rule, Text, field_schema, label_of
from simcore.errors import ScenarioError

# The plan's names for engine fields it calls otherwise (the plan also holds in-plan storage nodes).
PLAN_NAMES = {"cluster.storage.external_write_gbyte_s": "external_storage_write_gbyte_s",
              "cluster.storage.external_read_gbyte_s": "external_storage_read_gbyte_s"}
WORKLOAD_SECTIONS = ("workload",)
PLAN_SECTIONS = ("cluster.fabric", "cluster.storage", "cluster.reliability")


@dataclass(frozen=True)
class StoredField:
    """One engine field a model stores: the model's name for it, its section and key in the
    scenario document, and its declared rule."""

    name: str
    section: str
    key: str
    rule: Rule

    @property
    def label(self) -> str:
        """The form label: the declared label with its unit (not where the label is the unit: "GPUs")."""
        unit, label = getattr(self.rule, "unit", ""), label_of(self.key, self.rule)
        return f"{label} ({unit})" if unit and unit.lower() != label.lower() else label


def stored_fields(sections: tuple[str, ...], spec: dict = SPEC) -> dict[str, StoredField]:
    """The fields of ``sections`` (dotted paths into ``spec``) that have an editor group, by model name."""
    stored = {}
    for path in sections:
        section = reduce(lambda tree, key: tree[key], path.split("."), spec)
        for key, rule in section.items():
            if not isinstance(rule, dict) and rule.group:
                name = PLAN_NAMES.get(f"{path}.{key}", key)
                stored[name] = StoredField(name, path, key, rule)
    return stored


def _help(doc: str) -> str:
    return f"{doc[0].upper()}{doc[1:]}." if doc else ""


def _number_validators(rule: Num) -> list:
    validators = []
    if rule.check == "positive":
        validators.append(MinValueValidator(1) if rule.integer else validate_positive)
    elif rule.check in ("non_negative", "fraction") and not rule.integer:
        validators.append(MinValueValidator(0.0))
    if rule.check == "fraction":
        validators.append(MaxValueValidator(1.0))
    validators += [MinValueValidator(rule.at_least)] if rule.at_least is not None else []
    validators += [MaxValueValidator(rule.at_most)] if rule.at_most is not None else []
    return validators + [validate_engine_range]


def validate_engine_range(value):
    """The engine's range (:data:`simcore.arrays.MAX_MAGNITUDE`, :data:`~simcore.arrays.MIN_POSITIVE`),
    checked on write so that a stored value can always be evaluated."""
    try:
        as_array(value, "value")
    except ScenarioError as error:
        raise ValidationError(error.reason) from None


def model_field(stored: StoredField) -> models.Field:
    """The model column of one declared field."""
    rule = stored.rule
    text = {"verbose_name": label_of(stored.key, rule), "help_text": _help(rule.doc)}
    if isinstance(rule, Num):
        kind = models.PositiveIntegerField if rule.integer else models.FloatField
        if rule.nullable or (rule.default is None and not rule.required):
            return kind(null=True, blank=True, validators=_number_validators(rule), **text)
        default = {} if rule.default is None else {"default": rule.default}
        return kind(validators=_number_validators(rule), **default, **text)
    if isinstance(rule, Choice):
        labels = rule.labels or rule.options
        default = {} if rule.default is None else {"default": rule.default}
        return models.CharField(max_length=max(32, *map(len, rule.options)), choices=list(zip(rule.options, labels)),
                                **default, **text)
    if isinstance(rule, Flag):
        return models.BooleanField(default=rule.default, **text)
    if isinstance(rule, Rates):
        return models.JSONField(default=dict, blank=True, **text)
    if isinstance(rule, Text):
        return models.CharField(max_length=64, default=rule.default, **text)
    raise TypeError(f"no model column for {type(rule).__name__}")


def declared_base(name: str, sections: tuple[str, ...], module: str, spec: dict = SPEC) -> type:
    """An abstract model holding the declared fields of ``sections``, for a model to inherit."""
    attributes = {stored.name: model_field(stored) for stored in stored_fields(sections, spec).values()}
    meta = type("Meta", (), {"abstract": True})
    return type(name, (models.Model,), {"__module__": module, "Meta": meta, **attributes})


def section_values(entry, sections: tuple[str, ...], section: str) -> dict:
    """The engine document's fields of ``section`` that ``entry`` stores, from its columns."""
    return {stored.key: getattr(entry, stored.name) for stored in stored_fields(sections).values()
            if stored.section == section}


def preset_properties(sections: tuple[str, ...], spec: dict = SPEC) -> dict[str, dict]:
    """The preset-file JSON Schema of each declared field (one value each, not a list)."""
    return {stored.name: field_schema(stored.rule, lists=False) for stored in stored_fields(sections, spec).values()}

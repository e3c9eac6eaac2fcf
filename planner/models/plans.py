"""Cluster plans and workloads: what an architect builds and what it must train.

A plan names catalogue parts and counts; a workload describes a model and its parallel layout.
Both validate in ``clean()`` (the API, the admin and the preset loader call it). Plans and
workloads belong to an owner; ``visibility`` says who else may read them. Presets have no owner,
are public and only staff may change them.
"""
import math

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from planner.choices import Confidence, LinkPartKind
from planner.models.catalog import (
    ComputeNodeType,
    LinkPart,
    PriceBook,
    StorageNodeType,
    Switch,
    count_field,
    validate_positive,
)
from planner.models.declared import PLAN_SECTIONS, WORKLOAD_SECTIONS, declared_base, section_values
from planner.models.visibility import Visibility, VisibleQuerySet
from simcore import ScenarioError
from simcore.arrays import as_array
from simcore.document import MAX_CLUSTER_GPUS
from simcore.formulas import reliability, topology
from simcore.formulas.power import HALL_PUE_BASIS, HALLS
from simcore.stages import cluster, job


class OwnedEntry(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+",
        help_text="Empty for presets shipped with the catalogue.",
    )
    visibility = models.CharField(max_length=8, choices=Visibility.choices, default=Visibility.PRIVATE)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    version = models.PositiveIntegerField(
        default=1, editable=False,
        help_text="Raised by one at every change through the API; its ETag, sent back as If-Match, "
                  "makes a write that did not see the latest change answer 412.")

    objects = VisibleQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["slug"]

    def __str__(self):
        return self.name

    @property
    def is_preset(self) -> bool:
        return self.owner_id is None


def positive_int(help_text: str, default=None, minimum: int = 1, maximum: int | None = None):
    validators = [MinValueValidator(minimum)] + ([MaxValueValidator(maximum)] if maximum is not None else [])
    kwargs = {} if default is None else {"default": default}
    return models.PositiveIntegerField(validators=validators, help_text=help_text, **kwargs)


class ClusterPlan(OwnedEntry, declared_base("DeclaredPlanFields", PLAN_SECTIONS, __name__)):
    """A build: compute nodes, the computation fabric, storage, prices, reliability policy. Its
    fabric, external-storage and reliability settings are the engine's fields of those sections,
    declared once in :data:`simcore.document.SPEC` (:mod:`planner.models.declared`)."""

    class FabricLayers(models.IntegerChoices):
        TWO = 2, "Two-layer fat-tree"
        THREE = 3, "Three-layer fat-tree"

    class FailureProfile(models.TextChoices):
        FIRE_FLYER = "fire-flyer", "Fire-Flyer 2 measured rates (Xid table, IB links, host ECC)"
        LLAMA3 = "llama3", "Llama 3 405B run (Table 5: GPUs, hosts, network parts)"
        PER_NODE_RATE = "per-node-rate", "One per-node failure rate"

    node_type = models.ForeignKey(ComputeNodeType, on_delete=models.PROTECT, related_name="plans")
    node_count = positive_int("Compute nodes.", maximum=MAX_CLUSTER_GPUS)
    fabric_layers = models.PositiveSmallIntegerField(choices=FabricLayers.choices, default=FabricLayers.TWO)
    switch = models.ForeignKey(Switch, on_delete=models.PROTECT, related_name="plans")
    storage_node_type = models.ForeignKey(
        StorageNodeType, on_delete=models.PROTECT, null=True, blank=True, related_name="plans"
    )
    storage_node_count = positive_int("Storage nodes.", default=0, minimum=0)
    endpoint_cable = models.ForeignKey(
        LinkPart, on_delete=models.PROTECT, null=True, blank=True, related_name="+",
        help_text=("The part at each NIC: a cable to its leaf, or an optical module (then a fibre and a leaf module "
                   "port too)."),
    )
    transceiver = models.ForeignKey(
        LinkPart, on_delete=models.PROTECT, null=True, blank=True, related_name="+",
        help_text=("Optical module in the switches: at each end of a switch-to-switch link, and at the leaf end of "
                   "an optical NIC link."),
    )
    fiber = models.ForeignKey(
        LinkPart, on_delete=models.PROTECT, null=True, blank=True, related_name="+",
        help_text="Fibre of each switch-to-switch link and optical NIC link.",
    )
    price_book = models.ForeignKey(PriceBook, on_delete=models.PROTECT, related_name="plans")
    pue = models.FloatField(null=True, blank=True,
                            help_text="Overrides the price book's PUE (neither: the hall's).")
    hall = models.CharField(max_length=16, choices=list(HALL_PUE_BASIS.items()), default=HALLS[0],
                            help_text="The data hall's class: its PUE applies where neither the plan nor the price "
                                      "book gives one.")
    rack_power_limit_w = models.FloatField(
        null=True, blank=True, validators=[validate_positive],
        help_text="The site's power and cooling budget per rack: sets nodes per rack where neither the node type "
                  "nor the plan does.")
    nodes_per_rack = count_field("Compute nodes the site puts in a rack, where the node type does not fix it (empty: "
                                 "as many as the rack power limit holds, else a 12 kW rack).", null=True)
    failure_profile = models.CharField(max_length=16, choices=FailureProfile.choices, default=FailureProfile.FIRE_FLYER)

    @property
    def gpu_count(self) -> int:
        return self.node_count * self.node_type.accelerators_per_node

    def announced_parts(self) -> list[dict]:
        """The plan's parts whose figures are a vendor's announcement, not a shipping part's (confidence
        "announced"): each page that shows the plan's figures says so, with the part's source."""
        node = self.node_type
        parts = (("compute node", node), ("accelerator", node.accelerator), ("CPU", node.cpu),
                 ("NIC", node.compute_nic), ("switch", self.switch))
        return [{"part": role, "slug": part.slug, "name": part.name, "source": part.source}
                for role, part in parts if part is not None and part.confidence == Confidence.ANNOUNCED]

    def clean(self):
        errors: dict[str, str] = {}
        if self.pue is not None and (not math.isfinite(self.pue) or self.pue < 1):
            errors["pue"] = "must be a finite number of at least 1.0"
        if self.zones > 1 and not self.interzone_switches:
            errors["interzone_switches"] = "zones need at least one inter-zone switch to join them"
        if self.zones == 1 and self.interzone_switches:
            errors["interzone_switches"] = "a single zone has nothing to join"
        if self.storage_node_count and self.storage_node_type_id is None:
            errors["storage_node_type"] = "required when the plan has storage nodes"
        if self.storage_node_count and self.external_storage_write_gbyte_s is not None:
            errors["external_storage_write_gbyte_s"] = ("is for a storage system outside the plan: this plan has "
                                                        "storage nodes; give one or the other")
        if self.external_storage_read_gbyte_s is not None and self.external_storage_write_gbyte_s is None:
            errors["external_storage_read_gbyte_s"] = "needs the external system's write rate as well"
        fixed = self.node_type.nodes_per_rack if self.node_type_id else None
        if self.nodes_per_rack is not None and fixed is not None and self.nodes_per_rack != fixed:
            errors["nodes_per_rack"] = f"{self.node_type.name} fixes {fixed} nodes a rack: leave this empty"
        if self.failure_profile == self.FailureProfile.PER_NODE_RATE and self.failures_per_1000_node_days is None:
            errors["failures_per_1000_node_days"] = "required by the per-node-rate profile"
        elif self.category_rates:
            errors.update(self._rate_errors())
        if self.node_type_id and self.node_count and self.gpu_count > MAX_CLUSTER_GPUS:
            errors["node_count"] = (f"{self.gpu_count:,} GPUs ({self.node_count:,} nodes of "
                                    f"{self.node_type.accelerators_per_node}); at most {MAX_CLUSTER_GPUS:,} in a plan")
        elif self.node_type_id and self.node_count and self.node_type.scaleup_domain_gpus:
            per_domain = self.node_type.scaleup_domain_gpus // self.node_type.accelerators_per_node
            if self.node_count % per_domain:
                errors["node_count"] = (f"{self.node_type.name} comes in scale-up domains of {per_domain} nodes: "
                                        f"give a multiple of {per_domain}")
        errors.update(self._price_book_errors())
        if self.node_type_id and self.switch_id:
            part_errors = self.part_errors()
            errors.update(part_errors)
            if self.node_count and not part_errors and "node_count" not in errors:
                errors.update(self._fabric_errors())
        if errors:
            raise ValidationError(errors)

    def _price_book_errors(self) -> dict[str, str]:
        """A plan is priced from a shared book or its owner's own, and a plan priced from its owner's
        own book stays private: others never see a user's quotes through it."""
        book = self.price_book if self.price_book_id else None
        if book is None or book.owner_id is None:
            return {}
        if self.owner_id is not None and book.owner_id != self.owner_id:  # no owner yet: the API's request's
            return {"price_book": f"no price book '{book.slug}' is yours or shared: choose a shared one or your own"}
        if self.visibility == Visibility.SHARED:
            return {"visibility": "a plan priced from your own price book stays private: copy your quotes into a "
                                  "shared book with a catalogue editor, or price it from a shared book"}
        return {}

    @property
    def optical_nic_links(self) -> bool:
        """Whether each NIC reaches its leaf through optics (the part at the NIC is a module, with a
        fibre and a leaf module port), as DGX SuperPOD cables NDR, rather than one cable."""
        return self.endpoint_cable is not None and self.endpoint_cable.kind == LinkPartKind.TRANSCEIVER

    def part_errors(self) -> dict[str, str]:
        """Parts that cannot be cabled together. The computation NIC speaks the switch's protocol
        at no more than its port speed (a slower NIC takes a port, or a breakout of one); the part
        at each NIC, a copper or active optical cable (one port) or an optical module (the NIC's end
        of an optical link; a twin-port one in a node's twin-port cage), runs at the NIC's rate on
        each of its ports; a switch transceiver (a module) runs at the port speed on each of its
        ports (a twin-port module: two, as in Quantum-2's 2 x 400G OSFP cages); the fibre is a
        fibre."""
        nic, switch = self.node_type.compute_nic, self.switch
        port = switch.port_speed_gbit_s
        errors = {}
        if nic.protocol != switch.protocol:
            errors["switch"] = (
                f"{switch.name} is {switch.get_protocol_display()} but the nodes' NIC is {nic.get_protocol_display()}"
            )
        elif nic.line_rate_gbit_s > port:
            errors["switch"] = (f"{switch.name} ports ({port:g} Gb/s) are slower than the "
                                f"nodes' NICs ({nic.line_rate_gbit_s:g} Gb/s)")
        cable, optic = self.endpoint_cable, self.transceiver
        if cable is not None and cable.ports > 1 and not self.optical_nic_links:
            errors["endpoint_cable"] = f"serves {cable.ports} ports; a cable serves one NIC port"
        elif cable is not None and cable.speed_gbit_s != cable.ports * nic.line_rate_gbit_s:
            errors["endpoint_cable"] = (f"runs at {_per_port(cable)}; the computation NIC ({nic.name}) "
                                        f"runs at {nic.line_rate_gbit_s:g} Gb/s")
        if optic is not None and optic.speed_gbit_s != optic.ports * port:
            errors["transceiver"] = f"runs at {_per_port(optic)}; the switch's ports run at {port:g} Gb/s"
        for field, kinds in PART_KINDS.items():  # the wrong kind of part says so before its speed
            part = getattr(self, field)
            if part is not None and part.kind not in kinds:
                errors[field] = (f"{part.name} ({part.get_kind_display().lower()}) cannot go here: it takes "
                                 f"{' or '.join(LinkPartKind(kind).label.lower() for kind in kinds)}")
        return errors

    def _rate_errors(self) -> dict[str, str]:
        rates = self.category_rates
        if not isinstance(rates, dict):
            return {"category_rates": "must be an object of category keys to rates"}
        for key, value in rates.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                return {"category_rates": f"{key}: must be a number of events per unit-hour, zero or more"}
            try:
                as_array(value, key)
            except ScenarioError as error:
                return {"category_rates": f"{key}: {error.reason}"}
        scope = self.node_type.failure_scope() if self.node_type_id else {}
        try:
            reliability.build_categories(self.failure_profile,
                                         failures_per_1000_node_days=self.failures_per_1000_node_days,
                                         rates=rates, **scope)
        except ScenarioError as error:
            return {"category_rates": error.reason}
        return {}

    def fabric_arguments(self) -> tuple[tuple, dict]:
        """The plan's fabrics as :func:`simcore.stages.cluster.fabric_trees` and
        :func:`~simcore.stages.cluster.fabric_wiring` take them: (node count, compute NICs per node,
        storage NICs per node, storage nodes, NICs per storage node) and the layout."""
        node = self.node_type
        storage = self.storage_node_type if self.storage_node_type_id else None
        counts = (self.node_count, node.compute_nics_per_node, node.storage_nics_per_node,
                  self.storage_node_count if storage else 0, storage.nics_per_node if storage else 0)
        return counts, dict(storage_network=self.storage_network, radix=self.switch.radix, layers=self.fabric_layers,
                            zones=self.zones, planes=self.planes, rails=self.rails,
                            oversubscription=self.oversubscription, interzone_switches=self.interzone_switches,
                            core_pods=self.core_pods)

    def _fabric_errors(self) -> dict[str, str]:
        node, switch = self.node_type, self.switch
        errors = {}
        if topology.leaf_down_ports(switch.radix, self.oversubscription) < 1:
            errors["oversubscription"] = f"leaves a {switch.radix}-port leaf no endpoint port"
        for field, _, reason in cluster.layout_rules(node.compute_nics_per_node, self.planes, self.rails, switch.radix,
                                                     self.oversubscription):
            errors.setdefault(field, reason)
        if errors:
            return errors
        counts, layout = self.fabric_arguments()
        trees = cluster.fabric_trees(*counts, **layout)
        if not bool(trees.main.fits):
            errors["node_count"] = (
                f"{int(trees.main.endpoints)} endpoints do not fit a {self.fabric_layers}-layer fat-tree of "
                f"{switch.radix}-port switches with {self.zones} zone(s) and {self.planes} plane(s), which holds "
                f"{int(trees.main.capacity_endpoints)}"
            )
        if not bool(trees.storage_plane.fits):
            errors["storage_node_count"] = (
                f"{int(trees.storage_plane.endpoints)} endpoints do not fit a separate storage plane of "
                f"{switch.radix}-port switches (three layers at most)")
        return errors


class Workload(OwnedEntry, declared_base("DeclaredWorkloadFields", WORKLOAD_SECTIONS, __name__)):
    """A training job: a dense or MoE transformer described by its shape, or a CNN by its FLOPs,
    with its batch and parallel layout. The engine derives parameters, FLOPs and step time from
    these fields (docs/engine.md); nothing here is an efficiency to guess. Its fields are the
    engine's workload fields, declared once in :data:`simcore.document.SPEC`
    (:mod:`planner.models.declared`)."""

    def clean(self):
        """The engine's rules of a workload on its own, every bad field with its reason
        (:func:`simcore.stages.job.workload_errors`: the one rule book of the API, the editor,
        the preset loader and the engine)."""
        errors = job.workload_errors(self.engine_document())
        if errors:
            raise ValidationError(errors)

    def engine_document(self) -> dict:
        """The engine's workload document: each field of simcore's workload spec, from its column."""
        return section_values(self, WORKLOAD_SECTIONS, "workload")


def _per_port(part) -> str:
    """A link part's rate as a port sees it: "400 Gb/s", or "2 x 400 Gb/s" for a twin-port module."""
    rate = f"{part.speed_gbit_s / part.ports:g} Gb/s"
    return f"{part.ports} x {rate}" if part.ports > 1 else rate


PART_KINDS = {"endpoint_cable": (LinkPartKind.DAC, LinkPartKind.AOC, LinkPartKind.TRANSCEIVER),
              "transceiver": (LinkPartKind.TRANSCEIVER,),
              "fiber": (LinkPartKind.FIBER,)}
# Choice sets the OpenAPI schema gives names (SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]).
WORKLOAD_KINDS = Workload._meta.get_field("kind").choices
GRADIENT_COLLECTIVES = Workload._meta.get_field("collective").choices

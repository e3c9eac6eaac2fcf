"""The hardware catalogue: parts, node types and price books.

Every entry carries a ``slug``, the ``source`` of its figures and a ``confidence`` flag. A figure
that no source gives stays null. Units are in the field names: ``_tflops`` dense Tensor-Core
TFLOPS, ``_gbyte_s`` gigabytes per second, ``_gbit_s`` gigabits per second, ``_w`` watts,
``_gb`` gigabytes (10^9 bytes), ``_tb`` terabytes (10^12 bytes).

Validation lives in ``clean()`` (plus field validators) and runs from the admin, the API and
the seed loader alike.
"""
import math
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from planner.choices import (
    AcceleratorFamily,
    Confidence,
    Cooling,
    FormFactor,
    LinkPartKind,
    NetworkProtocol,
    NVLinkTopology,
    PartKind,
    RentTerm,
    ScaleUpLink,
)
from planner.models.visibility import VisibleQuerySet
from simcore.formulas.devices import FAMILIES


def validate_positive(value):
    """A finite number greater than zero."""
    if value is None:
        return
    if not math.isfinite(float(value)) or value <= 0:
        raise ValidationError("must be a finite number greater than zero", code="not_positive")


def validate_non_negative(value):
    if value is None:
        return
    if not math.isfinite(float(value)) or value < 0:
        raise ValidationError("must be a finite number of zero or more", code="negative")


def positive_float(help_text: str, *, null: bool = False) -> models.FloatField:
    return models.FloatField(
        validators=[validate_positive], null=null, blank=null, help_text=help_text
    )


def count_field(help_text: str, *, minimum: int = 1, default=None, null: bool = False) -> models.PositiveIntegerField:
    """A whole number of at least ``minimum``; ``null``: may be left empty."""
    kwargs = {"default": default} if default is not None else {}
    if null:
        kwargs.update(null=True, blank=True)
    return models.PositiveIntegerField(
        validators=[MinValueValidator(minimum)], help_text=help_text, **kwargs
    )


PCIE_GENERATIONS = [(g, f"PCIe {g}.0") for g in (3, 4, 5, 6)]
PCIE_LANES = [(n, f"x{n}") for n in (4, 8, 16)]


class CatalogEntry(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    vendor = models.CharField(max_length=100)
    source = models.TextField(help_text="Where the figures come from (document, table, URL).")
    confidence = models.CharField(max_length=16, choices=Confidence.choices)
    notes = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["slug"]

    def __str__(self):
        return self.name


class Accelerator(CatalogEntry):
    """A GPU or NPU. Peaks are dense (not 2:4-sparse) Tensor-Core figures."""

    form_factor = models.CharField(max_length=8, choices=FormFactor.choices)
    family = models.CharField(
        max_length=16, choices=AcceleratorFamily.choices, default=AcceleratorFamily.AMPERE,
        help_text="Sets the measured GEMM, HBM, attention and scale-up shares the training model uses.")
    sm_count = count_field("Streaming multiprocessors (NVIDIA) or AI cube cores (Ascend): GEMM wave quantisation.",
                           null=True)
    peak_fp64_tflops = positive_float("Dense FP64 Tensor-Core peak.", null=True)
    peak_tf32_tflops = positive_float("Dense TF32 peak.", null=True)
    peak_fp16_tflops = positive_float("Dense FP16/BF16 peak.")
    peak_fp8_tflops = positive_float("Dense FP8 peak.", null=True)
    peak_fp4_tflops = positive_float("Dense FP4 (NVFP4) peak for training GEMMs; empty: no FP4 tensor cores.",
                                     null=True)
    memory_gb = positive_float("Device memory (HBM) size as the datasheet states it.", null=True)
    memory_gib = positive_float(
        "HBM as the device reports it (nvidia-smi's total MiB / 1024), GiB: what the training model's "
        "fit check uses.", null=True)
    memory_bandwidth_gbyte_s = positive_float("Device memory bandwidth.", null=True)
    tdp_w = positive_float("Board power limit (TDP).")
    full_clock_power_w = positive_float(
        "Power the chip draws running dense GEMM at its maximum boost clock. Above the TDP the "
        "board's power cap lowers the sustained clock; null means the TDP never binds.",
        null=True,
    )
    scaleup_link = models.CharField(max_length=16, choices=ScaleUpLink.choices)
    scaleup_bw_gbyte_s = positive_float(
        "Scale-up bandwidth per device, both directions together, as vendors quote it.", null=True
    )
    host_pcie_gen = models.PositiveSmallIntegerField(choices=PCIE_GENERATIONS)
    host_pcie_lanes = models.PositiveSmallIntegerField(choices=PCIE_LANES, default=16)

    def clean(self):
        errors = {}
        has_link = self.scaleup_link != ScaleUpLink.NONE
        if has_link and self.scaleup_bw_gbyte_s is None:
            errors["scaleup_bw_gbyte_s"] = "required when the accelerator has a scale-up link"
        if not has_link and self.scaleup_bw_gbyte_s is not None:
            errors["scaleup_bw_gbyte_s"] = "must be empty when scale-up link is 'none'"
        if (
            self.full_clock_power_w is not None
            and self.tdp_w is not None
            and self.full_clock_power_w < self.tdp_w
        ):
            errors["full_clock_power_w"] = "cannot be below the TDP (the cap would never bind)"
        peaks = [self.peak_tf32_tflops, self.peak_fp16_tflops, self.peak_fp8_tflops, self.peak_fp4_tflops]
        known = [p for p in peaks if p is not None]
        if known != sorted(known):
            errors["peak_fp16_tflops"] = "peaks must not fall with lower precision (TF32 <= FP16 <= FP8 <= FP4)"
        if errors:
            raise ValidationError(errors)


class CPU(CatalogEntry):
    """A host CPU (one socket)."""

    cores = count_field("Cores per socket.")
    memory_channels = count_field("Memory channels per socket.")
    memory_type = models.CharField(max_length=32, help_text="For example DDR4-3200.")
    memory_bandwidth_gbyte_s = positive_float("Peak memory bandwidth per socket.")
    pcie_gen = models.PositiveSmallIntegerField(choices=PCIE_GENERATIONS)
    pcie_lanes = count_field("PCIe lanes per socket.")
    root_port_bw_gbyte_s = positive_float(
        "Bandwidth from one PCIe root port into the CPU's internal fabric.", null=True
    )
    chained_write = models.BooleanField(
        null=True,
        blank=True,
        help_text="Supports PCIe chained writes (fast GPU-to-NIC peer-to-peer); null if unknown.",
    )
    tdp_w = positive_float("Thermal design power.", null=True)
    host_op_us = positive_float(
        "Host time per eager PyTorch op on this CPU's GPU node, measured (NVIDIA dgxc-benchmarking "
        "cpu_overhead); null: an x86 server's 7.66 us.",
        null=True,
    )
    host_module_us = positive_float(
        "Host time of one Transformer Engine module's forward (a Linear) on this CPU's GPU node, measured "
        "(TransformerEngine issue 2053); null: an x86 server's 13.5 us.",
        null=True,
    )


class NIC(CatalogEntry):
    line_rate_gbit_s = positive_float("Line rate per port.")
    ports = count_field("Network ports.")
    protocol = models.CharField(max_length=8, choices=NetworkProtocol.choices)
    host_pcie_gen = models.PositiveSmallIntegerField(choices=PCIE_GENERATIONS)
    host_pcie_lanes = models.PositiveSmallIntegerField(choices=PCIE_LANES, default=16)
    power_w = positive_float("Typical power.", null=True)


def rack_units_field():
    return models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="Height in rack units (U), from the datasheet or user guide; empty: unknown.")


class Switch(CatalogEntry):
    rack_units = rack_units_field()
    radix = count_field("Ports at the quoted port speed.", minimum=4)
    port_speed_gbit_s = positive_float("Speed of each port.")
    protocol = models.CharField(max_length=8, choices=NetworkProtocol.choices)
    power_w = positive_float("Typical box power.", null=True)

    def clean(self):
        if self.radix is not None and self.radix % 2:
            raise ValidationError(
                {"radix": "must be even: a fat-tree splits a switch's ports into equal down and up halves"}
            )


class LinkPart(CatalogEntry):
    """A cable or an optical transceiver module."""

    kind = models.CharField(max_length=16, choices=LinkPartKind.choices)
    speed_gbit_s = positive_float("Data rate.")
    ports = count_field("Ports one module serves (2: a twin-port OSFP); its data rate over them is each port's.",
                        default=1)
    reach_m = positive_float("Maximum length or reach.", null=True)
    form_factor = models.CharField(max_length=32, blank=True, default="")
    power_w = positive_float("Typical power per cable end or module.", null=True)


PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


class ComputeNodeType(CatalogEntry):
    """A server model: accelerators, CPUs, memory, NICs and how they are wired."""

    accelerator = models.ForeignKey(Accelerator, on_delete=models.PROTECT, related_name="node_types")
    rack_units = rack_units_field()
    accelerators_per_node = count_field("Accelerators per node.")
    cpu = models.ForeignKey(
        CPU, on_delete=models.PROTECT, related_name="node_types", null=True, blank=True
    )
    cpus_per_node = count_field("CPU sockets per node.", minimum=0, default=2)
    host_memory_gb = positive_float("Host memory.", null=True)
    host_memory_channels = count_field("Populated memory channels, all sockets.", minimum=0, default=0)
    host_memory_practical_bw_gbyte_s = positive_float(
        "Measured achievable host memory bandwidth, all sockets.", null=True
    )
    compute_nic = models.ForeignKey(NIC, on_delete=models.PROTECT, related_name="compute_node_types")
    compute_nics_per_node = count_field("NICs on the computation network.")
    storage_nic = models.ForeignKey(
        NIC, on_delete=models.PROTECT, related_name="storage_node_types_as_client", null=True, blank=True
    )
    storage_nics_per_node = count_field(
        "NICs on a separate storage network (0 when storage shares the computation network).",
        minimum=0,
        default=0,
    )
    nvlink_topology = models.CharField(max_length=16, choices=NVLinkTopology.choices)
    root_ports_shared_by_two_gpus = count_field(
        "PCIe root ports that carry two GPUs (no PCIe switch).", minimum=0, default=0
    )
    gpu_nic_p2p_limit_gbyte_s = positive_float(
        "Measured ceiling of GPU-to-NIC peer-to-peer transfers (GPUDirect RDMA).", null=True
    )
    measured_power_w = positive_float("Measured average node power under training load.", null=True)
    max_power_w = positive_float("Vendor maximum node power.", null=True)
    scaleup_domain_gpus = count_field("GPUs on one all-to-all scale-up fabric when it spans nodes (a GB200 NVL72 "
                                      "rack: 72); empty: the node's GPUs.", null=True)
    nodes_per_rack = count_field("Nodes in one rack when the system fixes it (a rack-scale system); empty: as the "
                                 "plan's rack power limit allows, else one per scale-up domain.", null=True)
    rack_extra_power_w = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0)],
        help_text="Power of a rack's parts outside its nodes (NVLink switch trays, power shelves).")
    rack_extra_units = models.PositiveSmallIntegerField(
        default=0, help_text="Height (U) a rack's parts outside its nodes take (an NVL72's 9 NVLink switch trays "
                             "and 8 power shelves: 17U).")
    network_racks_per_domain = models.PositiveIntegerField(
        default=0, help_text="Racks of scale-up switches beside each domain's compute racks (CloudMatrix 384: 4 "
                             "beside its 12 compute racks).")
    scaleup_optics_per_gpu = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0)],
        help_text="Optical modules an optical scale-up network has per GPU, its GPUs' and its switches' ends together "
                  "(CloudMatrix 384: 6,912 for 384 NPUs, 18 each); 0: a copper scale-up (NVLink) or none.")
    scaleup_optic = models.ForeignKey(
        "LinkPart", on_delete=models.PROTECT, related_name="scaleup_node_types", null=True, blank=True,
        help_text="The optical scale-up network's module: its power and price in the bill.")
    cooling = models.CharField(max_length=8, choices=Cooling.choices, default=Cooling.AIR)
    nvlink_sharp = models.BooleanField(
        default=False, help_text="The NVLink switches reduce in the network (NVLink SHARP: NVSwitch 3 and later).")
    gpu_pci_bus_ids = models.JSONField(
        default=list, blank=True,
        help_text="Each GPU's PCI address (domain:bus:device.function) in nvidia-smi's order, as the node's kernel "
                  "log names it in Xid lines, where published (the source in the notes); empty: none published.")

    def clean(self):
        errors = {}
        n = self.accelerators_per_node or 0
        buses = self.gpu_pci_bus_ids or []
        if buses and (not isinstance(buses, list) or len(buses) != n or len(set(buses)) != n
                      or not all(isinstance(b, str) and PCI_ADDRESS.fullmatch(b) for b in buses)):
            errors["gpu_pci_bus_ids"] = f"{n} distinct PCI addresses (dddd:bb:dd.f, lower case), one per GPU"
        if self.scaleup_domain_gpus is not None and n:
            if self.nvlink_topology != NVLinkTopology.ALL_TO_ALL:
                errors["scaleup_domain_gpus"] = "needs an all-to-all scale-up fabric"
            elif self.scaleup_domain_gpus % n:
                errors["scaleup_domain_gpus"] = f"must be a whole number of {n}-GPU nodes"
        if self.scaleup_optics_per_gpu and self.scaleup_optic_id is None:
            errors["scaleup_optic"] = "name the module an optical scale-up network is built from"
        if self.nvlink_sharp and self.nvlink_topology != NVLinkTopology.ALL_TO_ALL:
            errors["nvlink_sharp"] = "in-network reduction needs NVLink switches (an all-to-all topology)"
        if self.root_ports_shared_by_two_gpus and 2 * self.root_ports_shared_by_two_gpus > n:
            errors["root_ports_shared_by_two_gpus"] = (
                f"{self.root_ports_shared_by_two_gpus} shared ports need "
                f"{2 * self.root_ports_shared_by_two_gpus} GPUs, the node has {n}"
            )
        if self.nvlink_topology == NVLinkTopology.PAIRS and n % 2:
            errors["nvlink_topology"] = "bridged pairs need an even number of accelerators"
        if (
            self.nvlink_topology != NVLinkTopology.NONE
            and self.accelerator_id is not None
            and self.accelerator.scaleup_link == ScaleUpLink.NONE
        ):
            errors["nvlink_topology"] = "the accelerator has no scale-up link"
        if (self.storage_nic_id is None) != (not self.storage_nics_per_node):
            errors["storage_nics_per_node"] = "give a storage NIC and a count above 0 together, or neither"
        if self.cpu_id is not None and not self.cpus_per_node:
            errors["cpus_per_node"] = "must be at least 1 when a CPU is given"
        if errors:
            raise ValidationError(errors)

    def failure_scope(self) -> dict:
        """What decides which failure categories can happen on these nodes, as
        :func:`simcore.formulas.reliability.build_categories` takes it: NVIDIA Xids on NVIDIA GPUs only, the
        NVLink Xid only with NVLink, the scale-up domain's own failure where it spans nodes."""
        n = self.accelerators_per_node
        return {"xids": FAMILIES[self.accelerator.family].vendor == "NVIDIA",
                "nvlink": self.nvlink_topology != NVLinkTopology.NONE,
                "domain_spans_nodes": bool(self.scaleup_domain_gpus and self.scaleup_domain_gpus > n)}


class StorageNodeType(CatalogEntry):
    rack_units = rack_units_field()
    cpu = models.ForeignKey(
        CPU, on_delete=models.PROTECT, related_name="storage_node_types", null=True, blank=True
    )
    cpus_per_node = count_field("CPU sockets per node.", minimum=0, default=1)
    memory_gb = positive_float("Host memory.", null=True)
    ssd_count = count_field("SSDs per node.")
    ssd_capacity_tb = positive_float("Capacity of one SSD.")
    ssd_read_gbyte_s = positive_float("Sequential read bandwidth of one SSD.", null=True)
    ssd_write_gbyte_s = positive_float("Sequential write bandwidth of one SSD.", null=True)
    nic = models.ForeignKey(NIC, on_delete=models.PROTECT, related_name="storage_node_types")
    nics_per_node = count_field("NICs per storage node.")
    measured_power_w = positive_float("Measured average node power.", null=True)


class PriceBook(CatalogEntry):
    """Unit prices for parts plus the energy price and PUE used for running costs. A shared
    catalogue book has no owner (catalogue editors keep it); a user's own book (their quotes) is
    seen and changed by its owner alone, and priced plans of theirs may use it."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True,
                              related_name="price_books", help_text="The owner of a user's own book; null: shared.")
    version = models.PositiveIntegerField(
        default=1, editable=False,
        help_text="Raised by one at every change of the book or its prices through the API; its ETag, sent back "
                  "as If-Match, makes a write that did not see the latest change answer 412.")

    currency = models.CharField(
        max_length=8, help_text="ISO 4217 code, or REL for relative units as in a paper's tables."
    )
    price_date = models.DateField()
    energy_price_per_kwh = models.DecimalField(
        max_digits=10, decimal_places=5, null=True, blank=True, validators=[validate_non_negative]
    )
    pue = models.FloatField(
        null=True, blank=True, help_text="Power usage effectiveness (facility power / IT power)."
    )

    objects = VisibleQuerySet.as_manager()

    def clean(self):
        if self.pue is not None and (not math.isfinite(self.pue) or self.pue < 1):
            raise ValidationError({"pue": "must be a finite number of at least 1.0"})
        if self.currency and not self.currency.isupper():
            raise ValidationError({"currency": "use an upper-case code such as USD, or REL"})


class PriceItem(models.Model):
    """The unit price of one catalogue part in one price book."""

    price_book = models.ForeignKey(PriceBook, on_delete=models.CASCADE, related_name="items")
    part_kind = models.CharField(max_length=16, choices=PartKind.choices)
    part_slug = models.SlugField(max_length=100)
    unit_price = models.DecimalField(max_digits=16, decimal_places=4, validators=[validate_non_negative])
    basis = models.TextField(help_text="How this price was obtained.")
    confidence = models.CharField(max_length=16, choices=Confidence.choices)
    price_date = models.DateField(null=True, blank=True,
                                  help_text="When the price was stated (a listing's or quote's date); null: the "
                                            "book's date.")
    source_url = models.URLField(max_length=500, blank=True, default="",
                                 help_text="Where the price was stated (an archived listing, a quote's reference).")
    low_price = models.DecimalField(max_digits=16, decimal_places=4, null=True, blank=True,
                                    validators=[validate_non_negative],
                                    help_text="The low end of an estimated price (an estimate needs one); null: "
                                              "the price itself (a quote or listing).")
    high_price = models.DecimalField(max_digits=16, decimal_places=4, null=True, blank=True,
                                     validators=[validate_non_negative],
                                     help_text="The high end of an estimated price; null: the price itself.")
    term = models.CharField(max_length=16, choices=RentTerm.choices, blank=True, default="",
                            help_text="A GPU-hour's rental term (required for GPU-hour rows, blank otherwise).")
    provider = models.CharField(max_length=200, blank=True, default="",
                                help_text="Who rents at this GPU-hour price (a cloud or GPU provider; an estimate "
                                          "names what it is derived from). Required for GPU-hour rows.")

    class Meta:
        ordering = ["part_kind", "part_slug", "term"]
        constraints = [
            models.UniqueConstraint(
                fields=["price_book", "part_kind", "part_slug", "term"], name="unique_price_per_part_and_term"
            )
        ]

    def __str__(self):
        return f"{self.part_kind}:{self.part_slug}{f' ({self.term})' if self.term else ''} = {self.unit_price}"

    @property
    def estimated(self) -> bool:
        return self.confidence == Confidence.ESTIMATE

    def clean(self):
        model = PART_MODELS.get(self.part_kind)
        if model is not None and self.part_slug and not model.objects.filter(slug=self.part_slug).exists():
            raise ValidationError(
                {"part_slug": f"no {self.get_part_kind_display().lower()} with slug '{self.part_slug}'"}
            )
        if self.part_kind == PartKind.GPU_HOUR and not self.term:
            raise ValidationError({"term": "a GPU-hour price needs its rental term"})
        if self.part_kind == PartKind.GPU_HOUR and not self.provider.strip():
            raise ValidationError({"provider": "a GPU-hour price names who rents at it"})
        if self.part_kind != PartKind.GPU_HOUR and self.term:
            raise ValidationError({"term": "only a GPU-hour price has a rental term"})
        if self.part_kind != PartKind.GPU_HOUR and self.provider:
            raise ValidationError({"provider": "only a GPU-hour price has a provider"})
        self._clean_band()

    def _clean_band(self):
        """An estimate states its low and high; a band holds its price."""
        low, high = self.low_price, self.high_price
        if (low is None) != (high is None):
            raise ValidationError({"low_price" if low is None else "high_price": "give both ends of the band or "
                                                                                 "neither"})
        if low is None:
            if self.estimated:
                raise ValidationError({"low_price": "an estimate needs its low and high prices"})
            return
        if self.unit_price is not None and not low <= self.unit_price <= high:
            raise ValidationError({"low_price": f"the band {low}-{high} must hold the price {self.unit_price}"})


PART_MODELS = {
    PartKind.ACCELERATOR: Accelerator,
    PartKind.CPU: CPU,
    PartKind.NIC: NIC,
    PartKind.SWITCH: Switch,
    PartKind.LINK_PART: LinkPart,
    PartKind.COMPUTE_NODE: ComputeNodeType,
    PartKind.STORAGE_NODE: StorageNodeType,
    PartKind.GPU_HOUR: Accelerator,  # renting one of these GPUs for an hour
}

"""Choice lists shared by the catalogue models, the seed schemas and the API."""
from django.db import models

from simcore.formulas.devices import FAMILIES


class Confidence(models.TextChoices):
    DATASHEET = "datasheet", "Vendor datasheet"
    SECONDARY = "secondary", "Secondary source"
    MEASURED = "measured", "Published measurement"
    ESTIMATE = "estimate", "Estimate (basis in notes)"
    UNVERIFIED = "unverified", "Unverified"
    ANNOUNCED = "announced", "Announced, not shipping (vendor's stated figures)"


class FormFactor(models.TextChoices):
    SXM = "sxm", "SXM / OAM module"
    PCIE = "pcie", "PCIe card"
    OTHER = "other", "Other"


class ScaleUpLink(models.TextChoices):
    NONE = "none", "none (PCIe through the host)"
    NVLINK_BRIDGE = "nvlink-bridge", "NVLink bridge (pairs)"
    NVLINK3 = "nvlink3", "NVLink 3"
    NVLINK4 = "nvlink4", "NVLink 4"
    NVLINK5 = "nvlink5", "NVLink 5"
    NVLINK6 = "nvlink6", "NVLink 6"
    XGMI = "xgmi", "AMD Infinity Fabric (xGMI)"
    HCCS = "hccs", "Huawei HCCS"
    UB = "ub", "Huawei Unified Bus (CloudMatrix)"


class NetworkProtocol(models.TextChoices):
    INFINIBAND = "ib", "InfiniBand"
    ROCE = "roce", "RoCE (Ethernet)"


class LinkPartKind(models.TextChoices):
    DAC = "dac", "Copper direct-attach cable"
    AOC = "aoc", "Active optical cable"
    FIBER = "fiber", "Passive fibre cable"
    TRANSCEIVER = "transceiver", "Optical transceiver module"


class Cooling(models.TextChoices):
    AIR = "air", "Air"
    LIQUID = "liquid", "Liquid (direct to chip)"


class NVLinkTopology(models.TextChoices):
    NONE = "none", "none (no NVLink)"
    PAIRS = "pairs", "Bridged pairs"
    ALL_TO_ALL = "all-to-all", "All-to-all (NVSwitch)"


class PartKind(models.TextChoices):
    """Catalogue tables a price-book item may price."""

    ACCELERATOR = "accelerator", "Accelerator"
    CPU = "cpu", "CPU"
    NIC = "nic", "NIC"
    SWITCH = "switch", "Switch"
    LINK_PART = "link-part", "Cable or transceiver"
    COMPUTE_NODE = "compute-node", "Compute node type"
    STORAGE_NODE = "storage-node", "Storage node type"
    GPU_HOUR = "gpu-hour", "GPU-hour rental (an accelerator's)"


class RentTerm(models.TextChoices):
    """How a GPU-hour is rented (simcore.formulas.cost.RENT_TERMS: what each commits to)."""

    ON_DEMAND = "on-demand", "on demand"
    CAPACITY_BLOCK = "capacity-block", "capacity block (1-182 days reserved)"
    ONE_YEAR = "1-year", "1-year commitment"
    THREE_YEAR = "3-year", "3-year commitment"


# A site plan's rental basis besides one term (planner.services.sites): each GPU at the cheapest of its
# terms that covers the run.
CHEAPEST_TERM = "cheapest"


AcceleratorFamily = models.TextChoices(
    "AcceleratorFamily", [(key.upper(), (key, family.name)) for key, family in FAMILIES.items()])

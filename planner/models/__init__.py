from .catalog import (
    CPU,
    NIC,
    PART_MODELS,
    Accelerator,
    ComputeNodeType,
    LinkPart,
    PriceBook,
    PriceItem,
    StorageNodeType,
    Switch,
)
from .measurements import CarriedCalibration, MeasuredRun, Measurement, TraceRead
from .plans import ClusterPlan, Visibility, VisibleQuerySet, Workload
from .sweeps import Sweep, SweepChunk
from .tokens import AccessToken

__all__ = [
    "CPU",
    "NIC",
    "PART_MODELS",
    "AccessToken",
    "CarriedCalibration",
    "Accelerator",
    "ClusterPlan",
    "ComputeNodeType",
    "LinkPart",
    "MeasuredRun",
    "Measurement",
    "PriceBook",
    "PriceItem",
    "StorageNodeType",
    "Switch",
    "Sweep",
    "SweepChunk",
    "TraceRead",
    "Visibility",
    "VisibleQuerySet",
    "Workload",
]

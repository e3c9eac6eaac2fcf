from .catalog import (
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

__all__ = [
    "CPU",
    "NIC",
    "Accelerator",
    "ComputeNodeType",
    "LinkPart",
    "PriceBook",
    "PriceItem",
    "StorageNodeType",
    "Switch",
]

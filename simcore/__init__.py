"""simcore: the planner's vectorized engine (NumPy only; no SciPy, Django, Celery or Channels).

Everything takes arrays that broadcast over scenario points and returns arrays. The scenario
document (docs/scenario-format.md) is the contract shared by the CLI, the REST API and sweeps.
"""
from simcore import budget, document, outputs
from simcore.errors import ScenarioError
from simcore.formulas.collectives import CollectiveParams, NodeIO, hfreduce, nccl_allreduce
from simcore.formulas.compute import ComputeParams, gemm_tflops, sustained_clock_factor
from simcore.formulas.devices import FAMILIES, DeviceFamily
from simcore.formulas.power import PowerParams
from simcore.formulas.reliability import (
    ettr_closed_form,
    ettr_monte_carlo,
    fire_flyer_categories,
    optimal_interval_s,
    spares_needed,
)
from simcore.formulas.topology import fat_tree
from simcore.formulas.training import TrainingParams
from simcore.formulas.transformer import gemm_efficiency
from simcore.stages import cluster, job
from simcore.stages.scenario import EngineParams, evaluate
from simcore.tools.charts import curves
from simcore.tools.references import validate
from simcore.tools.table import table, to_frame
from simcore.version import ENGINE_VERSION

__version__ = ENGINE_VERSION

__all__ = [
    "__version__",
    "budget",
    "cluster",
    "document",
    "job",
    "outputs",
    "CASES",
    "ENGINE_VERSION",
    "CollectiveParams",
    "ComputeParams",
    "DeviceFamily",
    "EngineParams",
    "FAMILIES",
    "NodeIO",
    "PowerParams",
    "ScenarioError",
    "TrainingParams",
    "curves",
    "ettr_closed_form",
    "ettr_monte_carlo",
    "evaluate",
    "fat_tree",
    "fire_flyer_categories",
    "gemm_efficiency",
    "gemm_tflops",
    "hfreduce",
    "nccl_allreduce",
    "optimal_interval_s",
    "spares_needed",
    "table",
    "to_frame",
    "sustained_clock_factor",
    "validate",
]


def __getattr__(name: str):
    """``CASES``, the validation record's cases, read on first use (:func:`simcore.tools.references.record`)."""
    if name == "CASES":
        from simcore.tools.references import record

        return record()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The scenario document: its fields, defaults and validation.

A scenario is a JSON object with ``cluster``, ``workload`` (optional) and ``options`` (optional);
docs/scenario-format.md describes every field. Numeric fields take a number or a list of numbers;
lists broadcast against each other (NumPy rules), so one document can describe a million
scenario points. Unknown keys, wrong types and out-of-range values raise :class:`ScenarioError`
naming the dotted field path.
"""
import re
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np

from simcore.arrays import as_array, where
from simcore.errors import ScenarioError
from simcore.formulas.attention import KERNELS as ATTENTION_KERNELS
from simcore.formulas.devices import FAMILY_KEYS
from simcore.formulas.power import HALLS
from simcore.formulas.reliability import DEFAULT_RESTART_PROFILE, FAILURE_PROFILES, RESTART_PROFILES
from simcore.formulas.training import FSDP_IMPLEMENTATIONS, SCHEDULES
from simcore.formulas.transformer import FP8_RECIPES


@dataclass(frozen=True)
class Num:
    """A numeric field. ``check`` is positive, non_negative or fraction; ``default`` None = required,
    ``nullable`` = may be null (unknown; stored as NaN); ``at_least``/``at_most`` bound it. Every
    rule also carries how people see it: ``label`` (empty: its key in words), ``group`` (the
    editor's section) and ``doc`` (its help)."""

    check: str = "positive"
    default: Any = None
    nullable: bool = False
    integer: bool = False
    required: bool = True
    scalar: bool = False
    at_most: float | None = None
    at_least: float | None = None
    unit: str = ""
    doc: str = ""
    label: str = ""
    group: str = ""


@dataclass(frozen=True)
class Text:
    pattern: str
    default: str
    doc: str = ""
    label: str = ""
    group: str = ""


@dataclass(frozen=True)
class Choice:
    """One of ``options`` (``labels``: how each reads, in the same order); ``default`` None = required."""

    options: tuple[str, ...]
    default: str | None = None
    doc: str = ""
    labels: tuple[str, ...] = ()
    label: str = ""
    group: str = ""


@dataclass(frozen=True)
class Flag:
    default: bool = False
    doc: str = ""
    label: str = ""
    group: str = ""


@dataclass(frozen=True)
class Rates:
    """A mapping of names to one non-negative number each (failure-category rate overrides)."""

    doc: str = ""
    label: str = ""
    group: str = ""


Rule = Num | Text | Choice | Flag | Rates


def label_of(key: str, rule: Rule) -> str:
    """How a field reads: its declared label, else its key in words."""
    return rule.label or key.replace("_", " ")


def grouped(group: str, fields: dict[str, Rule]) -> dict[str, Rule]:
    """``fields`` with their editor section set to ``group``."""
    return {key: replace(rule, group=group) for key, rule in fields.items()}


# The largest cluster the engine evaluates: 2^20 GPUs, about five times the largest clusters reported
# built by 2025 (about 200,000 GPUs). Past it the fabric, power and failure models have no evidence,
# and the per-part outputs (a NetBox file, a twin's GPUs) would no longer fit a request.
MAX_CLUSTER_GPUS = 1_048_576


# The parts a price book prices for the bill (each with an optional low and high).
PRICED_PARTS = ("node", "storage_node", "switch", "transceiver", "endpoint_cable", "fiber", "scaleup_optic")


def opt(check="positive", default=None, **kw):
    return Num(check=check, default=default, required=False, **kw)


SPEC: dict[str, Any] = {
    "cluster": {
        "node_count": Num(integer=True, unit="nodes", at_most=MAX_CLUSTER_GPUS,
                          doc="compute nodes; with the node's GPUs, at most 1,048,576 GPUs in all"),
        "node": {
            "gpus": Num(integer=True, unit="GPUs", doc="accelerators per node"),
            "accelerator": {
                "peak_tf32_tflops": opt(nullable=True, unit="TFLOPS"),
                "peak_fp16_tflops": Num(unit="TFLOPS", doc="dense FP16/BF16 peak"),
                "peak_fp8_tflops": opt(nullable=True, unit="TFLOPS"),
                "peak_fp4_tflops": opt(nullable=True, unit="TFLOPS",
                                       doc="dense NVFP4 peak; null: the part has no FP4 tensor cores"),
                "memory_gib": opt(nullable=True, unit="GiB",
                                  doc="HBM as the device reports it (nvidia-smi's total MiB / 1024: 79.65 on an "
                                      "\"80GB\" H100); null: unknown, no fit check"),
                "tdp_w": Num(unit="W"),
                "full_clock_power_w": opt(nullable=True, unit="W",
                                          doc="power at max clock on GEMM; null: the TDP never caps it"),
                "scaleup_bw_gbyte_s": opt("non_negative", 0.0, unit="GB/s", doc="both directions"),
                "family": Choice(FAMILY_KEYS, doc="required: the accelerator's family, whose measured GEMM, HBM, "
                                                  "attention and scale-up shares the engine uses"),
                "sm_count": opt(integer=True, nullable=True, doc="SMs (or AI cores); null: the family's flagship"),
                "memory_bandwidth_gbyte_s": opt(nullable=True, unit="GB/s",
                                                doc="peak HBM bandwidth; null: the family's flagship"),
            },
            "nvlink_topology": Choice(("none", "pairs", "all-to-all"), "none"),
            "nvlink_sharp": Flag(False, doc="the scale-up switches reduce in the network (NVLink SHARP): "
                                            "allreduces inside the domain gain the family's measured share"),
            "scaleup_domain_gpus": opt(integer=True, nullable=True, unit="GPUs",
                                       doc="GPUs on one all-to-all scale-up fabric (a GB200 NVL72 rack: 72); "
                                           "null: the node's GPUs"),
            "scaleup_optics_per_gpu": opt("non_negative", 0.0, unit="modules", label="scale-up optics per GPU",
                                          doc="optical modules an optical scale-up network has per GPU, its GPUs' "
                                              "and its switches' ends together (CloudMatrix 384: 6,912 for 384 "
                                              "NPUs, 18 each, SemiAnalysis); 0: a copper scale-up (NVLink) or none"),
            "scaleup_optic_w": opt("non_negative", nullable=True, unit="W", label="scale-up module power",
                                   doc="one scale-up module's typical draw; null: 8 W per 400 Gb/s of its rate"),
            "scaleup_optic_gbit_s": opt(default=800.0, unit="Gb/s", label="scale-up module rate",
                                        doc="one scale-up module's rate"),
            "cpus": opt("non_negative", 2, integer=True),
            "cpu_cores": opt(integer=True, nullable=True, doc="CPU cores, all sockets (host preprocessing)"),
            "cpu_tdp_w": opt(nullable=True, unit="W"),
            "host_op_us": opt(nullable=True, label="host time per launch", unit="us",
                              doc="host CPU time per eager PyTorch op, measured on the node's CPU (NVIDIA "
                                  "dgxc-benchmarking cpu_overhead: Xeon 8480C 7.66, Grace 14.55); null: an x86 "
                                  "server's 7.66"),
            "host_module_us": opt(nullable=True, label="host time per Transformer Engine module", unit="us",
                                  doc="host CPU time of one Transformer Engine module's forward (a Linear) on the "
                                      "node's CPU, measured (TransformerEngine issue 2053: Grace about 100, "
                                      "an H100 node's Xeon 13.5); null: the x86 server's 13.5"),
            "host_memory_bw_gbyte_s": opt(nullable=True, unit="GB/s", doc="measured practical, all sockets"),
            "host_memory_peak_bw_gbyte_s": opt(nullable=True, unit="GB/s",
                                               doc="peak, all sockets; used when no measurement is given"),
            "pcie_bw_gbyte_s": opt(default=27.0, unit="GB/s",
                                   doc="practical GPU host-link rate one way (FF: > 27 GB/s on PCIe 4.0 x16)"),
            "root_port_bw_gbyte_s": opt(nullable=True, unit="GB/s"),
            "shared_root_ports": opt("non_negative", 0, integer=True),
            "p2p_limit_gbyte_s": opt(nullable=True, unit="GB/s", doc="GPU-to-NIC peer-to-peer ceiling"),
            "compute_nics": Num(integer=True),
            "compute_nic_gbit_s": Num(unit="Gb/s"),
            "storage_nics": opt("non_negative", 0, integer=True),
            "storage_nic_gbit_s": opt("non_negative", 0.0, unit="Gb/s"),
            "power_w": opt(nullable=True, unit="W", doc="measured average under training; null: from parts"),
            "max_power_w": opt(nullable=True, unit="W",
                               doc="the vendor's maximum system input, which racks are provisioned for; null: "
                                   "the parts at their nameplate"),
            "rack_units": opt(nullable=True, unit="U", doc="the node's height; null: unknown, racks not bounded by "
                                                           "height"),
        },
        "rack": {
            "nodes_per_rack": opt(integer=True, nullable=True,
                                  doc="null: as many as the power limit allows, else the nodes of a scale-up "
                                      "domain that spans several, else as many as a 12 kW rack holds"),
            "power_limit_w": opt(nullable=True, unit="W", doc="the rack's power and cooling budget"),
            "extra_w": opt("non_negative", 0.0, unit="W",
                           doc="power of parts in the rack but not in its nodes (NVLink switch trays, ToR)"),
            "units": opt(default=42, unit="U", label="rack height",
                         doc="a rack's usable height (EIA-310 racks: 42U is the common full height)"),
            "extra_units": opt("non_negative", 0.0, unit="U", label="rack units of other parts",
                               doc="height taken by parts in the rack that are not nodes (an NVL72's 9 NVLink "
                                   "switch trays and its power shelves)"),
            "cooling": Choice(("air", "liquid"), "air", doc="how the racks are cooled (the facility PUE follows the "
                                                            "hall)"),
            "hall": Choice(HALLS, "industry-average",
                           doc="the data hall's class: sets the facility PUE when neither the plan nor the price "
                               "book gives one (industry average 1.58, Uptime 2023; hyperscale 1.10, Google)"),
            "network_racks_per_domain": opt("non_negative", 0, integer=True,
                                            doc="racks of scale-up switches beside each domain's compute racks "
                                                "(CloudMatrix 384: 4 beside 12)"),
        },
        "fabric": {
            "layers": opt(default=2, integer=True),
            "switch_radix": Num(integer=True, unit="ports"),
            "switch_gbit_s": Num(unit="Gb/s"),
            "switch_power_w": opt(nullable=True, unit="W"),
            "switch_rack_units": opt(nullable=True, unit="U", doc="a switch's height; null: 1U"),
            "transceiver_ports": opt(default=1, integer=True, unit="ports",
                                     doc="switch ports one optical module serves (2: a twin-port OSFP)"),
            "transceiver_power_w": opt("non_negative", nullable=True, unit="W",
                                       doc="one switch-to-switch optical module's typical draw; null: 8 W per "
                                           "400 Gb/s it carries (NVIDIA's 400G SR4 OSFP)"),
            "endpoint_link": Choice(("cable", "optical"), "cable",
                                    doc="how each NIC port reaches its leaf: one copper or active optical cable "
                                        "(the endpoint-cable line), or optics as in DGX SuperPOD's compute fabric: a "
                                        "module at the NIC (the endpoint line), a fibre and a port of a leaf module, "
                                        "counted with the switch optics"),
            "endpoint_module_ports": opt(default=1, integer=True, unit="ports",
                                         doc="NIC ports of one node a NIC-side module serves (2: a twin-port OSFP "
                                             "cage, as a DGX H100's); optical NIC links only"),
            "endpoint_cable_power_w": opt("non_negative", nullable=True, unit="W",
                                          doc="one NIC-end part's typical draw: a cable's, both ends (a copper DAC: "
                                              "0.2 W), or a NIC-side module's; null: 8 W per 400 Gb/s of optics (a "
                                              "cable: both ends at the NIC's rate, as an active optical cable; a "
                                              "module: its NIC ports at the NIC's rate)"),
            **grouped("Fabric", {
                "zones": opt(default=1, integer=True, doc="independent fat-trees joined by inter-zone switches"),
                "interzone_switches": opt("non_negative", 0, integer=True, label="inter-zone switches",
                                          doc="switches joining the zones"),
                "planes": opt(default=1, integer=True,
                              doc="independent network planes (one NIC port per node per plane)"),
                "rails": opt(default=1, integer=True, doc="rails: NIC i of every node on leaf group i"),
                "oversubscription": opt(default=1.0, at_least=1.0, label="oversubscription (down:up)",
                                        doc="leaf down:up port ratio (1 = non-blocking)"),
                "core_pods": Choice(("power_of_two", "exact"), "power_of_two", label="core sizing",
                                    labels=("Core provisioned for the next power-of-two pod count",
                                            "Core sized for the pods built")),
            }),
            **grouped("Storage", {
                "storage_network": Choice(("shared", "separate"), "shared",
                                          labels=("Shared with computation (storage nodes on the compute fabric)",
                                                  "Separate storage plane")),
            }),
        },
        "storage": {
            "nodes": opt("non_negative", 0, integer=True),
            "nics": opt("non_negative", 0, integer=True),
            "nic_gbit_s": opt("non_negative", 0.0, unit="Gb/s"),
            "ssds": opt("non_negative", 0, integer=True),
            "ssd_tb": opt("non_negative", 0.0, unit="TB"),
            "ssd_read_gbyte_s": opt(nullable=True, unit="GB/s"),
            "ssd_write_gbyte_s": opt(nullable=True, unit="GB/s"),
            "power_w": opt(nullable=True, unit="W"),
            "cpu_tdp_w": opt(nullable=True, unit="W"),
            "checkpoint_write_gbyte_s_per_node": opt(default=10.74, unit="GB/s",
                                                     doc="FF VII-A: > 10 GiB/s per node"),
            **grouped("Storage", {
                "external_write_gbyte_s": opt(nullable=True, unit="GB/s", label="external storage write",
                                              doc="a storage system outside the plan (no storage nodes): its "
                                                  "sustained write rate as its operators publish it (Meta's "
                                                  "Tectonic: 2,000); null: none, so checkpoints without storage "
                                                  "nodes have no known cost"),
                "external_read_gbyte_s": opt(nullable=True, unit="GB/s", label="external storage read",
                                             doc="that system's sustained read rate; null: its write rate"),
            }),
        },
        "prices": {
            "currency": Text(r"^([A-Z]{3}|REL)$", "USD", doc="ISO 4217 code, or REL for relative units"),
            "node": opt(nullable=True),
            "storage_node": opt("non_negative", nullable=True),
            "switch": opt(nullable=True),
            "transceiver": opt("non_negative", nullable=True),
            "endpoint_cable": opt("non_negative", nullable=True),
            "fiber": opt("non_negative", nullable=True),
            "scaleup_optic": opt("non_negative", nullable=True, doc="one optical module of the scale-up network"),
            "energy_per_kwh": opt("non_negative", nullable=True),
            "pue": opt(nullable=True, doc="null: the hall's (cluster.rack.hall)"),
            "amortization_years": opt(default=4.0, doc="capex spread over this many years"),
            "gpu_hour": opt("non_negative", nullable=True, label="rental price per GPU-hour, on demand",
                            doc="renting one of the plan's GPUs for an hour on demand (a cloud's price), to set "
                                "owning against; null: not offered"),
            "gpu_hour_capacity_block": opt("non_negative", nullable=True,
                                           label="rental price per GPU-hour, capacity block",
                                           doc="GPUs reserved ahead for 1 to 182 days; null: not offered"),
            "gpu_hour_1y": opt("non_negative", nullable=True, label="rental price per GPU-hour, 1-year term",
                               doc="a 1-year commitment, paid for the whole year; null: not offered"),
            "gpu_hour_3y": opt("non_negative", nullable=True, label="rental price per GPU-hour, 3-year term",
                               doc="a 3-year commitment, paid for the whole three years; null: not offered"),
            **{f"{part}_{end}": opt("non_negative", nullable=True, label=f"{part.replace('_', ' ')} price, {end}",
                                    doc=f"the {end} end of an estimated {part.replace('_', ' ')} price; null: its "
                                        "price (a quote)")
               for part in PRICED_PARTS for end in ("low", "high")},
        },
        "reliability": {
            "profile": Choice(FAILURE_PROFILES, "fire-flyer",
                              doc="failure categories: FF Tables V-VIII, Llama 3 Table 5, or one per-node rate"),
            **grouped("Cost and reliability", {
                "failures_per_1000_node_days": opt(nullable=True, label="failures per 1,000 node-days",
                                                   doc="used by the per-node-rate profile (Meta HPCA 2025: 6.50 on "
                                                       "RSC-1, 2.34 on RSC-2)"),
                "category_rates": Rates(label="failure-rate overrides",
                                        doc="failure category key -> events per unit-hour (its GPU, node, NIC, link "
                                            "or switch), replacing the profile's measured rate"),
                "link_flap_share": opt("non_negative", 0.0, at_most=1.0, scalar=True,
                                       doc="share of link failures that are flaps back within link_flap_s (no "
                                           "published split: 0 counts every one as stopping the job)"),
                "link_flap_s": opt(default=1.0, unit="s", scalar=True, label="link flap length",
                                   doc="a flap's length: under the transport's retry window (about 7 s for NCCL on "
                                       "InfiniBand) it stalls the job instead of stopping it"),
                "spare_confidence": opt(default=0.99, at_most=0.999999,
                                        doc="spare nodes are sized so that the job keeps all its nodes healthy "
                                            "with this probability (per domain: its root over the domains)"),
            }),
            **grouped("Checkpoints and restarts", {
                "checkpoint_mode": Choice(("sync", "async"), "sync",
                                          labels=("Synchronous (the job stalls for the write)",
                                                  "Asynchronous (the job stalls for the snapshot to host memory)"),
                                          doc="async: the job stalls only for the snapshot to host memory"),
                "checkpoint_in_memory": Flag(False, label="in-memory checkpoints",
                                             doc="redundant copies in peer host memory (Gemini): the save stalls "
                                                 "for the snapshot (and, synchronous, the copy to a peer), the "
                                                 "storage write runs in the background, and a restart loads over "
                                                 "the compute NICs"),
                "checkpoint_interval_s": opt(nullable=True, unit="s", label="checkpoint interval",
                                             doc="null: the ETTR-optimal interval"),
                "checkpoint_fixed_s": opt("non_negative", 0.77, unit="s", label="fixed cost per checkpoint",
                                          doc="the fixed cost of each save (barrier, metadata, staging set-up): "
                                              "PyTorch DCP's asynchronous staging of Llama 3 70B on 1,856 H200 "
                                              "blocked 0.78 s (PyTorch blog, Meta and Crusoe, 2025), of which "
                                              "moving the bytes over PCIe is about 0.01 s"),
                "restart_profile": Choice(tuple(RESTART_PROFILES), DEFAULT_RESTART_PROFILE,
                                          labels=tuple(profile.label for profile in RESTART_PROFILES.values()),
                                          doc="how the platform restarts a job (detection, set-up, warm-up)"),
                "crash_detection_s": opt("non_negative", nullable=True, unit="s", label="crash detection",
                                         doc="a crash seen (process exit, heartbeat); null: the restart profile's"),
                "collective_timeout_s": opt(nullable=True, unit="s", label="collective timeout",
                                            doc="hang detection (the collective's watchdog); null: the restart "
                                                "profile's"),
                "reschedule_s": opt("non_negative", nullable=True, unit="s", label="rescheduling",
                                    doc="a spare node swapped in and the job relaunched (platform faults); null: "
                                        "the restart profile's"),
                "init_base_s": opt("non_negative", nullable=True, unit="s", label="set-up, fixed part",
                                   doc="rendezvous and communicator set-up, its fixed part; null: the restart "
                                       "profile's"),
                "init_s_per_rank": opt("non_negative", nullable=True, unit="s", label="set-up per rank",
                                       doc="rendezvous and communicator set-up per rank; null: the restart "
                                           "profile's"),
                "warmup_s": opt("non_negative", nullable=True, unit="s", label="warm-up",
                                doc="first steps back to full speed; null: the restart profile's"),
                "restart_s": opt("non_negative", nullable=True, unit="s", label="restart time",
                                 doc="the whole restart, overriding its parts; null: from the parts"),
            }),
        },
        "calibration": {
            "gemm_fraction": opt(nullable=True, scalar=True, at_most=1.0,
                                 doc="measured: the best large dense GEMM's share of the 16-bit (and TF32) peak at "
                                     "full clock, replacing the accelerator family's; null: the family's"),
            "fp8_gemm_fraction": opt(nullable=True, scalar=True, at_most=1.0,
                                     doc="measured: the same share of the FP8 peak; null: the family's"),
            "fp4_gemm_fraction": opt(nullable=True, scalar=True, at_most=1.0,
                                     doc="measured: the same share of the NVFP4 peak; null: the family's"),
            "hbm_fraction": opt(nullable=True, scalar=True, at_most=1.0,
                                doc="measured: the share of peak HBM bandwidth the HBM-bound kernels (casts, norms, "
                                    "activations) reach, replacing the family's; null: the family's"),
            "attention_scale": opt(nullable=True, scalar=True,
                                   doc="measured: the fused attention kernels' rate over the family's measured "
                                       "rates (a profiler trace's attention time, docs/traces.md); null: 1, the "
                                       "family's"),
            "scaleup_fraction": opt(nullable=True, scalar=True, at_most=1.0,
                                    doc="measured: ring-collective bus bandwidth inside the scale-up domain over the "
                                        "per-GPU one-way scale-up bandwidth (nccl-tests); null: the family's"),
        },
    },
    "workload": {
        **grouped("Workload", {
            "kind": Choice(("transformer", "cnn"), "transformer",
                           labels=("Transformer (dense or MoE)", "CNN (by FLOPs and parameters)")),
        }),
        **grouped("Model", {
            "layers": opt(integer=True, nullable=True, doc="transformer layers (blocks)"),
            "hidden": opt(integer=True, nullable=True, label="hidden size", doc="the model width"),
            "heads": opt(integer=True, nullable=True, doc="attention (query) heads"),
            "kv_heads": opt(integer=True, nullable=True, label="key/value heads",
                            doc="key/value heads (GQA/MQA); null: as many as heads"),
            "head_dim": opt(integer=True, nullable=True, label="head width", doc="null: hidden / heads"),
            "ffn_hidden": opt(integer=True, nullable=True, label="MLP width", doc="MLP width; null: 4 x hidden"),
            "gated_mlp": Flag(False, label="gated MLP (SwiGLU)",
                              doc="three MLP matrices (SwiGLU), Llama-style: RMSNorm, rotary, no position table"),
            "vocab": opt("non_negative", 0, integer=True, label="vocabulary", unit="tokens",
                         doc="vocabulary size (0: no embeddings counted)"),
            "tied_embeddings": Flag(True, doc="input and output embeddings share one matrix"),
            "seq_len": opt(integer=True, default=1, label="sequence length", unit="tokens",
                           doc="tokens per sample at the base resolution"),
            "causal": Flag(True, doc="causal attention mask: a fused attention kernel skips half the scores"),
            "resolution_scale": opt(default=1.0, doc="video models: n x base resolution; tokens per sample x n^2"),
            "attention_window": opt(integer=True, nullable=True, unit="tokens",
                                    doc="sliding-window attention: keys a query sees; null: the whole sequence"),
            "mtp_layers": opt("non_negative", 0, integer=True, label="MTP modules",
                              doc="multi-token prediction modules (DeepSeek-V3: 1), each one layer of the model's "
                                  "last kind and a 2h x h projection on the last pipeline stage; their parameters "
                                  "are reported apart"),
            "params": opt(nullable=True, label="parameters",
                          doc="total parameters, for a model the fields cannot describe (CNNs: required); "
                              "transformers: null derives them from the shape"),
        }),
        **grouped("Latent attention (MLA)", {
            "q_lora_rank": opt("non_negative", 0, integer=True, label="query LoRA rank",
                               doc="MLA: the query projection's low-rank width (0: a full-rank query projection)"),
            "kv_lora_rank": opt("non_negative", 0, integer=True, label="key/value LoRA rank",
                                doc="MLA (multi-head latent attention, DeepSeek-V2/V3) when > 0: the key/value "
                                    "latent's width; kv_heads is then unused (every head has its own up-projected "
                                    "key and value)"),
            "rope_head_dim": opt("non_negative", 0, integer=True, label="rotary head width",
                                 doc="MLA: the decoupled rotary part of each query and key head, beside head_dim"),
            "v_head_dim": opt(integer=True, nullable=True, label="value head width",
                              doc="value head width; null: head_dim"),
        }),
        **grouped("Mixture of experts", {
            "experts": opt("non_negative", 0, integer=True, doc="routed experts per MoE layer (0 = dense)"),
            "moe_top_k": opt("non_negative", 0, integer=True, label="experts per token",
                             doc="routed experts per token"),
            "expert_ffn_hidden": opt(integer=True, nullable=True, label="expert MLP width",
                                     doc="one expert's MLP width; null: ffn_hidden"),
            "shared_experts": opt("non_negative", 0, integer=True, doc="experts every token passes through"),
            "dense_layers": opt("non_negative", 0, integer=True, doc="leading layers with a dense MLP (MoE)"),
            "moe_imbalance": opt(default=1.0, at_least=1.0, label="MoE imbalance",
                                 doc="busiest expert rank's tokens / the mean"),
            "expert_tp": opt(integer=True, nullable=True, label="expert TP",
                             doc="tensor parallelism inside each expert; null: tp"),
            "moe_dispatcher": Choice(("alltoall", "hierarchical", "hybridep"), "alltoall", label="MoE dispatcher",
                                     labels=("All-to-all (every pair sent)", "Hierarchical (DeepEP)",
                                             "HybridEP (NVIDIA)"),
                                     doc="alltoall: every token-expert pair sent directly (NCCL); hierarchical: a "
                                         "token crosses the network once per remote domain and is forwarded inside "
                                         "it (DeepEP); hybridep: the same routing at HybridEP's rates; inside a "
                                         "scale-up domain each runs at its rate measured on the family (DeepEP "
                                         "400/190 GB/s and HybridEP 715/658 GB/s dispatch/combine on GB200, "
                                         "Megatron-LM's DeepSeek-V3 GB200 write-up), else at the link's"),
            "moe_max_domains": opt(integer=True, nullable=True, label="MoE routing domains",
                                   doc="node-limited routing: a token's experts in at most this many scale-up "
                                       "domains or nodes (DeepSeek-V3: 4); null: unlimited"),
            "moe_overlap": Flag(False, label="MoE overlap",
                                doc="run each micro-batch's expert all-to-all beside another's compute "
                                    "(Megatron-Core's EP overlap; DualPipe always does)"),
        }),
        **grouped("CNN", {
            "flops_per_sample_forward": opt(nullable=True, label="forward FLOPs per sample", unit="FLOP",
                                            doc="CNN forward FLOPs per sample"),
            "forward_s_per_sample": opt(nullable=True, unit="s", label="forward time per sample",
                                        doc="CNN: measured forward time per sample on this accelerator; null: "
                                            "the family's convolution efficiency"),
            "activation_bytes_per_sample": opt("non_negative", 0.0, unit="B", doc="CNN activations per sample"),
        }),
        **grouped("Batch and layout", {
            "global_batch": Num(integer=True, unit="samples", doc="samples (sequences or images) per step"),
            "micro_batch": opt(default=1, integer=True, unit="samples", doc="samples per micro-batch"),
            "gpus": opt(integer=True, nullable=True, label="GPUs", at_most=MAX_CLUSTER_GPUS,
                        doc="GPUs the job uses; null: all"),
            "tp": opt(default=1, integer=True, label="TP (tensor parallel)", doc="tensor-parallel degree"),
            "sequence_parallel": Flag(False,
                                      doc="split norms and dropouts over the TP ranks (reduce-scatter + all-gather)"),
            "cp": opt(default=1, integer=True, label="CP (context parallel)",
                      doc="context-parallel degree (splits the sequence)"),
            "pp": opt(default=1, integer=True, label="PP (pipeline parallel)", doc="pipeline-parallel degree"),
            "virtual_stages": opt(default=1, integer=True, doc="interleaved pipeline stages per GPU"),
            "pipeline_schedule": Choice(SCHEDULES, "1f1b",
                                        labels=("1F1B (interleaved with virtual stages)", "Zero bubble (ZB-H1)",
                                                "DualPipe"),
                                        doc="1f1b (interleaved when virtual_stages > 1), zb-h1 (zero bubble, Qi et "
                                            "al. 2024) or dualpipe (DeepSeek-V3: two weight copies, all-to-all and "
                                            "pipeline sends hidden)"),
            "first_stage_layers": opt(integer=True, nullable=True,
                                      doc="layers of the first pipeline stage (Megatron's "
                                          "--decoder-first-pipeline-num-layers); null: an even split"),
            "last_stage_layers": opt(integer=True, nullable=True,
                                     doc="layers of the last pipeline stage; null: an even split"),
            "ep": opt(default=1, integer=True, label="EP (expert parallel)",
                      doc="expert-parallel degree, folded over a pipeline stage's TP x CP x DP ranks (Megatron-Core)"),
            "zero_stage": opt("non_negative", 0, integer=True, at_most=3, label="ZeRO stage",
                              doc="1: distributed optimizer states; 2: and gradients; 3: and weights (FSDP)"),
            "fsdp_implementation": Choice(
                FSDP_IMPLEMENTATIONS, "fsdp2", label="ZeRO-3 / FSDP implementation",
                labels=("PyTorch FSDP2", "DeepSpeed ZeRO-3", "DeepSpeed ZeRO-3 v0.3 (2021)"),
                doc="how ZeRO stage 3 gathers a transformer's weights over NCCL: fsdp2 (one flat collective a "
                    "layer, prefetched a layer ahead), deepspeed-zero3 (one a weight matrix, prefetched) or "
                    "deepspeed-zero3-v0.3 (DeepSpeed v0.3.13-v0.5 as SC21 ran it: a collective a weight matrix "
                    "built from a tensor view per rank, the device synchronized before each, nothing overlapped)"),
            "recompute": Choice(("none", "selective", "full"), "none", label="activation recomputation",
                                labels=("None", "Selective (attention core)", "Full (every layer's forward)")),
            "recompute_norms": Flag(False, doc="recompute the norms in backward instead of keeping their outputs "
                                               "(Megatron-Core's recompute module layernorm; DeepSeek-V3 3.2.3)"),
            "offload_activation_layers": opt("non_negative", 0, integer=True, label="layers offloaded",
                                             doc="layers of each pipeline stage whose activations go to host "
                                                 "memory after their forward and come back before their backward "
                                                 "(Megatron-Core's cpu_offloading_num_layers), copied over the "
                                                 "GPU's host link beside the compute"),
            "recompute_mla_up_proj": Flag(False, label="recompute MLA up-projections",
                                          doc="recompute MLA's query and key/value up-projections in backward, "
                                              "keeping only the latents (Megatron-Core's mla_up_proj; "
                                              "DeepSeek-V3 3.2.3)"),
            "precision": Choice(("tf32", "fp16", "bf16", "fp8", "nvfp4", "mxfp4"), "bf16", label="GEMM precision",
                                labels=("TF32", "FP16", "BF16", "FP8 GEMMs (BF16 elsewhere)",
                                        "NVFP4 GEMMs (BF16 elsewhere; Blackwell and later)",
                                        "MXFP4 GEMMs (BF16 elsewhere; AMD CDNA 4, Blackwell and later)"),
                                doc="GEMM precision (fp8, nvfp4, mxfp4: bf16 elsewhere; mxfp4 is the OCP "
                                    "microscaling format, 32-element blocks with E8M0 scales; nvfp4 is NVIDIA's "
                                    "recipe, 16-element blocks with E4M3 scales, needs an FP4 peak)"),
            "nvfp4_bf16_layers": opt("non_negative", 0, integer=True, label="layers kept in BF16",
                                     doc="with nvfp4: transformer layers whose linear layers stay in BF16 "
                                         "(NVIDIA's NVFP4 recipe keeps the last few; their GEMMs run at the "
                                         "BF16 rate and quantize nothing)"),
            "fp8_recipe": Choice(FP8_RECIPES, "delayed", label="FP8 recipe",
                                 labels=("Delayed scaling (per tensor, from past amaxes)",
                                         "Current scaling (per tensor)", "Blockwise (1 x 128 and 128 x 128)",
                                         "MXFP8 (per 32 elements, Blackwell)"),
                                 doc="how FP8 GEMM operands are scaled (Transformer Engine's recipes): what "
                                     "each quantization reads and writes; current scaling reads a tensor once "
                                     "more for its amax, blockwise and MXFP8 keep row-wise and column-wise "
                                     "copies with their scales"),
            "fp8_cached_activations": Flag(False, label="FP8 cached activations",
                                           doc="keep the FP8 inputs of the weight GEMMs for backward, one byte "
                                               "each (DeepSeek-V3 3.3.2); false: 16-bit copies"),
        }),
        **grouped("Kernels and overlap", {
            "flash_attention": Flag(True, doc="fused attention: no stored score matrices (drops the 5as/h term)"),
            "attention_kernel": Choice(("default",) + ATTENTION_KERNELS, "default", label="fused attention kernel",
                                       labels=("The family's usual kernel (cuDNN on Hopper and later, "
                                               "FlashAttention-2 before)", "FlashAttention-2", "FlashAttention-3",
                                               "cuDNN fused attention", "FlashAttention-4 (Blackwell)"),
                                       doc="the fused attention kernel whose measured rates time attention "
                                           "(FlashAttention-3 paper, Figs. 5-6, for Hopper; FlashAttention-2 paper, "
                                           "Fig. 4, for Ampere; Hopper's shapes at FlashAttention-4's and cuDNN's "
                                           "best B200 points for Blackwell)"),
            "fused_kernels": Flag(True, doc="Megatron-style fused bias-GeLU, bias-dropout-residual and masked "
                                            "softmax; false: one pass per element-wise operation (plain PyTorch)"),
            "rope_fusion": Flag(True, label="fused rotary embedding",
                                doc="rotary embedding in one kernel per query and key (Transformer Engine's "
                                    "fused_rope, as Megatron-Bridge's performance recipes set it); false: five "
                                    "element-wise passes each"),
            "cross_entropy_fusion": Flag(True, label="fused cross-entropy",
                                         doc="the loss in one kernel that reads the logits once each way "
                                             "(Transformer Engine's, as Megatron-Bridge's performance recipes set "
                                             "it); false: Megatron-LM's separate operations, 16 bytes a logit"),
            "moe_router_fusion": Flag(False, label="fused MoE router",
                                      doc="Transformer Engine's fused router: 31 kernels a layer instead of 72 "
                                          "(Megatron-LM's DeepSeek-V3 GB200 write-up; DeepEP and HybridEP fuse "
                                          "the preprocessing too: 17)"),
            "moe_permute_fusion": Flag(True, label="fused MoE permute",
                                       doc="token permute and unpermute in one kernel each (Transformer Engine's); "
                                           "false: a sort and a gather each"),
            "cuda_graphs": Flag(False, label="CUDA graphs",
                                doc="capture each layer's static parts in CUDA graphs, replayed for one host "
                                    "launch (Megatron-Core with Transformer Engine: a dense layer whole; a MoE "
                                    "layer's attention, router, preprocessing and shared experts, its routed "
                                    "experts eager); false: every kernel launched from Python"),
            "overlap_grad_reduce": Flag(True, label="overlap gradient reduction",
                                        doc="reduce gradients by bucket during the last backward"),
            "grad_accumulation_fusion": Flag(True, label="gradient accumulation fusion",
                                             doc="weight-gradient GEMMs add into the fp32 main gradients; "
                                                 "false: a separate pass per micro-batch (Megatron-LM 2021)"),
            "tp_comm_overlap": Flag(False, label="TP communication overlap",
                                    doc="overlap tensor-parallel all-gathers and reduce-scatters with the GEMMs "
                                        "they feed (Transformer Engine userbuffers: ring exchanges, pipelined "
                                        "splits and bulk overlaps as Megatron-Bridge's published configuration for "
                                        "the model's hidden size and TP sets them); needs sequence parallelism and "
                                        "TP > 1, as Megatron-Bridge does"),
            "tp_overlap_sms": opt("non_negative", integer=True, nullable=True, label="TP overlap SMs", unit="SMs",
                                  doc="SMs each overlapped pipelined reduce-scatter and bulk collective holds; null: "
                                      "the published configuration's (Megatron-Bridge comm_overlap.py), else "
                                      "Transformer Engine's default 16"),
            "comm_sms": opt("non_negative", 20, integer=True, label="communication SMs", unit="SMs",
                            doc="SMs an overlapped expert all-to-all's kernels take from compute (DeepSeek-V3 "
                                "3.2.2: 20 of an H800's 132)"),
        }),
        **grouped("Communication", {
            "collective": Choice(("nccl", "hfreduce"), "nccl", labels=("NCCL", "HFReduce"),
                                 doc="the data-parallel allreduce: NCCL's rings and trees, or HFReduce "
                                     "(Fire-Flyer: reduced on the host CPUs, then over the network)"),
            "use_nvlink": Flag(True, label="use NVLink", doc="let collectives use the node's NVLink"),
            "cross_zone": Flag(False, doc="the job spans zones"),
            "grad_bytes": opt(default=4.0, unit="B", label="gradient bytes",
                              doc="bytes per gradient element communicated"),
            "weight_bytes": opt(default=2.0, unit="B",
                                doc="bytes per weight element held, gathered (ZeRO-3) and saved"),
        }),
        **grouped("State and checkpoints", {
            "optimizer_bytes_per_param": opt("non_negative", 12.0, unit="B", label="optimizer bytes per parameter",
                                             doc="optimizer state per parameter (Adam: fp32 master weights and two "
                                                 "moments, 12 bytes)"),
            "checkpoint_bytes": opt(nullable=True, unit="B", label="checkpoint size",
                                    doc="bytes written per checkpoint; null: weights + optimizer states"),
        }),
        **grouped("Training run", {
            "tokens_to_train": opt(nullable=True, unit="tokens", doc="tokens (or samples for a CNN) to train on"),
            "preprocess_s_per_sample": opt("non_negative", 0.0, unit="s", label="host preprocessing per sample",
                                           doc="host CPU-seconds per sample"),
            "preprocess_cached": Flag(False, doc="encodings cached after the first epoch"),
            "job_fault_factor": opt("non_negative", 0.0, label="job-caused fault factor",
                                    doc="the job's own faults (software Xids, user errors) as a multiple of the "
                                        "profile's measured per-GPU rate: 0 a mature production job, 1 a new job"),
        }),
    },
    "options": {
        "message_bytes": opt(default=186 * 2**20, doc="allreduce size for the collective report"),
        "monte_carlo_replicas": opt("non_negative", 0, integer=True, at_most=100_000, scalar=True),
        "monte_carlo_horizon_h": opt(default=8760.0, at_most=10 * 8760.0, scalar=True),
        "seed": opt("non_negative", 0, integer=True, scalar=True),
    },
}


@cache
def _checks(spec: Num) -> dict:
    """The keyword checks of :func:`simcore.arrays.as_array` a numeric field asks for."""
    return dict(positive=spec.check == "positive", non_negative=spec.check == "non_negative",
                at_most=spec.at_most, at_least=spec.at_least, integer=spec.integer)


def _check_num(spec: Num, value, path: str):
    if value is None:
        if spec.nullable:
            return np.float64(np.nan)
        raise ScenarioError(path, "is required and may not be null" if spec.required else "may not be null")
    if isinstance(value, bool) or isinstance(value, str | dict):
        raise ScenarioError(path, f"must be a number or a list of numbers, got {type(value).__name__}")
    if isinstance(value, list) and not value:
        raise ScenarioError(path, "an empty list has no scenarios")
    checks = _checks(spec)
    if isinstance(value, float | int):
        return as_array(value, path, **checks)
    try:
        raw = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ScenarioError(path, "must be a number or a flat list of numbers") from None
    if raw.ndim > 1:
        raise ScenarioError(path, "must be a number or a flat list (one axis per field)")
    if spec.scalar and raw.ndim:
        raise ScenarioError(path, "takes a single number, not a list")
    return as_array(raw, path, **checks)


def _walk(spec: dict, given, path: str) -> dict:
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ScenarioError(path or "(document)", "must be an object")
    unknown = sorted(set(given) - set(spec))
    if unknown:
        raise ScenarioError(f"{path}.{unknown[0]}" if path else unknown[0],
                            f"unknown field (known: {', '.join(sorted(spec))})")
    out = {}
    for key, rule in spec.items():
        key_path = f"{path}.{key}" if path else key
        if isinstance(rule, dict):
            if key not in given and any(
                (isinstance(r, Num) and r.required) or (isinstance(r, Choice) and r.default is None)
                for r in rule.values()
            ):
                raise ScenarioError(key_path, "is required")
            out[key] = _walk(rule, given.get(key), key_path)
        elif key not in given:
            if isinstance(rule, Num) and rule.required:
                raise ScenarioError(key_path, "is required")
            if isinstance(rule, Choice) and rule.default is None:
                raise ScenarioError(key_path, f"is required: one of {', '.join(rule.options)}")
            if isinstance(rule, Num):
                out[key] = np.float64(np.nan if rule.default is None else rule.default)
            else:
                out[key] = {} if isinstance(rule, Rates) else rule.default
        elif isinstance(rule, Num):
            out[key] = _check_num(rule, given[key], key_path)
        elif isinstance(rule, Choice):
            if given[key] not in rule.options:
                raise ScenarioError(key_path, f"must be one of {', '.join(rule.options)}, got {given[key]!r}")
            out[key] = given[key]
        elif isinstance(rule, Flag):
            if not isinstance(given[key], bool):
                raise ScenarioError(key_path, "must be true or false")
            out[key] = given[key]
        elif isinstance(rule, Text):
            if not isinstance(given[key], str) or not re.match(rule.pattern, given[key]):
                raise ScenarioError(key_path, f"must match {rule.pattern}, got {given[key]!r}")
            out[key] = given[key]
        elif isinstance(rule, Rates):
            out[key] = _check_rates(given[key], key_path)
    return out


def _check_rates(given, path: str) -> dict:
    if not isinstance(given, dict):
        raise ScenarioError(path, "must be an object of names to rates")
    rates = {}
    for name, value in given.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ScenarioError(f"{path}.{name}", "must be a number (events per unit-hour)")
        rates[name] = float(as_array(value, f"{path}.{name}", non_negative=True))
    return rates


def parse(document) -> dict:
    """Validate a scenario document and return it with defaults filled and numbers as arrays."""
    if not isinstance(document, dict):
        raise ScenarioError("(document)", "must be a JSON object")
    has_workload = document.get("workload") is not None
    spec = SPEC if has_workload else {k: v for k, v in SPEC.items() if k != "workload"}
    parsed = _walk(spec, {k: v for k, v in document.items() if has_workload or k != "workload"}, "")
    cluster_gpus = np.max(np.asarray(parsed["cluster"]["node_count"]) * np.asarray(parsed["cluster"]["node"]["gpus"]))
    if cluster_gpus > MAX_CLUSTER_GPUS:
        raise ScenarioError("cluster.node_count", f"{int(cluster_gpus):,} GPUs in all (node_count x node.gpus); "
                                                  f"at most {MAX_CLUSTER_GPUS:,}")
    _check_price_bands(parsed["cluster"]["prices"])
    parsed["has_workload"] = has_workload
    if has_workload:
        _require_workload_fields(parsed["workload"])
    return parsed


def _check_price_bands(prices: dict) -> None:
    """An estimate's band holds its price: each given low at most the part's price, each given high
    at least it (NaN, not given, passes)."""
    for part in PRICED_PARTS:
        price = np.asarray(prices[part], dtype=float)
        with np.errstate(invalid="ignore"):
            if np.any(np.asarray(prices[f"{part}_low"], dtype=float) > price):
                raise ScenarioError(f"cluster.prices.{part}_low", f"must be at most the price (cluster.prices.{part})")
            if np.any(np.asarray(prices[f"{part}_high"], dtype=float) < price):
                raise ScenarioError(f"cluster.prices.{part}_high",
                                    f"must be at least the price (cluster.prices.{part})")


def parse_node(node: dict) -> dict:
    """Validate a compute node's fields alone (``cluster.node`` of a scenario document)."""
    return _walk(SPEC["cluster"]["node"], node, "cluster.node")


def parse_workload(workload: dict, *, required: bool = True) -> dict:
    """Validate a workload's fields alone (``workload`` of a scenario document); with
    ``required``, also the fields its kind needs and its shape (:func:`workload_field_errors`)."""
    w = _walk(SPEC["workload"], workload, "workload")
    if required:
        _require_workload_fields(w)
    return w


def _require_workload_fields(w: dict):
    errors = workload_field_errors(w)
    if errors:
        field, reason = next(iter(errors.items()))
        raise ScenarioError(f"workload.{field}", reason)


def workload_field_errors(w: dict) -> dict[str, str]:
    """Every field a parsed workload needs and lacks, and every rule of the model's own shape it
    breaks, each bad field with its reason (its layout's rules are per scenario point, in the
    training stage: :func:`simcore.stages.job.workload_errors`)."""
    if w["kind"] != "transformer":
        return {key: "is required for a CNN" for key in ("flops_per_sample_forward", "params")
                if np.any(np.isnan(w[key]))}
    missing = {key: "is required for a transformer" for key in ("layers", "hidden", "heads")
               if np.any(np.isnan(w[key]))}
    if missing:
        return missing
    heads, kv = w["heads"], where(np.isnan(w["kv_heads"]), w["heads"], w["kv_heads"])
    experts, top_k = w["experts"], w["moe_top_k"]
    rules = (
        ("kv_heads", np.any(heads % kv != 0), f"must divide the {_one(heads)}attention heads"),
        ("kv_heads", np.any(kv > heads), f"cannot exceed the {_one(heads)}attention heads"),
        ("heads", np.any(np.isnan(w["head_dim"]) & (w["hidden"] % heads != 0)),
         f"must divide the hidden size {_one(w['hidden'])}(or give head_dim)"),
        ("moe_top_k", np.any((experts > 0) & (top_k < 1)), "must be at least 1 for a mixture-of-experts model"),
        ("moe_top_k", np.any(top_k > experts), f"cannot exceed the {_one(experts)}routed experts"),
        ("dense_layers", np.any((experts > 0) & (w["dense_layers"] >= w["layers"])),
         f"must leave at least one MoE layer of the {_one(w['layers'])}layers"),
    )
    errors: dict[str, str] = {}
    for field, bad, reason in rules:
        if bad:
            errors.setdefault(field, reason)
    return errors


def _one(value) -> str:
    """A one-value field's value and a space, to quote in a reason ("" for a list of values)."""
    return f"{float(value):g} " if np.ndim(value) == 0 else ""


def _bound(value: float) -> str:
    """A bound as the docs write it: whole numbers with thousands separators (1,048,576)."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def field_labels(spec=SPEC, prefix="") -> dict[str, tuple[str, str]]:
    """(label, unit) of every numeric field by its path, for axis titles."""
    labels = {}
    for key, rule in spec.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(rule, dict):
            labels.update(field_labels(rule, path))
        elif isinstance(rule, Num):
            labels[path] = (label_of(key, rule), rule.unit)
    return labels


def field_docs(spec=SPEC, prefix="") -> list[tuple[str, str, str, str]]:
    """(path, kind, default, description) for every field, for docs and the API."""
    rows = []
    for key, rule in spec.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(rule, dict):
            rows += field_docs(rule, path)
        elif isinstance(rule, Num):
            kind = f"{'integer' if rule.integer else 'number'} ({rule.check.replace('_', ' ')})"
            if rule.nullable:
                kind += ", or null"
            default = "required" if rule.required else ("null" if rule.default is None else str(rule.default))
            if rule.scalar:
                kind += ", one value"
            bounds = (("at least", rule.at_least), ("at most", rule.at_most))
            kind += "".join(f", {word} {_bound(bound)}" for word, bound in bounds if bound is not None)
            rows.append((path, kind + (f", {rule.unit}" if rule.unit else ""), default, rule.doc))
        elif isinstance(rule, Choice):
            rows.append((path, " / ".join(rule.options), "required" if rule.default is None else rule.default,
                         rule.doc))
        elif isinstance(rule, Text):
            rows.append((path, "text", rule.default, rule.doc))
        elif isinstance(rule, Rates):
            rows.append((path, "object of name: number (non negative)", "{}", rule.doc))
        else:
            rows.append((path, "true / false", str(rule.default).lower(), rule.doc))
    return rows


SECTION_TITLES = {
    "cluster": "Cluster", "cluster.node": "Compute node", "cluster.rack": "Racks", "cluster.fabric": "Fabric",
    "cluster.storage": "Storage",
    "cluster.prices": "Prices (from a price book)", "cluster.reliability": "Reliability",
    "cluster.calibration": "Calibration (measured constants)", "workload": "Workload",
    "options": "Options",
}


def fields_markdown() -> str:
    """Markdown tables of every field, grouped by section (docs/scenario-format.md's field list)."""
    sections: dict[str, list] = {}
    for path, kind, default, doc in field_docs():
        parts = path.split(".")
        key = ".".join(parts[:2]) if parts[0] == "cluster" and len(parts) > 2 else parts[0]
        sections.setdefault(key, []).append((path, kind, default, doc))
    out = []
    for key, rows in sections.items():
        out.append(f"### {SECTION_TITLES[key]}\n\n| field | type | default | meaning |\n|---|---|---|---|")
        out.extend(f"| `{path}` | {kind} | {default} | {doc} |" for path, kind, default, doc in rows)
        out.append("")
    return "\n".join(out)


def json_schema(spec=SPEC) -> dict:
    """The scenario document as a JSON Schema (2020-12), from the same field spec that validates it:
    every field with its type, range, unit (``x-unit``) and default. A number field may also be a
    list of numbers (one per scenario point) unless it takes one value."""
    properties, required = {}, []
    for key, rule in spec.items():
        if isinstance(rule, dict):
            properties[key] = json_schema(rule)
        else:
            properties[key] = field_schema(rule)
            if (isinstance(rule, Num) and rule.required and rule.default is None) or (
                    isinstance(rule, Choice) and rule.default is None):
                required.append(key)
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if spec is SPEC:
        required.append("cluster")  # the workload and the options may be left out
    if required:
        schema["required"] = required
    return schema


def field_schema(rule: Rule, lists: bool = True) -> dict:
    """One field's JSON Schema; with ``lists``, a number field may be a list of numbers."""
    if isinstance(rule, Num):
        number = {"type": "integer" if rule.integer else "number"}
        if rule.check == "positive":
            number["exclusiveMinimum"] = 0
        elif rule.check in ("non_negative", "fraction"):
            number["minimum"] = 0
        if rule.check == "fraction":
            number["maximum"] = 1
        if rule.at_most is not None:
            number["maximum"] = rule.at_most
        if rule.at_least is not None:
            number["minimum"] = rule.at_least
        variants = [number] if rule.scalar or not lists else [number, {"type": "array", "items": number,
                                                                        "minItems": 1}]
        if rule.nullable:
            variants.append({"type": "null"})
        schema = {"anyOf": variants} if len(variants) > 1 else number
        if rule.unit:
            schema["x-unit"] = rule.unit
        if rule.default is not None:
            schema["default"] = rule.default
        schema["description"] = "; ".join(part for part in (rule.doc, rule.unit and f"unit: {rule.unit}") if part)
        return schema
    if isinstance(rule, Choice):
        schema = {"enum": list(rule.options), "description": rule.doc}
        return schema if rule.default is None else {**schema, "default": rule.default}
    if isinstance(rule, Text):
        return {"type": "string", "pattern": rule.pattern, "default": rule.default, "description": rule.doc}
    if isinstance(rule, Rates):
        return {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}, "description": rule.doc}
    return {"type": "boolean", "default": rule.default, "description": rule.doc}

"""Accelerator families: the few achievable fractions the layer-level training model needs.

Everything else about a device comes from its datasheet (peaks, SM count, HBM bandwidth, scale-up
bandwidth). A family holds only these shares, each set from a cited microbenchmark of the
family's flagship part, never from a training run:

* ``gemm_fraction`` (and ``fp8_gemm_fraction``): the best large dense GEMM reaches this share of
  the precision's peak at full clock; smaller and ragged shapes get less
  (:func:`simcore.formulas.transformer.gemm_efficiency`);
* ``hbm_fraction``: a streaming kernel (STREAM triad: two reads and a write, like a residual add)
  reaches this share of peak HBM bandwidth: norms, activations, dropout, softmax, the optimizer;
* ``scaleup_fraction``: a ring allreduce inside the scale-up domain reaches this share of the
  per-GPU one-way NVLink bandwidth as bus bandwidth (nccl-tests);
* ``nvls_allreduce_gain``: with in-network reduction on the scale-up switches (NVLink SHARP,
  NVSwitch 3 and later), an allreduce inside the domain reaches this multiple of the ring's bus
  bandwidth (NaN: the family's switches have none);
* ``rate_spread``: the spread of sustained matmul rates across the 8 GPUs of one node, as a share
  of the rate (NaN: not measured, no straggler cost): a synchronous step waits for the slowest of
  its GPUs (:func:`simcore.formulas.compute.straggler_slowdown`);
* ``overlap_gemm_slowdown``: how much slower compute runs while an SM-based collective (NCCL's
  data-parallel reduce-scatter or all-gather) runs beside it, as a share of its time (NaN: not
  measured, no cost);
* ``full_clock_power_w``: the power the family's die would draw running dense work at full clock,
  inverted from a measurement of the rate it sustains at a known board power
  (:func:`simcore.formulas.compute.full_clock_power_from`); a part whose cap is below it runs
  every compute rate at a lower sustained clock (NaN: not measured, the catalogue's figure or the
  TDP, where the cap never binds);
* ``grouped_gemm_fraction`` (one group) and ``grouped_gemm_fraction_eight`` (eight groups), and
  ``fp8_grouped_gemm_fraction``: the large-GEMM share of the grouped GEMM a MoE layer runs over its
  rank's experts, measured apart from dense GEMMs because its kernels reach far less (NaN: not
  measured, the dense share; :func:`simcore.formulas.transformer.grouped_gemm_fraction`);
* ``fp4_gemm_fraction``: the best large dense GEMM's share of the NVFP4 peak (NaN: not measured,
  NVFP4 refused on the family);
* ``conv_fraction``: the convolutions of a CNN's training step reach this share of the peak (used
  for workloads described by FLOPs per sample when no measured forward time is given);
* ``reference_sm_count`` and ``reference_hbm_gbyte_s``: the flagship's datasheet values, used when
  a scenario gives no SM count or HBM bandwidth for its part.

``confidence`` follows the catalogue's flags: measured (a primary microbenchmark of the part),
secondary (reported by others), estimate (no measurement found: basis given).
"""
from dataclasses import dataclass, field, replace

from simcore.formulas.attention import BASIS, DEFAULT_KERNEL, FAMILY_TABLES, attention_shares, kernel_row
from simcore.formulas.compute import full_clock_power_from, sustained_clock_factor
from simcore.formulas.host import constant_rows as host_constant_rows

CONSTANT_NAMES = ("gemm_fraction", "fp8_gemm_fraction", "fp4_gemm_fraction", "hbm_fraction", "scaleup_fraction",
                  "nvls_allreduce_gain", "conv_fraction", "rate_spread", "overlap_gemm_slowdown",
                  "full_clock_power_w", "grouped_gemm_fraction", "grouped_gemm_fraction_eight",
                  "fp8_grouped_gemm_fraction")


@dataclass(frozen=True)
class DeviceFamily:
    key: str
    name: str
    gemm_fraction: float
    fp8_gemm_fraction: float
    hbm_fraction: float
    scaleup_fraction: float
    conv_fraction: float
    reference_sm_count: int
    reference_hbm_gbyte_s: float
    nvls_allreduce_gain: float = float("nan")
    rate_spread: float = float("nan")
    overlap_gemm_slowdown: float = float("nan")
    full_clock_power_w: float = float("nan")
    grouped_gemm_fraction: float = float("nan")
    grouped_gemm_fraction_eight: float = float("nan")
    fp8_grouped_gemm_fraction: float = float("nan")
    fp4_gemm_fraction: float = float("nan")
    # The fused attention kernel's rates as the family's measured table gives them (1); a trace of the
    # user's own attention kernels replaces it with their rate over the table's (a per-plan calibration).
    attention_scale: float = 1.0
    # FP8 tensor cores read operands column-wise (Blackwell; Transformer Engine's "Handling transposes"),
    # and scale per 32-element block (MXFP8): Hopper needs a transposed copy and has no MXFP8.
    fp8_columnwise: bool = False
    # Measured dispatch and combine rates (GB/s of token copies a GPU moves inside its scale-up domain)
    # of MoE dispatchers by name (the workload's moe_dispatcher), as (EP size, dispatch, combine) points
    # read between by log2 of the EP size and held beyond (one point: every size); one not listed runs
    # at the link's.
    dispatcher_gbyte_s: dict = field(default_factory=dict)
    # Measured dispatch and combine rates across nodes (GB/s a GPU sends, counting one copy per token and
    # destination node, its own node included, as DeepEP's and HybridEP's benchmarks count them) by
    # dispatcher, as (EP ranks, dispatch, combine) points read the same way; one not listed runs over the
    # network at the NICs' line rate.
    dispatcher_network_gbyte_s: dict = field(default_factory=dict)
    vendor: str = "NVIDIA"  # whose driver's fault codes the device reports (NVIDIA: Xids)
    basis: dict = field(default_factory=dict)  # constant name -> (confidence, source)
    # Constants fitted over the development set (simcore.fitted): attribute -> the fitted constant's name,
    # taken by :func:`with_fitted`.
    fitted: dict = field(default_factory=dict)
    # The board power the GEMM shares were measured at, where their part's power cap bound then (NaN: at
    # full clock): :func:`with_fitted` turns them into full-clock shares.
    shares_measured_at_w: float = float("nan")


AZURE = "Azure/AI-benchmarking-guide"
# Lambda's TensorFlow benchmark: VGG16 training at 504 images/s (batch 224, TF32) on one A100 PCIe
# 40GB: 504 x 3 x 30.94 GFLOPs = 46.8 TFLOP/s, 0.300 of the 156 TF32 peak at that 250-W card's
# sustained clock; over the engine's clock factor for the card it is the share at full clock.
VGG16_A100_PCIE_SHARE = 504 * 3 * 30.94e9 / 156e12
DSV3_GB200 = ("NVIDIA/Megatron-LM docs/discussions/deepseek-v3-gb200-optimization (commit eb0783b6), "
              "'Optimizing DeepSeek-V3 Training Performance on NVIDIA GB200 NVL72'")
# Lee et al., arXiv:2507.03114: GEMMs running beside NCCL collectives on 4-GPU A100 and H100 systems took
# 18.9% longer on average (up to 40%); the paper gives one mean for both families.
OVERLAP_SLOWDOWN = 0.189
OVERLAP_BASIS = ("secondary", "Lee et al., arXiv:2507.03114: GEMMs beside NCCL collectives 18.9% slower on average "
                              "(up to 40%) on 4-GPU A100 and H100 systems, one mean for both families")
# A B200 under sustained load (flashinfer PR #2899): about 1,000 W drawn, the SM clock down from 1,965 MHz
# to about 1,580, FlashAttention-4's throughput 15% lower after about 30 iterations than in the first. A
# microbenchmark's short burst (the GEMM shares below, the attention sweeps) runs at the full clock; a
# training step sustains 0.85 of it at 1,000 W.
B200_SUSTAINED_SHARE, B200_SUSTAINED_W = 0.85, 1000.0
# 8 x B200, NCCL 2.27.7, all_reduce of 8 GiB (S. Bekman, ml-engineering network/README.md): 682 GB/s bus
# bandwidth by ring, 838 with NVLink SHARP, over 900 GB/s one-way NVLink 5.
B200_RING_BUSBW, B200_NVLS_BUSBW, NVLINK5_ONE_WAY = 682.0, 838.0, 900.0
# FP8 cast kernels on a B200 at 1,000 W reach 5.4-6.46 TB/s (pytorch/ao PR #4002), whose 7,680-bit
# HBM3e bus peaks at 7.67 TB/s (the same PR), not the rounded 8 TB/s of the datasheet.
B200_STREAM_TBYTE_S, B200_HBM_TBYTE_S = 6.46, 7.67
# MoE grouped GEMMs on Blackwell: BF16 forward and backward together about 860 TFLOPS with one group and
# 712 with eight on a B200 (pytorch/ao torchao/prototype/moe_training README, commit 36027d8, M 131,072);
# MXFP8 2,672 TFLOPS on a GB200 (K 7,168, N 2,048, L2 flushed: Megatron-LM's DeepSeek-V3 GB200 write-up).
B200_GROUPED_BF16_ONE, B200_GROUPED_BF16_EIGHT, GB200_GROUPED_MXFP8 = 860.0, 712.0, 2672.0
TORCHAO_MOE = "pytorch/ao torchao/prototype/moe_training/README.md (commit 36027d8)"
BEKMAN = "S. Bekman, ml-engineering, compute/accelerator/README.md, 'Maximum Achievable Matmul FLOPS' table"
# FP4 GEMM on a B200 (deepseek-ai/DeepGEMM PR #348, 2026-06, CUDA 12.9): 5,702 TFLOPS at 8192^3 (cuBLAS 13.3:
# 5,239) of the 9,000 dense FP4 peak. Block-scaled E2M1 (MXFP4, 32-element blocks): the same FP4 tensor cores
# and peak NVFP4 (16-element blocks) runs on.
B200_FP4_BEST_TFLOPS, B200_FP4_PEAK_TFLOPS = 5702.0, 9000.0
# AMD MI300X, Azure/AI-benchmarking-guide's ND MI300X v5 results: hipBLASLt FP8 GEMM 1,159 TFLOPS at 8192^3
# (2,614.9 dense peak), STREAM triad 4.09 TB/s (5.3 peak), RCCL all_reduce 317 GB/s bus bandwidth at 8 GB over
# 7 xGMI links x 64 GB/s one way (ROCm blog "Understanding RCCL Bandwidth and xGMI Performance on MI300X").
MI300X_FP8_TFLOPS, MI300X_FP8_PEAK = 1159.0, 2614.9
MI300X_TRIAD_TBYTE_S, MI300X_HBM_TBYTE_S = 4.09, 5.3
MI300X_RING_BUSBW, MI300X_XGMI_ONE_WAY = 317.0, 7 * 64.0
# Max achievable BF16 matmul on an MI300X, 708 of 1,307.4 TFLOPS (AMD's TraceLens example roofline file, from
# AMD's "max achievable FLOPS" ROCm blog).
MI300X_BF16_TFLOPS, MI300X_BF16_PEAK = 708.0, 1307.4
CDNA3_BASIS = {
    "gemm_fraction": ("secondary", "AMD TraceLens example roofline (from AMD's ROCm blog on max achievable "
                                   "FLOPS): MI300X BF16 matmul 708 of 1,307.4 TFLOPS"),
    "fp8_gemm_fraction": ("measured", f"{AZURE}, ND MI300X v5 results: hipBLASLt FP8 GEMM 1,159 TFLOPS at "
                                      "8192^3 of 2,614.9"),
    "hbm_fraction": ("measured", f"{AZURE}, ND MI300X v5 results: STREAM triad 4.09 TB/s (5.3 peak)"),
    "scaleup_fraction": ("measured", f"{AZURE}, ND MI300X v5 results: RCCL all_reduce bus bandwidth 317 GB/s at "
                                     "8 GB over 7 xGMI links x 64 GB/s one way (ROCm blog, 'Understanding RCCL "
                                     "Bandwidth and xGMI Performance on MI300X')"),
    "overlap_gemm_slowdown": ("estimate", "no AMD measurement found: the A100/H100 mean of Lee et al., "
                                          "arXiv:2507.03114"),
}


def _borrowed(basis: dict, whose: str, why: str) -> dict:
    """Another family's constants taken as estimates, each saying whose and why."""
    return {name: ("estimate", f"{why}: {whose}'s ({source})") for name, (_, source) in basis.items()}

FAMILIES = {
    "ampere": DeviceFamily(
        key="ampere", name="NVIDIA Ampere (A100)",
        gemm_fraction=263 / 312, fp8_gemm_fraction=float("nan"), hbm_fraction=1.70 / 2.039,
        scaleup_fraction=231.6 / 300,
        conv_fraction=VGG16_A100_PCIE_SHARE / float(sustained_clock_factor(250, 400)),
        reference_sm_count=108, reference_hbm_gbyte_s=2039, overlap_gemm_slowdown=OVERLAP_SLOWDOWN,
        basis={
            "overlap_gemm_slowdown": OVERLAP_BASIS,
            "gemm_fraction": ("measured", "FF Table II: DGX-A100 large GEMM 263 of 312 TFLOPS FP16 (131 of 156 TF32)"),
            "hbm_fraction": ("measured",
                             f"{AZURE}, ND_A100_v4 results: STREAM triad 1.70 TB/s on A100 80GB (2.039 peak)"),
            "scaleup_fraction": ("measured", f"{AZURE}, ND_A100_v4: 8-GPU allreduce bus bandwidth 231.6 GB/s at 8 GB "
                                             "over 300 GB/s one-way NVLink 3"),
            "conv_fraction": ("measured",
                              "LambdaColdStorage/lambda-tensorflow-benchmark, tf-train-throughput-fp32.csv: "
                                          "VGG16 504 images/s (batch 224) on A100 PCIe 40GB, 46.8 TFLOP/s of 156 TF32, "
                                          "over the engine's sustained clock factor for the 250-W card"),
        },
    ),
    "hopper": DeviceFamily(
        key="hopper", name="NVIDIA Hopper (H100, H800, H200)",
        gemm_fraction=794.5 / 989, fp8_gemm_fraction=1402.6 / 1979, hbm_fraction=2.97 / 3.35,
        scaleup_fraction=370 / 450, conv_fraction=float("nan"),
        reference_sm_count=132, reference_hbm_gbyte_s=3350, nvls_allreduce_gain=480 / 370, rate_spread=0.05,
        overlap_gemm_slowdown=OVERLAP_SLOWDOWN, dispatcher_gbyte_s={"hybridep": ((8, 368.9, 368.87),)},
        dispatcher_network_gbyte_s={"hierarchical": ((16, 90.0, 81.0), (32, 61.0, 61.0)),
                                    "hybridep": ((16, 54.47, 53.35), (32, 47.36, 52.53), (64, 41.24, 46.57))},
        basis={
            "dispatcher_network_gbyte_s": (
                "measured", "deepseek-ai/DeepEP README (commit b306af0): DeepEP v2 on H800/H100 with CX7, 8K tokens, "
                            "h 7168, top 8, EP 8 x 2 nodes 90 GB/s dispatch and 81 combine, 8 x 4 nodes 61 and 61; "
                            "DeepEP hybrid-ep branch docs/README_Hybrid-EP.md (commit 94a9f8f): HybridEP on H100, "
                            "4096 tokens, h 7168, top 8, BF16 through the Torch API with 16 SMs, 16 ranks 54.47 / "
                            "53.35, 32 ranks 47.36 / 52.53, 64 ranks 41.24 / 46.57; both count a copy per token and "
                            "node, its own node included (tests/elastic/test_ep.py, tests/utils.py)"),
            "overlap_gemm_slowdown": OVERLAP_BASIS,
            "dispatcher_gbyte_s": ("secondary", f"{DSV3_GB200}: HybridEP in one DGX H100, 368.9 GB/s dispatch and "
                                                "368.87 combine with 16 blocks (its chart, images/image6.png); DeepEP "
                                                "at the link's rate"),
            "rate_spread": ("measured", "S. Bekman, ml-engineering, compute/accelerator/README.md (commit 744d01e), "
                                        "'Not all accelerators are created equal': 'I have seen 5% and higher "
                                        "differences on an 8-gpu node' (H100 nodes; '5%+ MAMF spread between GPUs')"),
            "gemm_fraction": ("measured", f"{BEKMAN}: H100 SXM 794.5 of 989 TFLOPS BF16"),
            "fp8_gemm_fraction": ("measured", f"{BEKMAN}: H100 SXM 1402.6 of 1979 TFLOPS FP8"),
            "hbm_fraction": ("measured", f"{AZURE}, ND_H100_v5 results: STREAM triad 2.97 TB/s (3.35 peak)"),
            "scaleup_fraction": ("secondary", "NVIDIA/nccl-tests issue 212 (maintainer): about 370 GB/s ring "
                                              "allreduce bus bandwidth on 8 x H100 over 450 GB/s one-way NVLink 4"),
            "nvls_allreduce_gain": ("secondary", "NVIDIA/nccl-tests issue 212 (maintainer): NVLink SHARP allreduce "
                                                 "peaks near 480 GB/s bus bandwidth on 8 x H100 against 370 by ring"),
        },
    ),
    "blackwell": DeviceFamily(
        key="blackwell", name="NVIDIA Blackwell (B200, GB200)",
        gemm_fraction=1745.0 / 2250, fp8_gemm_fraction=3432.5 / 4500,
        hbm_fraction=B200_STREAM_TBYTE_S / B200_HBM_TBYTE_S, scaleup_fraction=B200_RING_BUSBW / NVLINK5_ONE_WAY,
        conv_fraction=float("nan"), reference_sm_count=148, reference_hbm_gbyte_s=B200_HBM_TBYTE_S * 1000,
        nvls_allreduce_gain=B200_NVLS_BUSBW / B200_RING_BUSBW, rate_spread=0.05,
        fp8_columnwise=True, overlap_gemm_slowdown=OVERLAP_SLOWDOWN,
        full_clock_power_w=full_clock_power_from(B200_SUSTAINED_SHARE, B200_SUSTAINED_W),
        grouped_gemm_fraction=B200_GROUPED_BF16_ONE / 2250, grouped_gemm_fraction_eight=B200_GROUPED_BF16_EIGHT / 2250,
        fp8_grouped_gemm_fraction=GB200_GROUPED_MXFP8 / 5000,
        fp4_gemm_fraction=B200_FP4_BEST_TFLOPS / B200_FP4_PEAK_TFLOPS,
        dispatcher_gbyte_s={"hierarchical": ((8, 726.0, 740.0), (32, 400.0, 190.0)),
                            "hybridep": ((36, 714.66, 657.72),)},
        dispatcher_network_gbyte_s={"hierarchical": ((16, 90.0, 91.0),)},
        basis={
            "dispatcher_network_gbyte_s": (
                "measured", "deepseek-ai/DeepEP README (commit b306af0): DeepEP v2 on SM100 with CX7, EP 8 x 2 nodes, "
                            "90 GB/s dispatch and 91 combine, a copy per token and node, its own node included"),
            "rate_spread": ("estimate", "no B200 spread measurement found: Hopper's 5% across a node"),
            "overlap_gemm_slowdown": ("estimate", "no Blackwell measurement found: the A100/H100 mean of Lee et al., "
                                                  "arXiv:2507.03114"),
            "dispatcher_gbyte_s": ("secondary", "deepseek-ai/DeepEP README (commit dd758ca): DeepEP v2 on SM100 at "
                                                "EP 8, 726 GB/s dispatch and 740 combine with 64 SMs; "
                                                f"{DSV3_GB200}: DeepEP at EP 32 on GB200 NVL72 'about 400 GB/s' "
                                                "dispatch and '190 GB/s' combine with 24 SMs; HybridEP on GB200 NVL36 "
                                                "714.66 and 657.72 GB/s with 32 blocks (its chart, images/image6.png)"),
            "gemm_fraction": ("measured", f"{BEKMAN}: B200 SXM 1745.0 of 2250 TFLOPS BF16"),
            "fp8_gemm_fraction": ("measured", f"{BEKMAN}: B200 SXM 3432.5 of 4500 TFLOPS FP8"),
            "fp4_gemm_fraction": ("secondary", "deepseek-ai/DeepGEMM PR #348 (2026-06): block-scaled FP4 GEMM "
                                               "5,702 TFLOPS at 8192^3 on a B200 (cuBLAS 5,239) of the 9,000 dense "
                                               "FP4 peak; MXFP4, on the tensor cores and peak NVFP4 runs on"),
            "hbm_fraction": ("secondary", "pytorch/ao PR #4002: MXFP8 cast kernels on a B200 at 1,000 W reach up "
                                          "to 6.46 TB/s of the 7,680-bit bus's 7.67 TB/s peak (no STREAM run found)"),
            "scaleup_fraction": ("secondary", "S. Bekman, ml-engineering network/README.md: 8 x B200 all_reduce "
                                              "8 GiB, NCCL 2.27.7, 682 GB/s bus bandwidth by ring over 900 GB/s "
                                              "one-way NVLink 5"),
            "nvls_allreduce_gain": ("secondary", "S. Bekman, ml-engineering network/README.md: 8 x B200 all_reduce "
                                                 "8 GiB with NVLink SHARP 838 GB/s against 682 by ring"),
            "grouped_gemm_fraction": ("measured", f"{TORCHAO_MOE}: B200 BF16 grouped GEMM, forward and backward, "
                                                  "about 860 of 2,250 TFLOPS with one group (M 131,072)"),
            "grouped_gemm_fraction_eight": ("measured", f"{TORCHAO_MOE}: B200 BF16 grouped GEMM, forward and "
                                                        "backward, about 712 of 2,250 TFLOPS with eight groups"),
            "fp8_grouped_gemm_fraction": ("secondary", f"{DSV3_GB200}: MXFP8 grouped expert GEMM (K 7168, N 2048, "
                                                       "L2 flushed) 2,672 of 5,000 TFLOPS on a GB200"),
            "full_clock_power_w": ("secondary", "flashinfer PR #2899: a B200 under sustained load drew about "
                                                "1,000 W, its SM clock fell from 1,965 to about 1,580 MHz and "
                                                "FlashAttention-4 ran 15% slower after about 30 iterations: 0.85 "
                                                "of the full-clock rate at 1,000 W, inverted through the clock "
                                                "model (static share 12.5%)"),
        },
    ),
    "ascend": DeviceFamily(
        key="ascend", name="Huawei Ascend 910B", vendor="Huawei",
        gemm_fraction=301.23 / 354, fp8_gemm_fraction=float("nan"), hbm_fraction=1.70 / 2.039,
        scaleup_fraction=231.6 / 300, conv_fraction=float("nan"),
        reference_sm_count=24, reference_hbm_gbyte_s=1600,
        basis={
            "gemm_fraction": ("secondary", "zzc0721/torch-performance-test-data issue 109: 910B2 BF16 GEMM 301.23 "
                                           "TFLOPS at 8192 x 8192, over the unverified ~354 TFLOPS peak"),
            "hbm_fraction": ("estimate", "no 910B STREAM figure found: the A100's share"),
            "scaleup_fraction": ("estimate", "no HCCS allreduce figure found: the A100's NVLink share"),
        },
    ),
}
_BLACKWELL = FAMILIES["blackwell"]
_RUBIN_SHARES = ("gemm_fraction", "fp8_gemm_fraction", "fp4_gemm_fraction", "hbm_fraction", "scaleup_fraction",
                 "nvls_allreduce_gain", "rate_spread", "overlap_gemm_slowdown", "grouped_gemm_fraction",
                 "grouped_gemm_fraction_eight", "fp8_grouped_gemm_fraction")
# Rubin as announced (GTC 2025, CES 2026): nothing measured, so Blackwell's shares stand for it, each an
# estimate saying so; not its clock model (Rubin's power and clocks are unpublished: the TDP never caps) nor
# its dispatchers' rates (measured on NVLink 5: Rubin's run at its link's rate).
FAMILIES["rubin"] = replace(
    _BLACKWELL, key="rubin", name="NVIDIA Rubin (announced)", full_clock_power_w=float("nan"), dispatcher_gbyte_s={},
    dispatcher_network_gbyte_s={},
    reference_hbm_gbyte_s=22000.0,
    basis=_borrowed({name: _BLACKWELL.basis[name] for name in _RUBIN_SHARES}, "Blackwell",
                    "no Rubin part has shipped to measure (announced H2 2026)"))
FAMILIES["cdna3"] = DeviceFamily(
    key="cdna3", name="AMD CDNA 3 (MI300X, MI325X)", vendor="AMD",
    gemm_fraction=MI300X_BF16_TFLOPS / MI300X_BF16_PEAK, fp8_gemm_fraction=MI300X_FP8_TFLOPS / MI300X_FP8_PEAK,
    hbm_fraction=MI300X_TRIAD_TBYTE_S / MI300X_HBM_TBYTE_S, scaleup_fraction=MI300X_RING_BUSBW / MI300X_XGMI_ONE_WAY,
    conv_fraction=float("nan"), reference_sm_count=304, reference_hbm_gbyte_s=MI300X_HBM_TBYTE_S * 1000,
    overlap_gemm_slowdown=OVERLAP_SLOWDOWN, basis=CDNA3_BASIS)
# CDNA 4 (MI350X, MI355X), measured on an MI355X at its 1,400 W: BF16 matmul 1,565.0 TFLOPS at 12288 x 8192 x
# 8192 (Bekman's maximum-achievable-matmul table, torch 2.8 ROCm 7.0.2, whose "theory 2300" is the MI350X's peak:
# over the MI355X's 2,516.6); hipBLASLt FP8 GEMM 3,130.21 at 8192^3 (AMD ROCm blog "FP8 GEMM Optimization on
# AMD CDNA4", 2026-03-10, Table 5); an MXFP4 GEMM 5,255 at 4096 x 4096 x 32768 (AMD ROCm blog "Gluon GEMM
# tutorial", May 2026). Peaks: 256 CUs at 2.4 GHz, 4,096 FP16 FLOPs a clock a CU, twice for FP8, four times for
# MXFP4. No HBM or RCCL microbenchmark found: CDNA 3's, estimates. Its FP4 is MXFP4: NVFP4 is refused. Its
# sustained clock under each part's cap is fitted (cdna4_full_clock_power_w): no clock was measured under load.
MI355X_BF16_PEAK = 256 * 2.4e9 * 4096 / 1e12
MI355X_BF16_TFLOPS, MI355X_FP8_TFLOPS, MI355X_MXFP4_TFLOPS = 1565.0, 3130.21, 5255.0
CDNA4_MEASURED = {
    "gemm_fraction": ("measured", f"{BEKMAN}: MI355X 1565.0 TFLOPS BF16 at 12288x8192x8192 (its 'theory 2300' is "
                                  "the MI350X's peak; over the MI355X's 2,516.6), at the part's 1,400 W"),
    "fp8_gemm_fraction": ("measured", "AMD ROCm blog 'FP8 GEMM Optimization on AMD CDNA4' (2026-03-10), Table 5: "
                                      "hipblaslt-bench FP8 E4M3 3,130.21 TFLOPS at 8192^3 on an MI355X, ROCm 7.1.0, "
                                      "over 5,033.2"),
    "fp4_gemm_fraction": ("measured", "AMD ROCm blog 'Gluon GEMM tutorial' (May 2026): MXFP4 (a4w4) GEMM 5,255 "
                                      "TFLOPS at 4096x4096x32768 on an MI355X, over 10,066.3"),
    "full_clock_power_w": ("fitted", "cdna4_full_clock_power_w (simcore/data/fitted_constants.yaml): no clock under "
                                     "load measured; fitted on MLPerf Training's MI350X / MI355X throughput ratios"),
}
FAMILIES["cdna4"] = replace(
    FAMILIES["cdna3"], key="cdna4", name="AMD CDNA 4 (MI350X, MI355X)", reference_sm_count=256,
    reference_hbm_gbyte_s=8000.0, gemm_fraction=MI355X_BF16_TFLOPS / MI355X_BF16_PEAK,
    fp8_gemm_fraction=MI355X_FP8_TFLOPS / (2 * MI355X_BF16_PEAK),
    fp4_gemm_fraction=MI355X_MXFP4_TFLOPS / (4 * MI355X_BF16_PEAK), shares_measured_at_w=1400.0,
    fitted={"full_clock_power_w": "cdna4_full_clock_power_w"},
    basis={**_borrowed({name: CDNA3_BASIS[name] for name in ("hbm_fraction", "scaleup_fraction",
                                                              "overlap_gemm_slowdown")},
                       "CDNA 3 (MI300X)", "no CDNA 4 microbenchmark found"), **CDNA4_MEASURED})
GEMM_SHARES = ("gemm_fraction", "fp8_gemm_fraction", "fp4_gemm_fraction")


def with_fitted(family: DeviceFamily, fitted: dict) -> DeviceFamily:
    """The family with its fitted constants (``family.fitted``) at their values in ``fitted`` (by the
    fitted constant's name: :class:`simcore.EngineParams`'s ``fitted``); GEMM shares measured on a part
    whose cap bound (``shares_measured_at_w``) divided by its sustained clock there, so that they are the
    full clock's and each part's own cap derates them again."""
    if not family.fitted:
        return family
    family = replace(family, **{attribute: fitted[name] for attribute, name in family.fitted.items()})
    if family.shares_measured_at_w == family.shares_measured_at_w:  # not NaN
        clock = float(sustained_clock_factor(family.shares_measured_at_w, family.full_clock_power_w))
        family = replace(family, **{name: getattr(family, name) / clock for name in GEMM_SHARES})
    return family
FAMILY_KEYS = tuple(FAMILIES)


def constant_rows(fitted: dict) -> list[dict]:
    """Every family constant with its confidence and source (for validation output and docs; a fitted
    one at its value in ``fitted``, and the shares it turns to full clock as they are used), its MoE
    dispatchers' measured rates, and each family's fused attention rates, shown by the share its usual
    kernel reaches forward with a causal mask over 8k tokens of 128-wide heads; then the host model's
    (:func:`simcore.formulas.host.constant_rows`)."""
    rows = []
    for family in (with_fitted(family, fitted) for family in FAMILIES.values()):
        for name in CONSTANT_NAMES:
            if name in family.basis:
                confidence, source = family.basis[name]
                rows.append({"family": family.key, "constant": name, "value": getattr(family, name),
                             "confidence": confidence, "source": source})
        for table, where_ in (("dispatcher_gbyte_s", ""), ("dispatcher_network_gbyte_s", " across nodes")):
            for dispatcher, points in getattr(family, table).items():
                confidence, source = family.basis[table]
                for ep, dispatch, combine in points:
                    for direction, rate in (("dispatch", dispatch), ("combine", combine)):
                        rows.append({"family": family.key, "constant": f"{dispatcher} EP{ep} {direction} GB/s{where_}",
                                     "value": rate, "confidence": confidence, "source": source})
        kernel = DEFAULT_KERNEL[FAMILY_TABLES[family.key]]
        confidence, source = BASIS[family.key]
        rows.append({"family": family.key, "constant": f"attention_rates ({kernel})",
                     "value": float(attention_shares(kernel_row(family.key, kernel), 128, 8192, True)[0]),
                     "confidence": confidence, "source": source})
    return rows + host_constant_rows()

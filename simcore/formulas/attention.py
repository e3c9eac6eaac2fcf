"""Fused attention at measured rates: forward and backward, causal and not, by head width and by
the sequence length each kernel call runs, per GPU family and kernel.

Each table is a published microbenchmark in TFLOPS, counted as its authors count them: forward
4 s^2 d heads per sequence (halved by a causal mask), backward 2.5 x the forward's FLOPs. The
engine keeps them as shares of the peak they were measured against and reads between the
measured sequence lengths (512 to 16k) and head widths by their logarithms, holding the nearest
measured value beyond either end.

* Hopper (H100 SXM5 at 700 W, clock locked at 1,830 MHz, the clock the 989 TFLOPS peak is counted
  at): FlashAttention-3 (``flash3``), cuDNN 9.1 (``cudnn``) and FlashAttention-2 2.5.8
  (``flash2``), Shah et al., FlashAttention-3, arXiv:2407.08608, Figs. 5 (forward, head widths 64,
  128 and 256) and 6 (backward, without a causal mask, widths 64 and 128). No causal backward and
  no width-256 backward were measured: the causal backward is the non-causal backward times the
  same kernel's causal / non-causal forward ratio at that width and length, and width 256 takes
  width 128's backward (both named in the basis).
* Ampere (A100 SXM4 80GB): FlashAttention-2, Dao, arXiv:2307.08691, Fig. 4: forward and backward
  together (time = 3.5 x the forward's FLOPs / rate), so the one rate serves both passes; widths 64
  and 128 (256 takes 128's).

* Blackwell (B200): no sweep by width and length is published, only best points, so its tables are
  Hopper's shapes scaled to them. Forward: FlashAttention-4 (``flash4``) reaches up to 1,613 TFLOPS
  BF16 (71.7% of 2,250) and 1.3x cuDNN 9.13 (Zadouri et al., FlashAttention-4, abstract): FA3's shares
  times 1,613 / 2,250 over FA3's best (756 of 989), cuDNN's times (1,613 / 1.3) / 2,250 over
  cuDNN 9.1's best (617 of 989). Backward: FlashMLA's B200 prefill runs 1,000 TFLOPS backward to
  1,460 forward (deepseek-ai/FlashMLA README) where FA3 on H100 runs 561 to 648 at width 128, so
  each backward share takes that ratio's ratio (0.79) as well.

Ascend takes Ampere's FlashAttention-2 shares (an estimate).
"""
import numpy as np

SEQ_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384)
HEAD_WIDTHS = (64, 128, 256)
KERNELS = ("flash2", "flash3", "cudnn", "flash4")
# Passes of a table: forward without and with a causal mask, backward without and with one.
FORWARD, FORWARD_CAUSAL, BACKWARD, BACKWARD_CAUSAL = range(4)

H100_PEAK_TFLOPS = 989.0
A100_PEAK_TFLOPS = 312.0
# FlashAttention-3 Fig. 5: forward TFLOPS by (non-causal, causal) for head widths 64, 128, 256.
_H100_FORWARD = {
    "flash3": {64: ((333, 392, 460, 476, 496, 497), (197, 265, 371, 420, 460, 473)),
               128: ((467, 565, 625, 638, 646, 648), (292, 423, 521, 579, 602, 616)),
               256: ((482, 627, 707, 736, 746, 756), (286, 427, 537, 612, 628, 642))},
    "cudnn": {64: ((335, 373, 395, 408, 412, 413), (225, 288, 334, 363, 379, 388)),
              128: ((497, 574, 617, 609, 600, 595), (315, 410, 484, 518, 529, 539)),
              256: ((470, 546, 580, 581, 580, 581), (308, 391, 450, 483, 497, 509))},
    "flash2": {64: ((282, 306, 318, 321, 322, 324), (180, 229, 262, 284, 295, 299)),
               128: ((309, 350, 362, 368, 370, 370), (191, 260, 298, 319, 333, 335)),
               256: ((275, 313, 321, 323, 324, 326), (208, 251, 278, 293, 297, 298))},
}
# FlashAttention-3 Fig. 6: backward TFLOPS without a causal mask, head widths 64 and 128.
_H100_BACKWARD = {
    "flash3": {64: (272, 363, 422, 453, 472, 474), 128: (316, 424, 501, 542, 559, 561)},
    "cudnn": {64: (266, 348, 395, 417, 432, 433), 128: (305, 408, 465, 499, 518, 516)},
    "flash2": {64: (198, 238, 264, 279, 287, 291), 128: (214, 260, 291, 310, 318, 322)},
}
# Blackwell's best points (module docstring): FA4's forward, cuDNN 9.13's (FA4 / 1.3), over the B200's
# 2,250 TFLOPS; the B200's backward / forward ratio (FlashMLA prefill) over FA3's on H100 at width 128.
B200_PEAK_TFLOPS = 2250.0
_B200_BEST_FORWARD = {"flash4": 1613.0, "cudnn": 1613.0 / 1.3}
_HOPPER_SHAPE_OF = {"flash4": "flash3", "cudnn": "cudnn"}
_B200_BACKWARD_SCALE = (1000.0 / 1460.0) / (561.0 / 648.0)
# FlashAttention-2 Fig. 4: forward and backward together on A100, (non-causal, causal) TFLOPS. The
# width-128 non-causal 512 label is hidden in the figure: read from the bar's height (about 151).
_A100_FORWARD_BACKWARD = {
    64: ((132, 153, 162, 171, 175, 176), (88, 119, 140, 156, 165, 171)),
    128: ((151, 173, 187, 196, 201, 203), (99, 133, 155, 173, 182, 189)),
}

BASIS = {
    "hopper": ("measured", "Shah et al., FlashAttention-3 (arXiv:2407.08608) Figs. 5-6: H100 SXM5 at 1,830 MHz, "
                           "forward by head width and length, causal and not; backward without a causal mask (the "
                           "causal backward scaled by the forward's causal / non-causal ratio)"),
    "ampere": ("measured", "Dao, FlashAttention-2 (arXiv:2307.08691) Fig. 4: A100 SXM4 80GB, forward and backward "
                           "together by head width and length, causal and not"),
    "blackwell": ("secondary", "FlashAttention-4 (abstract): B200 forward up to 1,613 TFLOPS BF16, 1.3x cuDNN 9.13; "
                               "deepseek-ai/FlashMLA README: B200 prefill 1,460 TFLOPS forward, 1,000 backward; "
                               "Hopper's shapes by width and length scaled to these best points"),
    "ascend": ("estimate", "no 910B fused-attention sweep found: Ampere's FlashAttention-2 shares"),
    "rubin": ("estimate", "no Rubin part has shipped to measure: Blackwell's tables"),
    "cdna3": ("estimate", "no MI300X fused-attention sweep found: Ampere's FlashAttention-2 shares (ROCm builds "
                          "FlashAttention-2 on Composable Kernel)"),
    "cdna4": ("estimate", "no MI355X fused-attention sweep found: Ampere's FlashAttention-2 shares"),
}
# The kernels each family has tables for, and the table each (family, kernel) reads.
FAMILY_TABLES = {"hopper": "hopper", "blackwell": "blackwell", "ampere": "ampere", "ascend": "ampere",
                 "rubin": "blackwell", "cdna3": "ampere", "cdna4": "ampere"}
TABLE_KERNELS = {"hopper": ("flash2", "flash3", "cudnn"), "blackwell": ("cudnn", "flash4"), "ampere": ("flash2",)}
# What a workload that names no kernel runs: Transformer Engine's fused attention (cuDNN) on Hopper
# and later, FlashAttention-2 before.
DEFAULT_KERNEL = {"hopper": "cudnn", "blackwell": "cudnn", "ampere": "flash2"}


def _hopper_table(kernel: str) -> np.ndarray:
    forward, backward = _H100_FORWARD[kernel], _H100_BACKWARD[kernel]
    rows = []
    for width in HEAD_WIDTHS:
        plain, causal = (np.array(v, float) for v in forward[width])
        back = np.array(backward[min(width, 128)], float)
        rows.append((plain, causal, back, back * causal / plain))
    return np.array(rows).transpose(1, 0, 2) / H100_PEAK_TFLOPS


def _blackwell_table(kernel: str) -> np.ndarray:
    hopper = _hopper_table(_HOPPER_SHAPE_OF[kernel])
    best_forward = hopper[FORWARD].max()
    scale = _B200_BEST_FORWARD[kernel] / B200_PEAK_TFLOPS / best_forward
    return hopper * scale * np.array([1.0, 1.0, _B200_BACKWARD_SCALE, _B200_BACKWARD_SCALE])[:, None, None]


def _ampere_table() -> np.ndarray:
    rows = []
    for width in HEAD_WIDTHS:
        plain, causal = (np.array(v, float) for v in _A100_FORWARD_BACKWARD[min(width, 128)])
        rows.append((plain, causal, plain, causal))
    return np.array(rows).transpose(1, 0, 2) / A100_PEAK_TFLOPS


# Every (table, kernel) stacked: (kernel rows, passes, head widths, lengths), shares of the peak.
TABLE_ROWS = tuple((table, kernel) for table, kernels in TABLE_KERNELS.items() for kernel in kernels)
_TABLES = {"hopper": _hopper_table, "blackwell": _blackwell_table, "ampere": lambda kernel: _ampere_table()}
SHARES = np.array([_TABLES[table](kernel) for table, kernel in TABLE_ROWS])
_LOG_LENGTHS = np.log2(SEQ_LENGTHS)
_LOG_WIDTHS = np.log2(HEAD_WIDTHS)


def kernel_row(family_key: str, kernel: str) -> int | None:
    """The row of :data:`SHARES` a family's kernel reads ("default": the family's usual kernel);
    None where the family has no measurement of that kernel."""
    table = FAMILY_TABLES[family_key]
    kernel = DEFAULT_KERNEL[table] if kernel == "default" else kernel
    return TABLE_ROWS.index((table, kernel)) if (table, kernel) in TABLE_ROWS else None


def _position(log_value, grid):
    """(lower index, weight of the upper) of values on a log grid, held at the ends."""
    clipped = np.clip(log_value, grid[0], grid[-1])
    lower = np.clip(np.searchsorted(grid, clipped, side="right") - 1, 0, len(grid) - 2)
    return lower, (clipped - grid[lower]) / (grid[lower + 1] - grid[lower])


def attention_shares(row, head_width, length, causal):
    """(forward, backward) share of the peak a fused attention kernel reaches (``row`` into
    :data:`SHARES`) for heads ``head_width`` wide over ``length`` tokens, causal or not: read
    between the measured points by the logarithms of width and length."""
    row, causal = np.asarray(row, np.intp), np.asarray(causal, np.intp)
    width_at, width_w = _position(np.log2(head_width), _LOG_WIDTHS)
    length_at, length_w = _position(np.log2(length), _LOG_LENGTHS)
    flat = SHARES.ravel()
    passes, widths, lengths = SHARES.shape[1:]

    def read(pass_index):
        base = (row * passes + pass_index) * widths

        def at(width, length):
            return flat[(base + width) * lengths + length]

        low = at(width_at, length_at) * (1 - length_w) + at(width_at, length_at + 1) * length_w
        high = at(width_at + 1, length_at) * (1 - length_w) + at(width_at + 1, length_at + 1) * length_w
        return low * (1 - width_w) + high * width_w

    # A pass's causal table follows its plain one (FORWARD_CAUSAL = FORWARD + 1, likewise backward).
    return read(FORWARD + causal), read(BACKWARD + causal)

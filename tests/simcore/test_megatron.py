"""Reading a Megatron-LM training log (simcore.tools.megatron): the logged intervals' step times and the
per-iteration timers, written here as Megatron's training_log and timers.log print them."""
import pytest

from simcore.errors import ScenarioError
from simcore.tools.megatron import parse_megatron_log


def megatron_log(elapsed_ms=(15210.3, 14712.8, 14790.0, 14755.1), forward_backward_ms=(14800.5, 14300.2, 14390.0,
                                                                                         14350.7)) -> str:
    """A log of four intervals of ten iterations, each with its timers (one report by its maximum only),
    between set-up and checkpoint lines, some with a logger's prefix."""
    lines = ["> building GPT model ...", "INFO:megatron.core.timers:(min, max) time across ranks (ms):",
             "    model-and-optimizer-setup ......................: (1020.90, 1022.97)", "training ..."]
    for i, (elapsed, forward_backward) in enumerate(zip(elapsed_ms, forward_backward_ms)):
        lines.append(f" [2026-12-01 10:0{i}:00] iteration {10 * (i + 1):>8}/    1000 | consumed samples: "
                     f"{5120 * (i + 1):>12} | elapsed time per iteration (ms): {elapsed:.1f} | learning rate: "
                     "1.000000E-04 | global batch size:   512 | lm loss: 8.123456E+00 | loss scale: 1.0 | grad norm: "
                     "1.234 |")
        if i == 2:
            lines += ["max time across ranks (ms):",
                      f"    forward-backward ...............................: {forward_backward:.2f}",
                      "    optimizer ......................................: 340.00"]
        else:
            lines += ["(min, max) time across ranks (ms):",
                      f"    forward-backward ...............................: ({forward_backward - 9:.2f}, "
                      f"{forward_backward:.2f})",
                      "    forward-compute ................................: (4100.00, 4200.00)",
                      "    optimizer ......................................: (350.01, 352.33)"]
    lines += ["(min, max) time across ranks (ms):", "    save-checkpoint ................................: "
              "(9000.00, 9000.00)"]
    return "\n".join(lines) + "\n"


def test_a_megatron_log_gives_its_median_step_after_the_first_interval_and_its_timers():
    log = parse_megatron_log(megatron_log())
    assert log.iterations == [10, 20, 30, 40] and log.elapsed_ms == [15210.3, 14712.8, 14790.0, 14755.1]
    assert log.step_time_s() == pytest.approx(14.7551)  # the median of the last three: the first is warm-up
    assert log.timers_ms["forward-backward"] == [14800.5, 14300.2, 14390.0, 14350.7]  # each report's maximum
    assert log.timer_means_ms() == {"forward-backward": 14350.7, "forward-compute": 4200.0, "optimizer": 352.33}
    assert "model-and-optimizer-setup" not in log.timers_ms and "save-checkpoint" not in log.timers_ms
    one = parse_megatron_log(megatron_log(elapsed_ms=(15000.0,), forward_backward_ms=(14000.0,)))
    assert one.step_time_s() == 15.0  # one interval: itself


def test_a_log_without_iteration_lines_is_refused_naming_the_field():
    with pytest.raises(ScenarioError, match="elapsed time per iteration") as refused:
        parse_megatron_log("> building GPT model ...\ntraining ...\n")
    assert refused.value.field == "megatron_log"

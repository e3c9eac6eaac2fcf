"""An optical scale-up network's modules and fibres as parts: counted, powered, priced and failing."""
import copy

import pytest

from simcore import evaluate
from simcore.tools.references import GB200_TRAY, NVL72_RACKS

# A 384-NPU optical scale-up domain as CloudMatrix 384's: 18 modules a GPU (6,912 a supernode).
OPTICAL = {**GB200_TRAY, "gpus": 8, "scaleup_domain_gpus": 384, "compute_nics": 8, "scaleup_optics_per_gpu": 18.0}
CLUSTER = {**NVL72_RACKS, "node": OPTICAL, "node_count": 96, "rack": {"nodes_per_rack": 4},
           "reliability": {"profile": "llama3"}}


def run(**node):
    cluster = copy.deepcopy(CLUSTER)
    cluster["node"].update(node)
    return evaluate({"cluster": cluster})


def test_the_modules_and_fibres_are_counted_and_draw_power():
    result = run()
    fabric, power = result["fabric"], result["power"]
    assert fabric["scaleup_transceivers"] == 2 * 6912 and fabric["scaleup_fibers"] == 6912
    assert power["scaleup_optics_w"] == 2 * 6912 * 16  # no figure given: 8 W per 400 Gb/s at 800 Gb/s
    assert run(scaleup_optic_w=12.0)["power"]["scaleup_optics_w"] == 2 * 6912 * 12
    copper = run(scaleup_optics_per_gpu=0.0)
    assert power["it_total_w"] == pytest.approx(copper["power"]["it_total_w"] + 2 * 6912 * 16)


def test_an_unpriced_module_leaves_the_total_open_and_the_links_fail_as_fabric_links():
    result = run()
    assert "scaleup_transceivers" in result["cost"]["unpriced"] and result["cost"]["capex_total"] is None
    copper = run(scaleup_optics_per_gpu=0.0)
    links = result["reliability"]["by_category_per_day"]
    assert links["network-switch-cable"] > copper["reliability"]["by_category_per_day"]["network-switch-cable"]

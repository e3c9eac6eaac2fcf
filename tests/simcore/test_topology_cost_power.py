"""Fat-tree sizing (FF III, Table III), prices with the relative price book, power and storage."""
import numpy as np
import pytest

from simcore import evaluate
from simcore.errors import ScenarioError
from simcore.formulas.topology import fat_tree, max_endpoints
from simcore.tools.references import DGX_3LAYER, FF_2ZONE, FF_3LAYER


def test_two_layer_40_port_fat_tree_holds_800_endpoints_on_20_spines_and_40_leaves():
    tree = fat_tree(800, 40)
    assert (tree.spine_switches, tree.leaf_switches, tree.switches) == (20, 40, 60)
    assert tree.capacity_endpoints == 800 and bool(tree.fits)
    assert not bool(fat_tree(801, 40).fits)


def test_fire_flyer_two_zones_use_122_switches():
    tree = fat_tree(1600, 40, zones=2, interzone_switches=2)
    assert (tree.leaf_switches, tree.spine_switches, tree.interzone_switches) == (80, 40, 2)
    assert tree.switches == 122


def test_three_layer_rule_reaches_200_and_1320():
    """Pods of 20 leaves + 20 spines; the core is provisioned for the next power-of-two pod count."""
    pcie = fat_tree(1600, 40, layers=3)  # 80 leaves -> 4 pods -> core for 4 pods: 4*20*20/40 = 40
    assert (pcie.core_switches, pcie.spine_switches, pcie.leaf_switches) == (40, 80, 80)
    dgx = fat_tree(10_000, 40, layers=3)  # 500 leaves -> 25 pods -> core for 32 pods: 320
    assert (dgx.core_switches, dgx.spine_switches, dgx.leaf_switches) == (320, 500, 500)
    assert (pcie.switches, dgx.switches) == (200, 1320)
    exact = fat_tree(10_000, 40, layers=3, core_pods="exact")
    assert exact.core_switches == 250 and exact.switches == 1250


def test_four_planes_of_128_port_switches_hold_32768_gpus():
    assert max_endpoints(128, 2, planes=4) == 32_768
    assert bool(fat_tree(32_768, 128, planes=4).fits)
    assert not bool(fat_tree(32_769, 128, planes=4).fits)
    assert fat_tree(32_768, 128, planes=4).switches == 4 * (128 + 64)


def test_oversubscription_and_rails():
    blocking = fat_tree(4000, 64, oversubscription=3)
    assert blocking.switches < fat_tree(4000, 64).switches
    assert blocking.leaf_switches == np.ceil(4000 / 48)
    railed = fat_tree(8 * 100, 40, rails=8)  # 100 nodes: each rail of 100 GPUs needs 5 leaves
    assert railed.leaf_switches == 8 * 5


def test_links_and_transceivers():
    tree = fat_tree(800, 40)
    assert tree.endpoint_links == 800
    assert tree.switch_links == 40 * 20
    assert tree.switch_modules(1) == 2 * 800  # a module at both ends of every link
    assert tree.switch_modules(2) == 40 * 10 + 20 * 20


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"radix": 41}, "fabric.switch_radix"),
        ({"layers": 4}, "fabric.layers"),
        ({"oversubscription": 0.5}, "fabric.oversubscription"),
        ({"zones": 0}, "fabric.zones"),
        ({"core_pods": "some"}, "fabric.core_pods"),
    ],
)
def test_bad_fabric_input_names_the_field(kwargs, field):
    args = {"endpoints": 100, "radix": 40, **kwargs}
    with pytest.raises(ScenarioError) as raised:
        fat_tree(args.pop("endpoints"), args.pop("radix"), **args)
    assert raised.value.field == field


def test_table_iii_prices_in_relative_units():
    results = {name: evaluate({"cluster": cluster})["cost"] for name, cluster in
               (("ff", FF_2ZONE), ("pcie3", FF_3LAYER), ("dgx", DGX_3LAYER))}
    servers_and_network = {name: cost["compute_nodes"] + cost["network"] for name, cost in results.items()}
    for name, network, total in (("ff", 350, 11600), ("pcie3", 600, 11850), ("dgx", 4000, 23000)):
        assert results[name]["network"] == pytest.approx(network, rel=0.03)
        assert servers_and_network[name] == pytest.approx(total, rel=0.03)  # Table III's total
    # FF saves about 40% of the PCIe three-layer network and costs about half the DGX build.
    assert 1 - results["ff"]["network"] / results["pcie3"]["network"] == pytest.approx(0.4, abs=0.03)
    assert servers_and_network["ff"] / servers_and_network["dgx"] == pytest.approx(0.5, abs=0.03)
    # The DGX build has no storage nodes, so its bill is complete; FF's 3FS nodes have no price.
    assert results["dgx"]["capex_total"] == pytest.approx(servers_and_network["dgx"])
    assert results["ff"]["capex_total"] is None and results["ff"]["unpriced"] == ["storage_nodes"]


def test_a_bill_with_an_unpriced_part_has_no_total():
    unpriced_optics = {**FF_2ZONE, "prices": {"currency": "REL", "switch": 2.95, "node": 9.0}}
    cost = evaluate({"cluster": unpriced_optics})["cost"]
    assert cost["storage_nodes"] is None
    assert set(cost["unpriced"]) == {"storage_nodes", "transceivers", "fibers", "endpoint_cables"}
    assert cost["capex_total"] is None and cost["network"] is None and cost["capex_per_fp16_pflops"] is None
    assert cost["compute_nodes"] == pytest.approx(1240 * 9.0)  # the priced lines still show
    priced = {**unpriced_optics, "prices": {**FF_2ZONE["prices"], "node": 9.0, "storage_node": 20.0}}
    complete = evaluate({"cluster": priced})["cost"]
    assert complete["unpriced"] == [] and complete["capex_total"] == pytest.approx(
        complete["compute_nodes"] + complete["network"] + 180 * 20.0)


def test_cluster_power_and_energy():
    document = {"cluster": {**FF_2ZONE, "prices": {**FF_2ZONE["prices"], "pue": 1.3, "energy_per_kwh": 0.1}}}
    power = evaluate(document)["power"]
    assert 3.0e6 <= power["it_total_w"] <= 4.0e6
    assert power["compute_nodes_w"] == 1240 * 2500
    assert power["facility_w"] == pytest.approx(1.3 * power["it_total_w"])
    cost = evaluate(document)["cost"]
    assert cost["energy_per_year"] == pytest.approx(power["facility_w"] * 8760 / 1000 * 0.1)


def test_twin_port_modules_serve_two_link_ends_in_the_count_the_bill_and_the_power():
    single = evaluate({"cluster": FF_2ZONE})
    twin = evaluate({"cluster": {**FF_2ZONE, "fabric": {**FF_2ZONE["fabric"], "transceiver_ports": 2}}})
    link_ends = 2 * single["fabric"]["switch_links"]
    assert single["fabric"]["transceivers"] == link_ends == 3200
    # FF's full zones: each of the 80 leaves gives one of its 20 uplinks to the inter-zone links (19 used,
    # 10 twin modules), the 40 spines use all 40 ports (20 each), the 2 inter-zone switches 40 (20 each).
    assert twin["fabric"]["transceivers"] == 80 * 10 + 40 * 20 + 2 * 20 == 1640
    priced = {**FF_2ZONE, "prices": {**FF_2ZONE["prices"], "transceiver": 1.0}}
    twin_priced = {**priced, "fabric": {**priced["fabric"], "transceiver_ports": 2}}
    assert evaluate({"cluster": twin_priced})["cost"]["transceivers"] == 1640
    # Estimated at 8 W per 400 Gb/s: a twin-port module carries 2 x 200 Gb/s here (8 W), a single one 4 W; the
    # endpoint cables draw the same in both.
    assert twin["power"]["optics_w"] == pytest.approx(single["power"]["optics_w"] + 1640 * 8 - 3200 * 4)


def test_optics_power_from_the_parts_figures_or_estimated_per_gbit_s():
    links = evaluate({"cluster": FF_2ZONE})["fabric"]
    modules, cables = links["transceivers"], links["endpoint_cables"]
    parts = {**FF_2ZONE["fabric"], "transceiver_power_w": 4.5, "endpoint_cable_power_w": 0.2}
    power = evaluate({"cluster": {**FF_2ZONE, "fabric": parts}})["power"]
    assert power["optics_w"] == pytest.approx(modules * 4.5 + cables * 0.2)
    assert power["optics_basis"] == "the parts' figures"
    estimated = evaluate({"cluster": FF_2ZONE})["power"]
    # 200 Gb/s ports: 4 W a module, 8 W a cable (two modules' worth).
    assert estimated["optics_w"] == pytest.approx(modules * 4.0 + cables * 8.0)
    assert estimated["optics_basis"].startswith("estimated: 8 W per 400 Gb/s")
    partly = evaluate({"cluster": {**FF_2ZONE, "fabric": {**FF_2ZONE["fabric"], "endpoint_cable_power_w": 0.2}}})
    assert partly["power"]["optics_w"] == pytest.approx(modules * 4.0 + cables * 0.2)
    assert partly["power"]["optics_basis"].startswith("partly estimated")
    assert power["it_total_w"] - power["optics_w"] == pytest.approx(estimated["it_total_w"] - estimated["optics_w"])


def test_twin_port_modules_are_whole_in_each_switch():
    """44-port leaves at 2:1 keep 15 uplinks: 8 twin-port modules each, not 7.5; the 20 spines take
    840 uplinks, 42 ports each: 21 modules each. Over the fabric, 1,680 ends would make 840."""
    fabric = {"switch_radix": 44, "switch_gbit_s": 200, "oversubscription": 2, "transceiver_ports": 2}
    result = evaluate({"cluster": {**FF_2ZONE, "fabric": fabric}})["fabric"]
    assert (result["leaf_switches"], result["spine_switches"], result["switch_links"]) == (56, 20, 840)
    assert result["transceivers"] == 56 * 8 + 20 * 21


def test_optical_nic_links_take_a_nic_module_a_leaf_module_port_and_a_fibre_each():
    cabled = evaluate({"cluster": FF_2ZONE})["fabric"]
    links, switch_links = cabled["endpoint_cables"], cabled["switch_links"]
    optical = {**FF_2ZONE["fabric"], "endpoint_link": "optical"}
    result = evaluate({"cluster": {**FF_2ZONE, "fabric": optical}})
    fabric = result["fabric"]
    assert fabric["endpoint_cables"] == links  # a module at each NIC
    assert fabric["fibers"] == switch_links + links
    assert fabric["transceivers"] == 2 * switch_links + links
    # Estimated: every module at 8 W per 400 Gb/s it carries (200 Gb/s ports and NICs): 4 W each.
    assert result["power"]["optics_w"] == pytest.approx((fabric["transceivers"] + links) * 4.0)


def test_a_twin_port_nic_module_serves_two_nics_of_one_node():
    """Twin-port cages at the node (a DGX H100's four OSFP ports for its eight NICs): one module for
    two NICs of a node, never one shared by two nodes; FF's nodes have one computation NIC each and
    its 3FS nodes two, so the count is 1,240 + 180 modules, not half the 1,600 NIC ports."""
    optical = {**FF_2ZONE["fabric"], "endpoint_link": "optical", "endpoint_module_ports": 2}
    result = evaluate({"cluster": {**FF_2ZONE, "fabric": optical}})
    assert result["fabric"]["endpoints"] == 1240 + 180 * 2
    assert result["fabric"]["endpoint_cables"] == 1240 + 180
    three = {**FF_2ZONE, "node": {**FF_2ZONE["node"], "compute_nics": 3, "storage_nics": 3}, "node_count": 100,
             "storage": {**FF_2ZONE["storage"], "nodes": 0}}
    shared = evaluate({"cluster": {**three, "fabric": optical}})
    assert shared["fabric"]["endpoint_cables"] == 100 * 2  # 2 modules a node for 3 NICs, not 150 pooled
    # Twin-port NIC modules at 2 x 200 Gb/s: 8 W each when estimated; the leaf modules, 4 W a 200G port.
    assert shared["power"]["optics_w"] == pytest.approx(200 * 8.0 + shared["fabric"]["transceivers"] * 4.0)
    separate = evaluate({"cluster": {**three, "fabric": {**optical, "storage_network": "separate"}}})
    assert separate["fabric"]["endpoint_cables"] == 100 * 2 + 100 * 2  # the storage NICs join their own plane
    cables = evaluate({"cluster": {**FF_2ZONE, "fabric": {**FF_2ZONE["fabric"], "endpoint_module_ports": 2}}})
    plain = evaluate({"cluster": FF_2ZONE})
    assert cables["power"]["optics_w"] == plain["power"]["optics_w"]  # NIC ports per module: optics only


def test_storage_bound_and_checkpoint(llama_workload):
    result = evaluate({"cluster": FF_2ZONE, "workload": {**llama_workload, "gpus": 512}})
    assert result["storage"]["aggregate_read_gbyte_s"] == pytest.approx(9000)
    assert result["storage"]["read_bound"] == "storage-node NICs"
    rel = result["reliability"]
    # 13B parameters x (2 + 12) bytes over 64 nodes at 10.74 GB/s each, and the 0.77 s fixed cost.
    params = result["training"]["params"]
    assert rel["checkpoint_time_s"] == pytest.approx(params * 14 / (64 * 10.74e9) + 0.77, rel=1e-6)
    assert rel["checkpoint_bound"] == "per-node write rate"


def test_a_full_three_layer_tree_never_needs_more_core_than_k_pods():
    full = fat_tree(16_000, 40, layers=3)  # k^3/4 endpoints: the textbook 5k^2/4 switches
    assert (full.core_switches, full.switches) == (400, 2000)
    assert not bool(fat_tree(16_001, 40, layers=3).fits)


def test_oversubscribed_three_layer_pods_have_fewer_spines():
    tree = fat_tree(3000, 40, layers=3, oversubscription=3)  # 30 down, 10 up per leaf
    assert tree.leaf_switches == 100 and tree.spine_switches == 5 * 10
    assert tree.switch_links == 100 * 10 + 50 * 20
    with pytest.raises(ScenarioError, match="at least one endpoint and one uplink"):
        fat_tree(100, 40, oversubscription=1e17)


def test_constraints_carry_a_code_to_act_on_and_a_sentence_to_show(ff_cluster):
    from simcore import evaluate

    overflowing = {**ff_cluster, "node_count": 5000, "prices": {**ff_cluster["prices"], "switch": None}}
    codes = {c["code"]: c["message"] for c in evaluate({"cluster": overflowing})["constraints"]}
    assert set(codes) == {"fabric.overflow", "cost.unpriced"}
    # 5,000 nodes' compute NICs and the storage nodes' NICs on a fabric that holds 1,600.
    assert codes["fabric.overflow"].startswith("fabric: 5360 endpoints exceed what the fabric holds (1600)")
    assert [c["code"] for c in evaluate({"cluster": ff_cluster})["constraints"]] == ["cost.unpriced"]

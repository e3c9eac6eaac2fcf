"""Scale-up domains beyond a node, racks and cooling: where TP and EP run, the domain as the
collective's node, rack counts and power from the parts, the facility PUE from the cooling."""
import numpy as np
import pytest

from simcore import ScenarioError, evaluate
from simcore.document import parse
from simcore.formulas.collectives import nccl_allreduce
from simcore.formulas.node import domain_io, node_io
from simcore.formulas.power import PowerParams
from simcore.tools.references import GB200_TRAY, NVL72_RACKS

MOE = {"kind": "transformer", "layers": 8, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 4096,
       "experts": 64, "moe_top_k": 8, "expert_ffn_hidden": 1536, "gated_mlp": True, "global_batch": 256,
       "micro_batch": 1, "precision": "bf16", "tp": 8, "ep": 8, "gpus": 1024, "zero_stage": 1}
HGX_NODE = {**GB200_TRAY, "gpus": 8, "scaleup_domain_gpus": None, "compute_nics": 8, "max_power_w": None}


def run(node, node_count, workload=MOE, **cluster):
    document = {"cluster": {**NVL72_RACKS, "node": node, "node_count": node_count, **cluster}, "workload": workload}
    return evaluate(document)


def test_a_72_gpu_domain_keeps_tp_8_x_ep_8_off_the_nics_and_an_8_gpu_node_puts_ep_on_them():
    rack = run(GB200_TRAY, 288)["training"]
    hgx = run(HGX_NODE, 144, rack={})["training"]
    assert rack["placement"] == {"tp": "scale-up", "cp": "none", "ep": "scale-up", "pp": "none"}
    assert hgx["placement"]["tp"] == "scale-up" and hgx["placement"]["ep"] == "network"
    assert hgx["step_parts_s"]["ep_all_to_all"] > 5 * rack["step_parts_s"]["ep_all_to_all"]
    # Past the domain, EP spills onto the NICs on the rack as well.
    spilled = run(GB200_TRAY, 288, {**MOE, "ep": 16})["training"]
    assert spilled["placement"]["ep"] == "network"


def test_groups_that_cannot_all_sit_whole_in_the_racks_cross_the_network_and_the_report_says_so():
    """1,152 GPUs in TP 8 x EP 8 groups of 64: 16 racks of 72 hold 16 whole groups, not 18."""
    whole = run(GB200_TRAY, 288)["training"]  # 1,024 GPUs: 16 groups, one to a rack
    job = {**MOE, "gpus": 1152, "global_batch": 288}
    crossing = run(GB200_TRAY, 288, job)["training"]
    assert crossing["placement"]["ep"] == "network: groups cross scale-up domains"
    assert crossing["placement"]["tp"] == "scale-up"  # groups of 8: nine to a rack
    assert crossing["step_parts_s"]["ep_all_to_all"] > 5 * whole["step_parts_s"]["ep_all_to_all"]
    roomy = run(GB200_TRAY, 324, job)["training"]  # 18 racks: every group whole, 8 GPUs of each rack idle
    assert roomy["placement"]["ep"] == "scale-up" and roomy["placement"]["tp"] == "scale-up"
    divides = run(GB200_TRAY, 288, {**job, "tp": 4, "ep": 18, "experts": 72})["training"]  # 72 = 4 x 18
    assert divides["placement"]["ep"] == "scale-up"


def test_a_supernodes_network_racks_are_counted_beside_its_compute_racks():
    node = {**GB200_TRAY, "gpus": 8, "scaleup_domain_gpus": 384}
    racks = evaluate({"cluster": {**NVL72_RACKS, "node": node, "node_count": 48 * 3,
                                  "rack": {"nodes_per_rack": 4, "network_racks_per_domain": 4}}})["racks"]
    # 3 x (12 + 4), and a rack of the fabric's switches (38 1U switches in a 42U rack)
    assert (racks["count"], racks["network_count"], racks["fabric_count"], racks["total_count"]) == (36, 12, 1, 49)
    assert evaluate({"cluster": NVL72_RACKS})["racks"]["network_count"] == 0


def test_hierarchical_allreduce_over_domains_never_beats_the_scale_out_bound():
    node = parse({"cluster": {**NVL72_RACKS}})["cluster"]["node"]
    io = node_io(node, node["accelerator"], 4, scaleup_fraction=1.0)
    sizes = 2.0 ** np.arange(20, 34)
    for domains in (2, 4, 16, 64):
        result = nccl_allreduce(sizes, domains, domain_io(io, 4, 72), nvlink_all_to_all=True)
        # Across N domains each must move 2 S (N - 1) / N through its 72 NICs at least.
        bound = io.nic_bw_gbyte_s * 18 / 2 * domains / (domains - 1)
        assert np.all(result.algbw_gbyte_s <= bound * (1 + 1e-9))
        per_tray = nccl_allreduce(sizes[-1], domains * 18, io, nvlink_all_to_all=True)
        assert result.algbw_gbyte_s[-1] > per_tray.algbw_gbyte_s  # large messages gain from the domain


def test_rack_counts_and_power_follow_from_the_parts():
    racks = run(GB200_TRAY, 288)["racks"]
    p = PowerParams()  # GPUs at 0.85 of TDP with their board's share, CPUs, NICs; liquid cooled: no fans
    tray_w = (4 * (1200 * 0.85 + p.board_w_per_gpu) + 2 * 250 + 4 * p.nic_w) / p.psu_efficiency
    assert (racks["count"], racks["nodes_per_rack"], racks["gpus_per_rack"]) == (16, 18, 72)
    assert racks["power_w"] == pytest.approx(18 * tray_w + 4400)  # the switch trays and power shelves
    bare = run(GB200_TRAY, 288, rack={"nodes_per_rack": 18, "cooling": "liquid"})
    assert bare["racks"]["power_w"] == pytest.approx(18 * tray_w)
    extra = run(GB200_TRAY, 288, rack={"nodes_per_rack": 18, "cooling": "liquid", "extra_w": 9000.0})
    assert extra["racks"]["power_w"] == pytest.approx(18 * tray_w + 9000)
    assert extra["power"]["it_total_w"] == pytest.approx(bare["power"]["it_total_w"] + 16 * 9000)
    limited = run(HGX_NODE, 144, rack={"power_limit_w": 40_000.0})
    # No vendor maximum given: the parts at nameplate, the air-cooled node's fans with them.
    node_max_w = (8 * (1200 + p.board_w_per_gpu) + 2 * 250 + 8 * p.nic_w) * (1 + p.fan_share_air) / p.psu_efficiency
    racks = limited["racks"]
    assert limited["power"]["node_max_w"] == pytest.approx(node_max_w)
    assert limited["power"]["node_max_basis"] == "parts at nameplate"
    assert racks["nodes_per_rack"] == 40_000 // node_max_w and racks["count"] == np.ceil(144 / (40_000 // node_max_w))
    assert racks["max_power_w"] == pytest.approx(3 * node_max_w) and racks["max_power_w"] <= 40_000
    assert racks["within_power_limit"]
    vendor = run({**HGX_NODE, "max_power_w": 14_300.0}, 144, rack={"power_limit_w": 60_000.0})
    assert vendor["power"]["node_max_basis"] == "vendor maximum" and vendor["racks"]["nodes_per_rack"] == 4
    over = run(GB200_TRAY, 288, rack={"nodes_per_rack": 18, "power_limit_w": 50_000.0})["racks"]
    assert over["within_power_limit"] is False
    # No count, no limit, a one-node domain: the default rack budget (PowerParams.rack_budget_w, 12 kW).
    budgeted = run(HGX_NODE, 144, rack={})["racks"]
    assert budgeted["budget_w"] == 12_000 and budgeted["nodes_per_rack_basis"].startswith("default budget")
    assert budgeted["nodes_per_rack"] == 1  # one 12 kW node fits, two do not
    small = run({**HGX_NODE, "max_power_w": 2_900.0}, 144, rack={})["racks"]
    assert small["nodes_per_rack"] == 12_000 // 2_900 and small["count"] == np.ceil(144 / 4)
    assert racks["nodes_per_rack_basis"] == "the site's power limit" and racks["budget_w"] == 40_000
    nvl72 = run(GB200_TRAY, 288)["racks"]
    assert nvl72["nodes_per_rack_basis"] == "given" and nvl72["budget_w"] is None
    domain = run(GB200_TRAY, 288, rack={})["racks"]  # no count given: the 18 trays of one NVLink domain
    assert (domain["nodes_per_rack"], domain["nodes_per_rack_basis"]) == (18, "one scale-up domain")


def test_the_facility_pue_follows_the_hall_not_the_racks_cooling_unless_one_is_given():
    liquid = run(GB200_TRAY, 288)["power"]
    air = run(GB200_TRAY, 288, rack={"nodes_per_rack": 18, "cooling": "air"})["power"]
    assert (liquid["pue"], air["pue"]) == (1.58, 1.58)  # the default hall: Uptime's industry average
    assert liquid["pue_basis"].startswith("industry-average hall: Uptime")
    assert air["facility_w"] == pytest.approx(air["it_total_w"] * 1.58)
    hyperscale = run(GB200_TRAY, 288, rack={"nodes_per_rack": 18, "hall": "hyperscale"})["power"]
    assert hyperscale["pue"] == 1.10 and hyperscale["pue_basis"].startswith("hyperscale hall: Google")
    assert hyperscale["facility_w"] == pytest.approx(hyperscale["it_total_w"] * 1.10)
    given = run(GB200_TRAY, 288, prices={"currency": "REL", "pue": 1.3}, rack={"hall": "hyperscale"})["power"]
    assert (given["pue"], given["pue_basis"]) == (1.3, "given (the plan's or its price book's)")
    with pytest.raises(ScenarioError) as refused:
        run(GB200_TRAY, 288, rack={"hall": "basement"})
    assert refused.value.field == "cluster.rack.hall"


def test_a_domain_must_be_whole_nodes_on_an_all_to_all_fabric():
    for node, words in (({**GB200_TRAY, "scaleup_domain_gpus": 70}, "whole number"),
                        ({**GB200_TRAY, "nvlink_topology": "pairs"}, "all-to-all")):
        with pytest.raises(ScenarioError) as raised:
            run(node, 288)
        assert raised.value.field == "cluster.node.scaleup_domain_gpus" and words in raised.value.reason


def test_nvlink_sharp_speeds_tp_allreduces_by_the_measured_share_but_not_sp_or_ampere():
    from simcore.formulas.devices import FAMILIES

    dense = {**MOE, "experts": 0, "moe_top_k": 0, "ep": 1, "ffn_hidden": 16384}
    plain = run(HGX_NODE, 128, dense, rack={})["training"]["step_parts_s"]["tp_traffic"]
    sharp = run({**HGX_NODE, "nvlink_sharp": True}, 128, dense, rack={})["training"]["step_parts_s"]
    gain = FAMILIES["blackwell"].nvls_allreduce_gain
    assert gain == pytest.approx(838 / 682)  # 8 x B200 all_reduce, NVLS against ring
    assert 1.1 < plain / sharp["tp_traffic"] <= gain  # the latency part does not gain
    big = {**dense, "micro_batch": 16, "global_batch": 2048}  # 0.5 GB messages: bandwidth-bound
    ratio = (run(HGX_NODE, 128, big, rack={})["training"]["step_parts_s"]["tp_traffic"]
             / run({**HGX_NODE, "nvlink_sharp": True}, 128, big,
                   rack={})["training"]["step_parts_s"]["tp_traffic"])
    assert ratio == pytest.approx(gain, rel=0.03)
    sp = {**dense, "sequence_parallel": True}
    assert run({**HGX_NODE, "nvlink_sharp": True}, 128, sp, rack={})["training"]["step_parts_s"][
        "tp_traffic"] == run(HGX_NODE, 128, sp,
                                          rack={})["training"]["step_parts_s"]["tp_traffic"]
    assert np.isnan(FAMILIES["ampere"].nvls_allreduce_gain)


def test_part_domains_and_bridged_pairs_are_handled():
    partial = evaluate({"cluster": {**NVL72_RACKS, "node_count": 20}})  # one full rack and two trays
    assert partial["cluster"]["scaleup_domains"] == 2 and partial["collectives"]["nccl"]["algbw_gbyte_s"] > 0
    # NVLink SHARP needs switches: bridged pairs gain nothing.
    pairs = {**HGX_NODE, "nvlink_topology": "pairs", "nvlink_sharp": True}
    dense = {**MOE, "experts": 0, "moe_top_k": 0, "ep": 1, "tp": 2}
    with_flag = run(pairs, 128, dense, rack={})["training"]["step_parts_s"]["tp_traffic"]
    without = run({**pairs, "nvlink_sharp": False}, 128, dense, rack={})["training"]["step_parts_s"]
    assert with_flag == without["tp_traffic"]
    # Without NVLink in use, TP 8 on 4-GPU trays is larger than the domain the job uses.
    tray = run(GB200_TRAY, 288, {**MOE, "use_nvlink": False})["training"]
    assert tray["infeasible_reason"].startswith("TP is larger than a scale-up domain")


def test_a_domain_tree_allreduce_never_beats_the_nvlink():
    result = evaluate({"cluster": NVL72_RACKS, "options": {"message_bytes": 2**33}})["collectives"]["nccl"]
    per_gpu_nvlink = GB200_TRAY["accelerator"]["scaleup_bw_gbyte_s"] / 2
    assert result["algbw_gbyte_s"] <= per_gpu_nvlink


def test_a_scale_up_domain_fails_as_a_unit_at_the_rate_a_scenario_gives():
    from simcore.tools.twin import REPAIR, Fabric, Job, Twin

    plain = evaluate({"cluster": NVL72_RACKS, "workload": MOE})["reliability"]
    assert plain["by_category_per_day"]["nvlink-switch-tray"] == 0  # no published rate
    rated = {**NVL72_RACKS, "reliability": {"category_rates": {"nvlink-switch-tray": 1e-4}}}
    given = evaluate({"cluster": rated, "workload": MOE})["reliability"]
    # The job's 1,024 GPUs in TP 8 x EP 8 groups of 64 sit one group to a 72-GPU domain: 16 domains
    # (not the 15 its GPUs would fill), each failing at 1e-4 an hour, each with its own spare trays.
    assert given["job_by_category_per_day"]["nvlink-switch-tray"] == pytest.approx(1e-4 * 16 * 24)
    assert given["spare_nodes"] == 16 * given["spare_nodes_per_domain"]
    dense = evaluate({"cluster": rated, "workload": {**MOE, "ep": 1}})["reliability"]  # TP 8 groups: 9 to a rack
    assert dense["job_by_category_per_day"]["nvlink-switch-tray"] == pytest.approx(1e-4 * 15 * 24)
    assert given["node_availability"] < plain["node_availability"]
    assert "nvlink-switch-tray" not in evaluate({"cluster": {**NVL72_RACKS, "node": HGX_NODE, "node_count": 144,
                                                             "rack": {}}})["reliability"]["by_category_per_day"]
    from simcore.formulas.reliability import DOMAIN_CATEGORY, fire_flyer_categories, with_domain_category

    twin = Twin(nodes=36, gpus_per_node=4, fabric=Fabric(4, 36 * 4, 4, 6, domain_nodes=18),
                categories=with_domain_category(fire_flyer_categories()), rng=np.random.default_rng(0),
                jobs=[Job("a", 9, 1e9, 3600.0, 60.0, 60.0), Job("b", 9, 1e9, 3600.0, 60.0, 60.0)])
    twin.advance(600.0)
    index = [c.key for c in twin.categories].index(DOMAIN_CATEGORY.key)
    events = twin.apply_failure(index, part=0)  # rack 0: nodes 0-17, both jobs
    assert sum(e.kind == "job-interrupted" for e in events) == 2
    assert np.all(twin.node_state[:18] == REPAIR) and np.all(twin.node_job[:18] == -1)
    assert (twin.node_job >= 0).sum() == 18  # both moved to the other rack


def test_a_rack_never_holds_more_units_than_it_has_and_the_height_binding_is_named():
    """A 10U DGX B200 at a 130 kW rack limit: the power would allow 9, the 42U rack holds 4."""
    dgx = {**HGX_NODE, "max_power_w": 14_300.0, "rack_units": 10}
    racks = run(dgx, 144, rack={"power_limit_w": 130_000.0})["racks"]
    assert (racks["nodes_per_rack"], racks["nodes_per_rack_basis"], racks["count"]) == (4, "the rack's height", 36)
    assert racks["units_used"] == 40 <= racks["units"] == 42
    # Parts in the rack take their height: an NVL72's 18 trays beside 17U of switch trays and shelves fit
    # 42U; in a 30U rack the trays are cut to 13 and the rack power with them.
    nvl72 = {**GB200_TRAY, "rack_units": 1}
    fits = run(nvl72, 288, rack={**NVL72_RACKS["rack"], "extra_units": 17})["racks"]
    assert fits["nodes_per_rack"] == 18 and fits["units_used"] == 35
    short = run(nvl72, 288, rack={**NVL72_RACKS["rack"], "extra_units": 17, "units": 30})["racks"]
    assert short["nodes_per_rack"] == 13 and short["units_used"] == 30
    # The fabric's switches fill racks of their own, counted in the floor's total.
    two_u = run(dgx, 144, rack={"power_limit_w": 130_000.0}, fabric={"switch_radix": 64, "switch_gbit_s": 400,
                                                                     "switch_rack_units": 2})["racks"]
    assert two_u["fabric_count"] == np.ceil(run(dgx, 144)["fabric"]["switches"] / 21)
    assert two_u["total_count"] == two_u["count"] + two_u["fabric_count"]

"""A fat-tree's wiring: the counts fat_tree gives, every port used once, NIC i of each node on plane
i mod P and rail (i div P) mod R, zones of whole nodes, and a leaf's uplinks spread over the spines."""
import numpy as np
import pytest

from simcore import ScenarioError
from simcore.formulas.topology import SWITCH_TIERS, fat_tree, fat_tree_wiring
from simcore.stages.cluster import fabric_wiring

CASES = [
    dict(endpoints=10_000, radix=40, layers=3),  # DGX-A100 (FF Table III): 500 + 500 + 320
    dict(endpoints=10_000, radix=40, layers=3, core_pods="exact"),
    dict(endpoints=1_600, radix=40, layers=2, zones=2, interzone_switches=2),  # FF's two zones
    dict(endpoints=16_384, radix=64, layers=2, planes=8),
    dict(endpoints=8_192, radix=64, layers=3, rails=8),
    dict(endpoints=100, radix=40, layers=2, oversubscription=3),
    dict(endpoints=5_000, radix=64, layers=3, zones=2, planes=2, interzone_switches=4, rails=4),
]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_the_wiring_has_the_counts_and_uses_each_port_once(case):
    case = dict(case)
    endpoints, radix = case.pop("endpoints"), case.pop("radix")
    counts = fat_tree(endpoints, radix, **case)
    wiring = fat_tree_wiring(endpoints, radix, **case)
    tiers = np.bincount(wiring.switch_tier, minlength=4)
    assert tiers.tolist() == [int(counts.leaf_switches), int(counts.spine_switches), int(counts.core_switches),
                              int(counts.interzone_switches)]
    assert wiring.endpoint_switch.size == endpoints and wiring.lower_switch.size == int(counts.switch_links)
    switch = np.concatenate([wiring.endpoint_switch, wiring.lower_switch, wiring.upper_switch])
    port = np.concatenate([wiring.endpoint_port, wiring.lower_port, wiring.upper_port])
    assert np.unique(switch * 1000 + port).size == switch.size  # no port twice
    intra = wiring.switch_tier[wiring.upper_switch] != SWITCH_TIERS.index("interzone")
    tree_ports = np.concatenate([wiring.endpoint_port, wiring.lower_port[intra], wiring.upper_port])
    assert tree_ports.max() < radix  # only inter-zone links may take ports past the radix
    assert (wiring.switch_tier[wiring.endpoint_switch] == 0).all()
    assert (wiring.switch_tier[wiring.upper_switch] > wiring.switch_tier[wiring.lower_switch]).all()


def test_nic_i_of_every_node_is_on_plane_i_mod_p_and_rail_i_div_p_mod_r():
    wiring = fat_tree_wiring(64 * 8, 64, layers=2, planes=2, rails=4)
    nic = np.arange(64 * 8) % 8
    plane = wiring.switch_fabric[wiring.endpoint_switch]
    assert (plane == nic % 2).all()
    leaves_per_rail = int(fat_tree(64 * 8, 64, planes=2, rails=4).leaf_switches) // 2 // 4
    rail = wiring.switch_index[wiring.endpoint_switch] // leaves_per_rail
    assert (rail == (nic // 2) % 4).all()


def test_a_leafs_uplinks_go_to_different_spines():
    wiring = fat_tree_wiring(800, 40, layers=2)  # 40 leaves of 20 up, 20 spines
    leaf_links = wiring.switch_tier[wiring.lower_switch] == 0
    pairs = wiring.lower_switch[leaf_links] * 100000 + wiring.upper_switch[leaf_links]
    assert np.unique(pairs).size == pairs.size == 40 * 20


def test_a_fabric_too_small_is_refused():
    with pytest.raises(ScenarioError, match="do not fit"):
        fat_tree_wiring(801, 40, layers=2)


ZONED = dict(storage_network="shared", radix=40, layers=2, zones=2, planes=1, rails=1, oversubscription=1.0,
             interzone_switches=2, core_pods="power_of_two")


def test_zones_hold_whole_nodes_and_a_storage_node_has_a_nic_in_each():
    main, plane = fabric_wiring(1240, 1, 0, 180, 2, **ZONED)  # Fire-Flyer 2: 1,240 nodes, 180 3FS nodes
    zone = main.switch_fabric[main.endpoint_switch]
    assert plane is None
    assert np.bincount(zone[:1240]).tolist() == [620, 620] and (np.diff(zone[:1240]) >= 0).all()
    assert (zone[1240::2] == 0).all() and (zone[1241::2] == 1).all()


def test_zones_that_whole_nodes_would_overfill_are_split_evenly_instead():
    main, _ = fabric_wiring(5, 8, 0, 0, 0, **ZONED)  # 3 whole nodes (24 NICs) would overfill a 20-NIC zone
    assert np.bincount(main.switch_fabric[main.endpoint_switch]).tolist() == [20, 20]

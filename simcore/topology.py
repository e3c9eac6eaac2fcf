"""Fat-tree sizing: two and three layers, zones, planes, rails, oversubscription; part counts.

Radix-k switches (Al-Fares et al., SIGCOMM 2008; FF III). A leaf gives ``down`` ports to
endpoints and ``up = k - down`` to spines; non-blocking means down = up = k/2, and an
oversubscription of r (down:up) gives down = floor(k r / (1 + r)).

* Two layers: leaves = ceil(E / down); each spine has k ports, one or more per leaf, so
  spines = ceil(leaves x up / k); at most k leaves: E <= k x down (k^2/2 when non-blocking).
  40-port switches: 800 endpoints on 40 leaves and 20 spines (FF III-B).
* Three layers: pods of k/2 leaves and ``up`` spines (k/2 when non-blocking); leaves =
  ceil(E / down), pods = ceil(leaves / (k/2)), spines = pods x up, and each core switch has one
  port per pod, so at most k pods. The core is provisioned for ``core_pods`` pods: the exact pod
  count, or (default, as FF Table III counts it) the next power of two up to k, leaving room to
  add pods without recabling the core: cores = core_pods x up x (k/2) / k. FF: 1,600 access points
  -> 4 pods -> 40 core + 80 spine + 80 leaf = 200; DGX-A100, 10,000 -> 25 pods, core for 32
  -> 320 + 500 + 500 = 1,320.
* Zones: Z fabrics each holding ceil(E/Z) endpoints, joined by ``interzone_switches``.
* Planes: P independent fabrics, one NIC port per node per plane, each holding ceil(E/P).
* Rails: endpoints split into R rails at the leaf level (GPU i of every node on rail i); leaves
  are rounded up per rail; spines are shared.

Links: one per endpoint (node to leaf, copper inside a rack), and switch-to-switch links
(leaf-spine, spine-core, inter-zone) each with an optical transceiver at both ends and a fibre.
"""
from dataclasses import dataclass

import numpy as np

from simcore.arrays import as_array
from simcore.errors import ScenarioError


@dataclass(frozen=True)
class FabricCounts:
    endpoints: np.ndarray
    leaf_switches: np.ndarray
    spine_switches: np.ndarray
    core_switches: np.ndarray
    interzone_switches: np.ndarray
    endpoint_links: np.ndarray
    switch_links: np.ndarray
    capacity_endpoints: np.ndarray  # the most endpoints this layout can hold

    @property
    def switches(self):
        return self.leaf_switches + self.spine_switches + self.core_switches + self.interzone_switches

    @property
    def transceivers(self):
        return 2 * self.switch_links

    @property
    def fits(self):
        return self.endpoints <= self.capacity_endpoints

    def __add__(self, other: "FabricCounts") -> "FabricCounts":
        return FabricCounts(*(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__))


def leaf_down_ports(radix, oversubscription):
    """Endpoint-facing ports per leaf for a down:up ratio (1 = non-blocking)."""
    return np.floor(radix * oversubscription / (1 + oversubscription))


def _checked_fabric(endpoints, radix, layers, zones, planes, rails, oversubscription, interzone_switches,
                    core_pods):
    """The fat-tree's inputs as arrays, each checked (a field error names what is wrong)."""
    e = as_array(endpoints, "fabric.endpoints", non_negative=True, integer=True)
    k = as_array(radix, "fabric.switch_radix", positive=True, integer=True)
    if np.any(k % 2) or np.any(k < 4):
        raise ScenarioError("fabric.switch_radix", "must be an even number of at least 4")
    layers = as_array(layers, "fabric.layers", integer=True)
    if np.any((layers != 2) & (layers != 3)):
        raise ScenarioError("fabric.layers", "must be 2 or 3")
    zones = as_array(zones, "fabric.zones", positive=True, integer=True)
    planes = as_array(planes, "fabric.planes", positive=True, integer=True)
    rails = as_array(rails, "fabric.rails", positive=True, integer=True)
    r = as_array(oversubscription, "fabric.oversubscription", positive=True)
    if np.any(r < 1):
        raise ScenarioError("fabric.oversubscription", "must be at least 1 (down:up ports)")
    izs = as_array(interzone_switches, "fabric.interzone_switches", non_negative=True, integer=True)
    if core_pods not in ("power_of_two", "exact"):
        raise ScenarioError("fabric.core_pods", "must be 'power_of_two' or 'exact'")
    return e, k, layers, zones, planes, rails, r, izs


def fat_tree(endpoints, radix, *, layers=2, zones=1, planes=1, rails=1, oversubscription=1.0,
             interzone_switches=0, interzone_links_per_switch=None, core_pods="power_of_two") -> FabricCounts:
    """Switch and link counts of a (possibly zoned, multi-plane, rail-optimised) fat-tree.

    Every argument broadcasts over scenarios; ``layers`` is 2 or 3; ``core_pods`` is
    "power_of_two" or "exact" (see the module docstring).
    """
    e, k, layers, zones, planes, rails, r, izs = _checked_fabric(
        endpoints, radix, layers, zones, planes, rails, oversubscription, interzone_switches, core_pods)
    fabrics = zones * planes  # independent fat-trees
    per_fabric = np.ceil(e / fabrics)
    down = leaf_down_ports(k, r)
    up = k - down
    if np.any(down < 1) or np.any(up < 1):
        raise ScenarioError("fabric.oversubscription", "must leave a leaf at least one endpoint and one uplink port "
                                                       "(at most radix - 1)")
    leaves = rails * np.ceil(per_fabric / rails / down)
    leaves = np.where(per_fabric > 0, leaves, 0)

    spines_2 = np.ceil(leaves * up / k)
    capacity_2 = k * down  # at most k leaves under k-port spines

    half = k / 2
    pods = np.ceil(leaves / half)
    spines_3 = pods * up  # each leaf has one uplink to each spine of its pod
    if core_pods == "power_of_two":
        pods_for_core = np.where(pods > 0, np.minimum(2 ** np.ceil(np.log2(np.maximum(pods, 1))), k), 0)
    else:
        pods_for_core = pods
    pods_for_core = np.maximum(pods_for_core, pods)
    cores = np.ceil(pods_for_core * up * half / k)
    capacity_3 = k * half * down  # at most k pods (one core port each) of k/2 leaves

    three = layers == 3
    spines = np.where(three, spines_3, spines_2)
    core = np.where(three, cores, 0)
    capacity = np.where(three, capacity_3, capacity_2) * fabrics
    leaf_spine_links = leaves * up
    spine_core_links = np.where(three, spines_3 * half, 0)  # a spine's other k/2 ports go up
    iz_links = izs * (k if interzone_links_per_switch is None else interzone_links_per_switch)
    return FabricCounts(
        endpoints=e,
        leaf_switches=leaves * fabrics,
        spine_switches=spines * fabrics,
        core_switches=core * fabrics,
        interzone_switches=np.where(zones > 1, izs, 0) * planes,
        endpoint_links=e,
        switch_links=(leaf_spine_links + spine_core_links) * fabrics + np.where(zones > 1, iz_links, 0) * planes,
        capacity_endpoints=capacity,
    )


def max_endpoints(radix, layers, planes=1, oversubscription=1.0):
    """The largest endpoint count a non-zoned fat-tree of this radix and depth can hold."""
    k = np.asarray(radix, float)
    down = leaf_down_ports(k, np.asarray(oversubscription, float))
    return np.where(np.asarray(layers) == 3, k * (k / 2) * down, k * down) * planes

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
* Zones: Z fabrics each holding ceil(E/Z) endpoints, joined by ``interzone_switches``, whose
  ports are dealt round-robin over each zone's top-tier switches. A top switch gives them its free
  ports; where it has too few (FF's zones are full 800-port trees, and FF III does not say where
  the inter-zone links land) it gives them ports its tree links would take, and those tree links
  are not built: no switch has more links than ports (:func:`ports_given_up`).
* Planes: P independent fabrics, one NIC port per node per plane, each holding ceil(E/P).
* Rails: endpoints split into R rails at the leaf level (GPU i of every node on rail i); leaves
  are rounded up per rail; spines are shared.

Links: one per endpoint (node to leaf: a cable, or optics with a module at each end and a
fibre), and switch-to-switch links (leaf-spine, spine-core, inter-zone) each with an optical
module port at both ends and a fibre. A module may serve several ports of its switch (a twin-port
OSFP, two): :meth:`FabricCounts.switch_modules` counts modules per switch.
"""
from dataclasses import dataclass

import numpy as np

from simcore.arrays import as_array, where
from simcore.errors import ScenarioError


@dataclass(frozen=True)
class FabricCounts:
    endpoints: np.ndarray
    leaf_switches: np.ndarray
    spine_switches: np.ndarray
    core_switches: np.ndarray
    interzone_switches: np.ndarray
    endpoint_links: np.ndarray
    leaf_spine_links: np.ndarray
    spine_core_links: np.ndarray
    interzone_links: np.ndarray
    capacity_endpoints: np.ndarray  # the most endpoints this layout can hold

    @property
    def switches(self):
        return self.leaf_switches + self.spine_switches + self.core_switches + self.interzone_switches

    @property
    def switch_links(self):
        return self.leaf_spine_links + self.spine_core_links + self.interzone_links

    def switch_modules(self, ports_per_module, leaf_endpoint_ports=0):
        """Optical modules in the switches when a module serves ``ports_per_module`` ports of one
        switch: both ends of every switch-to-switch link, and ``leaf_endpoint_ports`` (optical NIC
        links) on the leaves; inter-zone links end at an inter-zone switch and the top tier. A
        tier's ports are dealt evenly over its switches, as the wiring deals uplinks round-robin
        (a switch with P mod n more takes one more; the wiring fills leaves with NIC ports in
        turn, so a part-full leaf makes this an approximation there), and each switch rounds up
        to whole modules."""
        if np.all(np.asarray(ports_per_module) == 1):  # a module a port: no per-switch rounding
            return 2 * self.switch_links + leaf_endpoint_ports
        core_on_top = self.core_switches > 0
        tiers = ((self.leaf_switches, self.leaf_spine_links + leaf_endpoint_ports),
                 (self.spine_switches, self.leaf_spine_links + self.spine_core_links
                  + where(core_on_top, 0, self.interzone_links)),
                 (self.core_switches, self.spine_core_links + where(core_on_top, self.interzone_links, 0)),
                 (self.interzone_switches, self.interzone_links))
        return sum(_modules_dealt(switches, ports, ports_per_module) for switches, ports in tiers)

    @property
    def fits(self):
        return self.endpoints <= self.capacity_endpoints

    def __add__(self, other: "FabricCounts") -> "FabricCounts":
        return FabricCounts(*(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__))


def _modules_dealt(switches, ports, ports_per_module):
    """Modules for ``ports`` dealt evenly over ``switches``: floor(P/n) each and one more on P mod n."""
    n = np.maximum(switches, 1)
    each = np.floor(ports / n)
    more = ports - each * n
    return where(switches > 0, more * np.ceil((each + 1) / ports_per_module)
                 + (n - more) * np.ceil(each / ports_per_module), 0)


def leaf_down_ports(radix, oversubscription):
    """Endpoint-facing ports per leaf for a down:up ratio (1 = non-blocking)."""
    return np.floor(radix * oversubscription / (1 + oversubscription))


def _checked_fabric(endpoints, radix, layers, zones, planes, rails, oversubscription, interzone_switches,
                    core_pods):
    """The fat-tree's inputs as arrays, each checked (a field error names what is wrong)."""
    e = as_array(endpoints, "fabric.endpoints", non_negative=True, integer=True)
    k = as_array(radix, "fabric.switch_radix", positive=True, integer=True)
    if (k % 2).any() or (k < 4).any():
        raise ScenarioError("fabric.switch_radix", "must be an even number of at least 4")
    layers = as_array(layers, "fabric.layers", integer=True)
    if ((layers != 2) & (layers != 3)).any():
        raise ScenarioError("fabric.layers", "must be 2 or 3")
    zones = as_array(zones, "fabric.zones", positive=True, integer=True)
    planes = as_array(planes, "fabric.planes", positive=True, integer=True)
    rails = as_array(rails, "fabric.rails", positive=True, integer=True)
    r = as_array(oversubscription, "fabric.oversubscription", positive=True)
    if (r < 1).any():
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
    if (down < 1).any() or (up < 1).any():
        raise ScenarioError("fabric.oversubscription", "must leave a leaf at least one endpoint and one uplink port "
                                                       "(at most radix - 1)")
    leaves = rails * np.ceil(per_fabric / rails / down)
    leaves = where(per_fabric > 0, leaves, 0)

    spines_2 = np.ceil(leaves * up / k)
    capacity_2 = k * down  # at most k leaves under k-port spines

    half = k / 2
    pods = np.ceil(leaves / half)
    spines_3 = pods * up  # each leaf has one uplink to each spine of its pod
    if core_pods == "power_of_two":
        pods_for_core = where(pods > 0, np.minimum(np.exp2(np.ceil(np.log2(np.maximum(pods, 1)))), k), 0)
    else:
        pods_for_core = pods
    pods_for_core = np.maximum(pods_for_core, pods)
    cores = np.ceil(pods_for_core * up * half / k)
    capacity_3 = k * half * down  # at most k pods (one core port each) of k/2 leaves

    three = layers == 3
    spines = where(three, spines_3, spines_2)
    core = where(three, cores, 0)
    capacity = where(three, capacity_3, capacity_2) * fabrics
    leaf_spine_links = leaves * up
    spine_core_links = where(three, spines_3 * half, 0)  # a spine's other k/2 ports go up
    iz_links = where(zones > 1, izs * (k if interzone_links_per_switch is None else interzone_links_per_switch), 0)
    top = where(three, core, spines)
    if np.any(np.ceil(np.ceil(iz_links / np.maximum(zones, 1)) / np.maximum(top, 1)) > k):
        raise ScenarioError("fabric.interzone_switches", "more inter-zone ports than the zones' top switches have")
    given_up = ports_given_up(k, top, where(three, spine_core_links, leaf_spine_links),
                              iz_links, zones) * planes
    return FabricCounts(
        endpoints=e,
        leaf_switches=leaves * fabrics,
        spine_switches=spines * fabrics,
        core_switches=core * fabrics,
        interzone_switches=where(zones > 1, izs, 0) * planes,
        endpoint_links=e,
        leaf_spine_links=leaf_spine_links * fabrics - where(three, 0, given_up),
        spine_core_links=spine_core_links * fabrics - where(three, given_up, 0),
        interzone_links=iz_links * planes,
        capacity_endpoints=capacity,
    )


def ports_given_up(radix, top_switches, tree_links, interzone_links, zones):
    """Tree links not built, over a plane's zones, because their top-tier port went to an inter-zone
    link. A zone's ``tree_links`` to its ``top_switches`` and its share of the plane's
    ``interzone_links`` (one more to the first ``links mod zones`` zones) are each dealt round-robin
    from the first top switch, so switch s holds t + [s < t mod T] tree and m + [s < m mod T]
    inter-zone links; whatever passes the radix is given up."""
    k, top = np.asarray(radix, float), np.maximum(top_switches, 1)
    t, r1 = np.divmod(tree_links, top)

    def zone(n):
        m, r2 = np.divmod(n, top)
        both, one = np.minimum(r1, r2), np.abs(r1 - r2)
        over = [np.maximum(t + m + extra - k, 0) for extra in (2, 1, 0)]
        return both * over[0] + one * over[1] + (top - both - one) * over[2]

    z = np.maximum(zones, 1)
    per_zone, more = np.divmod(interzone_links, z)
    return where(interzone_links > 0, more * zone(per_zone + 1) + (z - more) * zone(per_zone), 0)


def max_endpoints(radix, layers, planes=1, oversubscription=1.0):
    """The largest endpoint count a non-zoned fat-tree of this radix and depth can hold."""
    k = np.asarray(radix, float)
    down = leaf_down_ports(k, np.asarray(oversubscription, float))
    return where(np.asarray(layers) == 3, k * (k / 2) * down, k * down) * planes


SWITCH_TIERS = ("leaf", "spine", "core", "interzone")


@dataclass(frozen=True)
class Wiring:
    """One buildable wiring of a fat-tree with the counts :func:`fat_tree` gives.

    Switches are numbered globally; ``switch_tier`` indexes SWITCH_TIERS, ``switch_fabric`` is the
    zone x plane fabric (planes of inter-zone switches for the inter-zone tier) and ``switch_index``
    the switch's number within its tier and fabric. Endpoint ``e`` plugs into port
    ``endpoint_port[e]`` of switch ``endpoint_switch[e]``; switch link ``l`` joins
    ``(lower_switch[l], lower_port[l])`` to ``(upper_switch[l], upper_port[l])``.
    """

    switch_tier: np.ndarray
    switch_fabric: np.ndarray
    switch_index: np.ndarray
    endpoint_switch: np.ndarray
    endpoint_port: np.ndarray
    lower_switch: np.ndarray
    lower_port: np.ndarray
    upper_switch: np.ndarray
    upper_port: np.ndarray


def _round_robin(lower_count, links_each, upper_count):
    """Deal the lower switches' uplinks, lower switch by lower switch, over the upper switches in turn:
    link ``l`` (uplink ``l mod links_each`` of lower switch ``l div links_each``) goes to upper switch
    ``l mod upper_count`` at its port ``l div upper_count``. A lower switch's uplinks reach different
    upper switches (up to their number), and none takes more than ceil(links / upper) ports."""
    link = np.arange(lower_count * links_each)
    return link // links_each, link % links_each, link % upper_count, link // upper_count


def fat_tree_wiring(endpoints: int, radix: int, *, layers=2, zones=1, planes=1, rails=1, oversubscription=1.0,
                    interzone_switches=0, core_pods="power_of_two", endpoint_zone=None) -> Wiring:
    """Who plugs into what, for one fat-tree (scalar inputs; vectorized over ports and links).

    Endpoint ``e`` (in node order, each node's NICs in turn) joins plane ``e mod P``. Its zone is
    ``endpoint_zone[e]`` where that is given and fills no zone's fabric past the n = ceil(E / (Z P))
    endpoints the counts allow, else the ``q div n``-th for the plane's ``q = e div P``-th endpoint
    (an even split in NIC order). Within its zone and plane an endpoint takes the next position
    ``p``: rail ``p mod R``, leaf ``(p div R) div down`` of that rail. So NIC i of a node with a
    multiple of P x R NICs is on plane ``i mod P`` and rail ``(i div P) mod R``. Two layers: every leaf's
    uplinks are dealt round-robin over the spines. Three layers: leaf j of pod g has one uplink to
    each of its pod's spines (spine port j); spine uplinks are dealt round-robin over the cores.
    Inter-zone switches give their ports in turn to the zones' top-tier switches, round-robin.
    """
    counts = fat_tree(endpoints, radix, layers=layers, zones=zones, planes=planes, rails=rails,
                      oversubscription=oversubscription, interzone_switches=interzone_switches, core_pods=core_pods)
    if not counts.fits:
        raise ScenarioError("fabric", f"{endpoints} endpoints do not fit this fat-tree: nothing to wire")
    k, fabrics = int(radix), int(zones) * int(planes)
    down = int(leaf_down_ports(k, oversubscription))
    leaves, spines, cores = (int(x) // fabrics for x in (counts.leaf_switches, counts.spine_switches,
                                                         counts.core_switches))
    iz = int(counts.interzone_switches)
    per_tier = np.array([leaves, spines, cores], int)
    ids = _SwitchIds(np.concatenate([[0], np.cumsum(per_tier)])[:3], int(per_tier.sum()))
    fabric, position = _endpoint_places(int(endpoints), planes, int(np.ceil(endpoints / fabrics)), fabrics,
                                        endpoint_zone)
    leaf = (position % rails) * (leaves // rails) + (position // rails) // down
    endpoint_switch, endpoint_port = ids(fabric, 0, leaf), (position // rails) % down
    lower, lower_port, upper, upper_port = _tree_links(ids, fabrics, layers, k, down, leaves, spines, cores)
    if iz:
        top_tier, top_count = (2, cores) if layers == 3 else (1, spines)
        top, slot, iz_switch, iz_port = _interzone_links(ids, iz, k, planes, zones, top_tier, top_count)
        built, top_port = _ports_for_interzone(k, upper, upper_port, top, slot, fabrics * ids.in_fabric)
        lower, lower_port, upper, upper_port = (np.concatenate([a[built], b]) for a, b in
                                                zip((lower, lower_port, upper, upper_port),
                                                    (top, top_port, iz_switch, iz_port)))
    tiers = np.concatenate([np.tile(np.repeat(np.arange(3), per_tier), fabrics), np.full(iz, 3)])
    fabric_of = np.concatenate([np.repeat(np.arange(fabrics), ids.in_fabric), np.arange(iz) // max(iz // planes, 1)])
    index_of = np.concatenate([np.tile(np.concatenate([np.arange(n) for n in per_tier]), fabrics),
                               np.arange(iz) % max(iz // planes, 1)])
    return Wiring(tiers, fabric_of, index_of, endpoint_switch, endpoint_port, lower, lower_port, upper, upper_port)


@dataclass(frozen=True)
class _SwitchIds:
    """Switch ids: the fabrics' switches in turn, each fabric's leaves, spines and cores in turn."""

    first: np.ndarray  # first id of each tier within a fabric
    in_fabric: int

    def __call__(self, fabric, tier, index):
        return fabric * self.in_fabric + self.first[tier] + index


def _endpoint_places(endpoints: int, planes, per_fabric: int, fabrics: int, endpoint_zone):
    """Each endpoint's fabric (zone x plane) and its position in it (:func:`fat_tree_wiring`)."""
    e = np.arange(endpoints)
    plane, q = e % planes, e // planes
    zone, position = q // per_fabric, q % per_fabric
    if endpoint_zone is not None:
        chosen = np.asarray(endpoint_zone, int) * planes + plane
        load = np.bincount(chosen, minlength=fabrics)
        if load.size == fabrics and load.max(initial=0) <= per_fabric:
            order = np.argsort(chosen, kind="stable")
            group_start = np.concatenate([[0], np.cumsum(load)])[:-1]
            position = np.empty_like(e)
            position[order] = np.arange(e.size) - np.repeat(group_start, load)
            zone = chosen // planes
    return zone * planes + plane, position


def _tree_links(ids: _SwitchIds, fabrics: int, layers, k: int, down: int, leaves: int, spines: int, cores: int):
    """(lower ids, lower ports, upper ids, upper ports) of every fabric's switch-to-switch links."""
    up = k - down
    links = [(np.zeros(0, int),) * 4]
    for f in range(fabrics):  # a few zones x planes
        if layers == 2:
            lo, u, hi, port = _round_robin(leaves, up, spines)
            links.append((ids(f, 0, lo), down + u, ids(f, 1, hi), port))
        else:
            half = k // 2
            pod, j = np.divmod(np.arange(leaves), half)
            lo, u = np.repeat(np.arange(leaves), up), np.tile(np.arange(up), leaves)
            links.append((ids(f, 0, lo), down + u, ids(f, 1, pod[lo] * up + u), j[lo]))
            lo, u, hi, port = _round_robin(spines, half, cores)
            links.append((ids(f, 1, lo), half + u, ids(f, 2, hi), port))
    return tuple(np.concatenate([part[i] for part in links]) for i in range(4))


def _ports_for_interzone(k: int, upper, upper_port, top, slot, switches: int):
    """Which tree links are built, and the top-tier port of each inter-zone link: a top switch's
    free ports first (those past its tree links), then ports of tree links it gives up. Switch s
    gives up d_s tree links at its ports (start_s + i) mod t_s, i < d_s, start_s the links given up
    by the switches before it, so that the lower switches losing an uplink differ (round-robin puts
    each lower switch's uplinks on one port number of every upper switch)."""
    taken = np.bincount(upper, minlength=switches)  # t_s: ports the tree would use, 0 to t_s - 1
    free = np.maximum(k - taken, 0)
    dropped = np.maximum(np.bincount(top, minlength=switches) - free, 0)
    start = np.cumsum(dropped) - dropped
    span = np.maximum(taken, 1)
    built = (upper_port - start[upper]) % span[upper] >= dropped[upper]
    given = slot - free[top]
    return built, np.where(given < 0, taken[top] + slot, (start[top] + given) % span[top])


def _interzone_links(ids: _SwitchIds, iz: int, k: int, planes, zones, top_tier: int, top_count: int):
    """The inter-zone switches' links: each plane's switches give their ports in turn to the zones'
    top-tier switches, round-robin: (top switch, its inter-zone slot, inter-zone switch, its port)."""
    per_plane = iz // planes
    g = np.arange(iz * k)  # port g % k of inter-zone switch g // k
    p, local = np.divmod(g, per_plane * k)  # its plane, and its place among the plane's ports
    z, top = local % zones, (local // zones) % top_count
    slot = local // (zones * top_count)
    return ids(z * planes + p, top_tier, top), slot, ids.in_fabric * (int(zones) * int(planes)) + g // k, g % k

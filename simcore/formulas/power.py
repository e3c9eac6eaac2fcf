"""Power: node, switch and storage power, racks, facility power through PUE, energy per year.

A node's power is its measured average under training load when the catalogue has one (FF
Table II: 2,500 W PCIe node, 4,200 W DGX-A100 during ResNet training); otherwise it is built
from parts (:func:`node_parts_w`): accelerators, CPUs, NICs and the board's other parts, the fans
that cool them in an air-cooled node, through the power supplies' conversion loss. Three figures
are kept apart: typical under training (accelerators at ``accelerator_load`` of TDP), peak (every
part at nameplate) and the maximum racks are provisioned for (the vendor's rating where published,
else the peak).
"""
from dataclasses import dataclass

import numpy as np

from simcore.arrays import where

HOURS_PER_YEAR = 8760.0
# Facility PUE by the data hall's class, used where neither the plan nor the price book gives one.
# Industry average: Uptime Institute Global Data Center Survey 2023, average annual PUE 1.58 over the
# surveyed facilities. Hyperscale: Google's fleet-wide PUE, 1.10 in the second quarter of 2021 (its
# data-centre efficiency page, as CNBC reported it on 2022-04-13 beside Uptime's 2021 average of 1.57).
# The rack cooling does not change it: no source found gives air- and liquid-cooled racks' PUE in
# halls of one class, so a plan's hall, not its racks, sets the figure.
HALL_PUE = {"industry-average": 1.58, "hyperscale": 1.10}
HALL_PUE_BASIS = {"industry-average": "industry-average hall: Uptime Institute Global Data Center Survey 2023, "
                                      "average PUE 1.58",
                  "hyperscale": "hyperscale hall: Google fleet-wide PUE 1.10 (Q2 2021)"}
HALLS = tuple(HALL_PUE)
PUE_BASES = ("given (the plan's or its price book's)", *(HALL_PUE_BASIS[hall] for hall in HALLS))


@dataclass(frozen=True)
class PowerParams:
    """Estimates used where the catalogue has no figure (each editable).

    accelerator_load: average accelerator draw / TDP during training. Basis: FF Table II, DGX-A100
        at 4,200 W average against 8 x 400 W GPUs + 2 x 225 W CPUs + other: about 0.85 (estimate).
    nic_w: one cluster NIC (a ConnectX-7 400G adapter) at full load: no NVIDIA figure found; its
        smaller sibling, a ConnectX-5 25G OCP card, draws 15.55 W at most with passive cables (NVIDIA
        user manual, Specifications), and a 400G adapter's SerDes draw more (estimate, 25 W).
    board_w_per_gpu: the rest of an 8-GPU board and server a GPU: NVSwitch chips (no vendor figure:
        public models put one at 100-200 W; a DGX H100's four at 100 W), 32 DDR5 RDIMMs at about
        8 W, eight U.2 NVMe drives at 25 W (their top power state) and two M.2 boot drives at 7 W:
        about 864 W over 8 GPUs, 108 W a GPU (estimate).
    fan_share_air: fans of an air-cooled server, a share of what they cool: 10-15% of server power
        (eWeek, J. Neudorfer, 2009-03-05; a generic server, no AI-server figure found): 12.5%. A
        liquid-cooled node's GPUs, CPUs, NICs and switches are on cold plates (MLCommons, Crusoe's
        GB200 NVL72 system description): its fans are not counted (estimate).
    psu_efficiency: AC to DC through the node's power supplies: 80 PLUS Titanium's 96% at half load
        (the standard's minimum for redundant internal supplies; six 3.3 kW supplies carrying a
        10.2 kW DGX H100 sit near half load).
    cpu_default_w: CPU socket power when the CPU's TDP is unknown (estimate: a 32-64 core EPYC).
    switch_w_per_tbit_s: switch box power per Tb/s of switching capacity (radix x port speed),
        for a switch without a catalogue figure: a Tomahawk 5 box, UfiSpace S9321-64E, draws 913 W
        typical without transceivers for 51.2 Tb/s (IP Infusion's Tomahawk 5 page, from the vendor's
        datasheet), 17.8 W per Tb/s; older silicon draws more per Tb/s, so it is a floor.
    ssd_w: an active PCIe 4.0 NVMe SSD (estimate, 20 W).
    storage_node_other_w: storage server base load (estimate, 250 W).
    optic_w_per_gbit_s: an optical module's draw per Gb/s it carries, where the catalogue has no
        figure for the plan's transceiver or cable: NVIDIA's 400G SR4 OSFP module (MMA4Z00-NS400-T
        product specification) draws 8 W typical (9 W at most) at 400 Gb/s, 20 mW per Gb/s.
    rack_budget_w: a rack's power and cooling budget where the plan gives neither nodes per rack nor
        a site limit and the scale-up domain is one node: AFCOM's State of the Data Center 2024 puts
        the average rack density at about 12 kW (secondary: Enconnex's summary of the report).
    """

    accelerator_load: float = 0.85
    nic_w: float = 25.0
    board_w_per_gpu: float = 864.0 / 8
    fan_share_air: float = 0.125
    psu_efficiency: float = 0.96
    cpu_default_w: float = 200.0
    switch_w_per_tbit_s: float = 913.0 / 51.2
    ssd_w: float = 20.0
    storage_node_other_w: float = 250.0
    optic_w_per_gbit_s: float = 8.0 / 400.0
    rack_budget_w: float = 12000.0


def node_parts_w(gpus_per_node, accelerator_tdp_w, accelerator_load, cpus_per_node, cpu_tdp_w, nics, liquid,
                 params: PowerParams = PowerParams()):
    """A node's input power from its parts: accelerators at ``accelerator_load`` of TDP, CPUs at
    TDP, NICs, the board's other parts (per GPU), the fans of an air-cooled node (a share of the
    rest) and the power supplies' loss (:class:`PowerParams` gives each figure's basis)."""
    direct_w = (gpus_per_node * (accelerator_tdp_w * accelerator_load + params.board_w_per_gpu)
                + cpus_per_node * where(np.isnan(cpu_tdp_w), params.cpu_default_w, cpu_tdp_w) + nics * params.nic_w)
    fans_w = where(liquid, 0.0, params.fan_share_air) * direct_w
    return (direct_w + fans_w) / params.psu_efficiency


def node_power_w(measured_w, gpus_per_node, accelerator_tdp_w, cpus_per_node, cpu_tdp_w, nics, liquid,
                 params: PowerParams = PowerParams()):
    """Average node power under training load: measured where known (NaN = unknown), else from
    parts with the accelerators at ``params.accelerator_load``."""
    built = node_parts_w(gpus_per_node, accelerator_tdp_w, params.accelerator_load, cpus_per_node, cpu_tdp_w, nics,
                         liquid, params)
    return where(np.isnan(measured_w), built, measured_w)


NODE_MAX_BASES = ("vendor maximum", "parts at nameplate")


def node_max_power_w(vendor_max_w, peak_w):
    """(maximum node power, whether it is the vendor's): the vendor's published maximum system
    input where the catalogue has one (NaN = none), else ``peak_w``, the parts at nameplate. Racks
    and feeds are provisioned for this, not for the average (``NODE_MAX_BASES`` names the two)."""
    given = ~np.isnan(vendor_max_w)
    return where(given, vendor_max_w, peak_w), given


def switch_power_w(catalog_w, radix, port_speed_gbit_s, params: PowerParams = PowerParams()):
    """Switch box power: the catalogue's figure, or the per-capacity estimate (NaN = unknown)."""
    estimate = radix * port_speed_gbit_s / 1000 * params.switch_w_per_tbit_s
    return where(np.isnan(catalog_w), estimate, catalog_w)


OPTICS_BASES = ("the parts' figures",
                "estimated: 8 W per 400 Gb/s of optics (NVIDIA 400G SR4 OSFP, typical; a NIC cable as an active "
                "optical one)",
                "partly estimated: 8 W per 400 Gb/s of optics where a part has no figure")


def optics_power_w(modules, module_w, module_gbit_s, nic_parts, nic_part_w, nic_gbit_s, optical,
                   params: PowerParams = PowerParams()):
    """(power of the fabric's optics under load, index into ``OPTICS_BASES``): the switch modules
    and the NIC-end parts (``optical``: modules, else cables), each at its part's typical figure
    (NaN = none), else at ``params.optic_w_per_gbit_s`` of the optical Gb/s it carries
    (``nic_gbit_s`` a NIC-end part's: a cable's at each of its two ends, as an active optical
    cable; a plan with copper gives its figure)."""
    module_known, nic_part_known = ~np.isnan(module_w), ~np.isnan(nic_part_w)
    per_module = where(module_known, module_w, module_gbit_s * params.optic_w_per_gbit_s)
    per_nic_part = where(nic_part_known, nic_part_w, (1 if optical else 2) * nic_gbit_s * params.optic_w_per_gbit_s)
    module_estimated, nic_part_estimated = ~module_known & (modules > 0), ~nic_part_known & (nic_parts > 0)
    some = module_estimated | nic_part_estimated
    every = (module_estimated | (modules == 0)) & (nic_part_estimated | (nic_parts == 0))
    return modules * per_module + nic_parts * per_nic_part, where(~some, 0, where(every, 1, 2))


def storage_node_power_w(measured_w, ssd_count, cpu_tdp_w, params: PowerParams = PowerParams()):
    built = (ssd_count * params.ssd_w + where(np.isnan(cpu_tdp_w), params.cpu_default_w, cpu_tdp_w)
             + params.storage_node_other_w)
    return where(np.isnan(measured_w), built, measured_w)


def energy_per_year_kwh(it_power_w, pue):
    """Facility energy in a year: IT power x PUE x 8,760 h."""
    return it_power_w * pue * HOURS_PER_YEAR / 1000.0


RACK_BASES = ("given", "the site's power limit", "one scale-up domain",
              "default budget: AFCOM 2024 average rack density", "the rack's height")


def rack_layout(nodes, node_w, node_max_w, domain_nodes, nodes_per_rack, power_limit_w, extra_w, rack_units,
                node_units, extra_units, params: PowerParams = PowerParams()):
    """(nodes per rack, racks, power per rack under training, budget per rack, index into
    ``RACK_BASES``): the given nodes per rack, else as many as the site's power limit holds at the
    nodes' maximum power (at least one), else one scale-up domain's nodes when the domain spans
    several, else as many as ``params.rack_budget_w`` holds (never one server a rack by default);
    and never more than the rack's height holds (``rack_units`` less the ``extra_units`` of parts in
    it that are not nodes, over the node's ``node_units``; NaN: height unknown, no bound). The last
    rack may be part full; the power is a full rack's: its nodes x the node power + the rack's other
    parts."""
    given = ~np.isnan(nodes_per_rack)
    limited = ~np.isnan(power_limit_w)
    by_domain = ~given & ~limited & (domain_nodes > 1)
    basis = where(given, 0, where(limited, 1, where(by_domain, 2, 3)))
    budget_w = where(given | by_domain, np.nan, where(limited, power_limit_w, params.rack_budget_w))
    from_budget = np.maximum(np.floor((budget_w - extra_w) / node_max_w), 1)
    per_rack = where(given, nodes_per_rack, where(by_domain, domain_nodes, from_budget))
    by_height = where(np.isnan(node_units), np.inf, np.maximum(np.floor((rack_units - extra_units) / node_units), 1))
    basis = where(by_height < per_rack, len(RACK_BASES) - 1, basis)
    per_rack = np.minimum(np.minimum(per_rack, by_height), nodes)
    return per_rack, np.ceil(nodes / per_rack), per_rack * node_w + extra_w, budget_w, basis


def switch_racks(switches, switch_units, switch_w, rack_units, power_limit_w):
    """Racks of the fabric's switches: as many a rack as its height holds (a switch of unknown height
    as 1U) and, under a site's rack power limit, as its power holds (at least one a rack)."""
    units = where(np.isnan(switch_units), 1.0, switch_units)
    per_rack = np.floor(rack_units / units)
    per_rack = np.maximum(where(np.isnan(power_limit_w), per_rack,
                                np.minimum(per_rack, np.floor(power_limit_w / switch_w))), 1)
    return np.ceil(switches / per_rack)

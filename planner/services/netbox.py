"""A plan's built fabric as NetBox bulk-import files, so that the plan can become the inventory.

NetBox (netbox.readthedocs.io, "Bulk import") takes one file per object type, imported in dependency
order: manufacturers (name, slug), device roles (name, slug, color), the site (name, slug, status),
racks (name, site, status, width, u_height), device types, devices (name, role, manufacturer,
device_type, site, rack, position, face, status), cables (side_a_device, side_a_type, side_a_name,
side_b_device, side_b_type, side_b_name, type, status) and inventory items (device, name, status,
manufacturer, part_id, component_type, component_name), each a CSV with a header row of field names
except the device types. Those are YAML documents, each starting ``---``, in the device-type
library's form (manufacturer, model, slug, u_height and ``interfaces``: NetBox's import makes them
the type's interface templates, which only YAML or JSON can carry), so that every device NetBox
creates comes with its NICs or all its switch ports (``p1`` to ``p<radix>``): no link takes a port
a switch does not have (:func:`simcore.formulas.topology.fat_tree_wiring`).

Everything is ``planned``. The wiring is :func:`simcore.stages.cluster.fabric_wiring`, the same trees the
bill of materials counts: one device per compute node, storage node and switch; one cable per
endpoint cable and per fibre (with optical NIC links, the NIC's fibre is the cable from each NIC:
the bill's endpoint line is then the NIC's module, and its fibre count holds those fibres too); one
inventory item per optical module, on the port it serves (a module serving several ports of a switch
on the first, as the bill counts them). Racks are the engine's: its compute racks of ``nodes_per_rack``
nodes (no more than the rack's height holds), its scale-up network racks, its fabric racks of
switches, and racks for the storage nodes by height (which the engine's rack count leaves out).

Manufacturers are named as NetBox's community device-type library names them: the catalogue's vendor
without its qualifier ("NVIDIA (Mellanox)" is "NVIDIA"), slugs as Django's ``slugify`` makes them.
Every column NetBox's import forms require is written (:data:`NETBOX_REQUIRED`, from NetBox 4.x's
``dcim/forms/bulk_import.py``), the device types' ``u_height`` among them: the catalogue's rack
height, or one the caller gives for a part whose height the catalogue lacks (none is guessed).
A second plan imported into the same NetBox names the plans already there (``existing``): the
manufacturers, roles and device types their files created are left out, since NetBox's import
refuses an object that exists; manufacturers NetBox already has (from the device-type library, say)
are named in ``existing_manufacturers``, left out too, and referred to as NetBox spells them.
"""
import csv
import io
import re
import zipfile
from collections import defaultdict

import numpy as np
import yaml

from planner.models import ClusterPlan
from planner.services.cells import CSV_LINE_END, csv_row
from planner.services.errors import InputError
from planner.services.plans import plan_evaluate
from simcore import budget
from simcore.formulas.topology import SWITCH_TIERS
from simcore.stages import cluster

FILES = ("manufacturers", "device-roles", "sites", "racks", "device-types", "devices", "cables", "inventory-items")
# The columns each file's NetBox 4.x import form requires (netbox-community/netbox v4.6.8, netbox/dcim/forms/
# bulk_import.py: ManufacturerImportForm, DeviceRoleImportForm, SiteImportForm, RackImportForm (width and
# u_height: its clean() without a rack type), DeviceTypeImportForm (u_height: the model's field, without
# blank), DeviceImportForm, CableImportForm, InventoryItemImportForm; a device type's interfaces:
# dcim/forms/object_import.py, InterfaceTemplateImportForm).
NETBOX_REQUIRED = {
    "manufacturers": ("name", "slug"),
    "device-roles": ("name", "slug", "color"),
    "sites": ("name", "slug", "status"),
    "racks": ("name", "site", "status", "width", "u_height"),
    "device-types": ("manufacturer", "model", "slug", "u_height", "interfaces"),
    "device-types.interfaces": ("name", "type"),
    "devices": ("role", "manufacturer", "device_type", "site", "status"),
    "cables": ("side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name"),
    "inventory-items": ("device", "name", "status"),
}
SHARED_FILES = ("manufacturers", "device-roles", "device-types")  # objects several plans' files name alike
YAML_FILES = ("device-types",)
INFINIBAND = {100: "infiniband-edr", 200: "infiniband-hdr", 400: "infiniband-ndr", 800: "infiniband-xdr"}
ETHERNET = {100: "100gbase-x-qsfp28", 200: "200gbase-x-qsfp56", 400: "400gbase-x-osfp", 800: "800gbase-x-osfp"}
CABLE_TYPES = {"dac": "dac-passive", "aoc": "aoc"}
ROLES = {"gpu-node": "4caf50", "storage-node": "2196f3", "leaf-switch": "ff9800", "spine-switch": "ff5722",
         "core-switch": "9c27b0", "interzone-switch": "607d8b"}
CAGES_PER_SWITCH = 1 << 20  # more than any switch's ports: (switch, cage) pairs as one integer
RACK_WIDTH_IN = 19  # EIA-310 racks; the MGX racks of GB200 NVL72 are 19-inch too


def interface_type(protocol: str, gbit_s: float) -> str:
    """NetBox's interface type for a port of this protocol and speed ("other" where it has none)."""
    return (INFINIBAND if protocol == "ib" else ETHERNET).get(int(gbit_s), "other")


def _slug(text: str) -> str:
    """As Django's ``slugify`` (NetBox's slugs): runs of anything but letters and digits one hyphen."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def manufacturer_name(vendor: str) -> str:
    """The catalogue's vendor as NetBox's device-type library names the manufacturer: without the
    qualifier in parentheses ("NVIDIA (Mellanox)", "NVIDIA (LinkX)": "NVIDIA")."""
    return re.sub(r"\s*\([^)]*\)", "", vendor).strip()


def _switch_names(prefix: str, wiring, fabric_label) -> list[str]:
    return [f"{prefix}{fabric_label(tier, fabric)}{SWITCH_TIERS[tier]}{index + 1:04d}"
            for tier, fabric, index in zip(wiring.switch_tier, wiring.switch_fabric, wiring.switch_index)]


def _endpoints(plan: ClusterPlan, counts, separate: bool, nodes, storage, port_type: str) -> tuple[list, list]:
    """Each fabric's endpoints as (device, interface, its type), in fabric_wiring's order: the
    computation fabric's and the storage plane's."""
    node_count, compute_nics, node_storage_nics, storage_nodes, storage_nics = counts
    node_type, storage_type = plan.node_type, plan.storage_node_type if storage_nodes else None
    prefix = "ib" if plan.switch.protocol == "ib" else "eth"

    def nic_type(nic):
        return interface_type(nic.protocol, nic.line_rate_gbit_s * nic.ports) if nic else port_type

    compute_type, node_storage_type = nic_type(node_type.compute_nic), nic_type(node_type.storage_nic)
    storage_type_name = nic_type(storage_type.nic if storage_type else None)
    compute_ends = [(nodes[i], f"{prefix}{j}", compute_type) for i in range(node_count) for j in range(compute_nics)]
    storage_ends = [(storage[i], f"{prefix}{j}", storage_type_name) for i in range(storage_nodes)
                    for j in range(storage_nics)]
    node_storage_ends = [(nodes[i], f"storage{j}", node_storage_type) for i in range(node_count)
                         for j in range(node_storage_nics)]
    if separate:
        return compute_ends, storage_ends + node_storage_ends
    return compute_ends + storage_ends, []


def _cable_types(plan: ClusterPlan) -> tuple[str, str]:
    """NetBox's cable types of an endpoint's cable and of a switch-to-switch fibre."""
    fiber = plan.fiber
    fiber_type = ("mmf" if "multimode" in fiber.name.lower() or "mmf" in fiber.slug else "smf") if fiber else "smf"
    endpoint_cable = (fiber_type if plan.optical_nic_links else
                      CABLE_TYPES.get(plan.endpoint_cable.kind, fiber_type) if plan.endpoint_cable else fiber_type)
    return endpoint_cable, fiber_type


def _cables(plan: ClusterPlan, fabrics) -> list:
    """The cable rows: an endpoint cable from each endpoint to its leaf port (a fibre where the part
    at the NIC is an optical module), a fibre for each switch-to-switch link."""
    endpoint_cable, fiber_type = _cable_types(plan)
    cables = []
    for wiring, names, ends in fabrics:
        names = np.array(names, dtype=object)
        cables += [[device, "dcim.interface", name, switch, "dcim.interface", f"p{port + 1}", endpoint_cable,
                    "planned"] for (device, name, _), switch, port in
                   zip(ends, names[wiring.endpoint_switch], wiring.endpoint_port)]
        cables += [[a, "dcim.interface", f"p{pa + 1}", b, "dcim.interface", f"p{pb + 1}", fiber_type, "planned"]
                   for a, pa, b, pb in zip(names[wiring.lower_switch], wiring.lower_port,
                                           names[wiring.upper_switch], wiring.upper_port)]
    return cables


def _modules(plan: ClusterPlan, fabrics) -> list:
    """Inventory rows, one per optical module, on the first port it serves: in each switch's cages of
    ``ports`` ports (a twin-port OSFP serves p1 and p2, p3 and p4, ...) that hold a used fibre port
    (either end of a switch-to-switch link, or the leaf end of an optical NIC link); on each node, a
    module per ``ports`` of its NICs where the part at the NIC is a module."""
    optic, nic_module = plan.transceiver, plan.endpoint_cable if plan.optical_nic_links else None
    rows = []
    for wiring, names, endpoints in fabrics:
        if nic_module is not None:
            per_cage, item = max(nic_module.ports, 1), _item(nic_module)
            devices = [device for device, _, _ in endpoints]
            first = {device: i for i, device in reversed(list(enumerate(devices)))}  # each device's first NIC
            rows += [[device, f"{name} module", "planned", *item, "dcim.interface", name]
                     for i, (device, name, _) in enumerate(endpoints) if (i - first[device]) % per_cage == 0]
        if optic is None:
            continue
        switch = [wiring.lower_switch, wiring.upper_switch] + ([wiring.endpoint_switch] if nic_module else [])
        port = [wiring.lower_port, wiring.upper_port] + ([wiring.endpoint_port] if nic_module else [])
        per_cage = max(optic.ports, 1)
        switch, cage = np.divmod(np.unique(np.concatenate(switch) * CAGES_PER_SWITCH
                                           + np.concatenate(port) // per_cage), CAGES_PER_SWITCH)
        rows += [[names[s], f"p{c * per_cage + 1} module", "planned", *_item(optic), "dcim.interface",
                  f"p{c * per_cage + 1}"] for s, c in zip(switch.tolist(), cage.tolist())]
    return rows


def _item(part) -> list:
    """An inventory item's manufacturer (none for a generic part) and part number (the catalogue's slug)."""
    return [manufacturer_name(part.vendor) if part.vendor != "generic" else "", part.slug]


# Seconds to wire and write one row of export_rows' bound: 5.4-6.9 us measured by
# scripts/bench_netbox.py over the larger presets on 2026-12-05 (the Ascend multi-rail plan's bound of
# 186,603 rows in 1.29 s), kept at the dearer end.
ROW_S = 8e-6


def export_rows(plan: ClusterPlan) -> int:
    """At most the devices, cables and modules a plan's files will hold, from the fabric counts alone
    (no wiring): a module at both ends of every switch-to-switch link and at each endpoint's."""
    counts, layout = plan.fabric_arguments()
    trees = cluster.fabric_trees(*counts, **layout).total
    devices = plan.node_count + counts[3] + float(trees.switches)
    links = float(trees.endpoint_links) + float(trees.switch_links)
    return int(devices + links + links + float(trees.switch_links))


def plan_netbox(*, plan: ClusterPlan, u_heights: dict[str, int] | None = None,
                existing: list[ClusterPlan] = (), existing_manufacturers: list[str] = (),
                heights_needed: bool = True, work_budget_s: float | None = None) -> dict[str, list]:
    """Each NetBox import file's records, from the plan's fabric wiring: rows with the header first
    for the CSV files, one mapping per device type for the YAML; ``u_heights``: rack heights (U) by
    part slug for parts the catalogue has none for (needed unless the caller serves none of the
    racks, device types and devices, which their heights place); ``existing``: plans already
    imported into the same NetBox, whose shared objects are left out; ``existing_manufacturers``:
    the names of manufacturers NetBox has already, matched in any case and referred to as spelled
    there (NetBox refers by exact name); ``work_budget_s`` (a web request): a plan whose rows would
    take longer is refused before any wiring (``manage.py export_netbox`` writes any plan's files)."""
    rows = sum(export_rows(p) for p in (plan, *existing))
    budget.check("plan", rows * ROW_S, work_budget_s,
                 f"{rows:,} devices, cables and modules to write; export it with manage.py export_netbox instead")
    files = _plan_files(plan, u_heights or {}, heights_needed)
    for other in existing:
        theirs = _plan_files(other, u_heights or {}, heights_needed=False)
        for name in SHARED_FILES:
            present = {_identity(name, record) for record in _records(name, theirs[name])}
            kept = [record for record in _records(name, files[name]) if _identity(name, record) not in present]
            files[name] = kept if name in YAML_FILES else files[name][:1] + kept
    return _spelled_as_netbox(files, existing_manufacturers)


def _spelled_as_netbox(files: dict[str, list], existing_manufacturers) -> dict[str, list]:
    """The files without the manufacturers NetBox has, which every file then names as NetBox does."""
    spelled = {name.lower(): name for name in existing_manufacturers}
    if not spelled:
        return files
    ours = {row[0]: spelled.get(row[0].lower()) for row in files["manufacturers"][1:]}
    renamed = {name: theirs for name, theirs in ours.items() if theirs is not None}
    files["manufacturers"] = files["manufacturers"][:1] + [row for row in files["manufacturers"][1:]
                                                           if row[0] not in renamed]
    files["device-types"] = [{**t, "manufacturer": renamed.get(t["manufacturer"], t["manufacturer"])}
                             for t in files["device-types"]]
    for name, column in (("devices", 2), ("inventory-items", 3)):
        files[name] = files[name][:1] + [row[:column] + [renamed.get(row[column], row[column])] + row[column + 1:]
                                         for row in files[name][1:]]
    return files


def _records(name: str, records: list) -> list:
    return records if name in YAML_FILES else records[1:]


def _identity(name: str, record) -> tuple:
    """What NetBox tells objects apart by: a device type's manufacturer and model, or a row's first two
    columns (name and slug)."""
    return (record["manufacturer"], record["model"]) if name in YAML_FILES else tuple(record[:2])


def _u_height(part, u_heights: dict[str, int]):
    return part.rack_units or u_heights.get(part.slug)


def racked_parts(plan: ClusterPlan) -> list:
    """The catalogue parts the plan's NetBox devices are: its node type, its storage node type when it
    has storage nodes, its switch."""
    storage = plan.storage_node_type if plan.storage_node_type_id and plan.storage_node_count else None
    return [part for part in (plan.node_type, storage, plan.switch) if part is not None]


def parts_without_height(plan: ClusterPlan) -> list:
    """The plan's racked parts whose rack height the catalogue lacks: an export needs each given."""
    return [part for part in racked_parts(plan) if not part.rack_units]


def _placed(devices: list[str], per_rack: int, units: int, rack_name) -> tuple[list, list]:
    """(rack, position, face) for each device, ``per_rack`` a rack stacked from U1, and the racks."""
    per_rack = max(int(per_rack), 1)
    places = [[rack_name(i // per_rack), 1 + (i % per_rack) * units, "front"] for i in range(len(devices))]
    return places, [rack_name(r) for r in range(-(-len(devices) // per_rack))]


def _racks(plan: ClusterPlan, groups: list, heights: dict[str, int]) -> tuple[dict, list, int]:
    """Each device's (rack, position, face) and the racks, in the engine's layout
    (:func:`simcore.formulas.power.rack_layout`, ``switch_racks``) within each rack's height:
    ``groups`` are (part, kind, device names) for the nodes, the storage nodes and the switches."""
    racks = plan_evaluate(plan=plan)["result"]["racks"]
    rack_units, site = int(racks["units"]), plan.slug
    extra = plan.node_type.rack_extra_units or 0
    places, names = {}, []
    for part, kind, members in groups:
        if not members:
            continue
        height = heights[part.slug]
        fits = max((rack_units - (extra if kind == "compute" else 0)) // height, 1)
        per_rack = {"compute": min(int(racks["nodes_per_rack"]), fits),
                    "fabric": -(-len(members) // max(int(racks["fabric_count"]), 1))}.get(kind, fits)
        found, made = _placed(members, min(per_rack, fits), height,
                              lambda r, kind=kind: f"{site}-{'' if kind == 'compute' else kind + '-'}rack{r + 1:04d}")
        places.update(zip(members, found))
        names += made
    names += [f"{site}-network-rack{r + 1:04d}" for r in range(int(racks["network_count"]))]
    return places, names, rack_units


def _check_heights(parts, u_heights: dict[str, int]):
    """Refuse, naming ``u_height.<part slug>``, a part whose rack height neither the catalogue nor the
    caller gives."""
    unknown = [part.slug for part in parts if not _u_height(part, u_heights)]
    if unknown:
        raise InputError({f"u_height.{slug}": ["the catalogue has no rack height for this part and NetBox's device "
                                               "type import needs one: give it in rack units"] for slug in unknown})


def _plan_files(plan: ClusterPlan, u_heights: dict[str, int], heights_needed: bool = True) -> dict[str, list]:
    """Every file's records; without ``heights_needed`` (a caller serving none of the racks, device
    types and devices, or a plan already imported) no rack is laid out and no device placed."""
    counts, layout = plan.fabric_arguments()
    node_count, _, _, storage_nodes, _ = counts
    main, plane = cluster.fabric_wiring(*counts, **layout)
    site, switch, node_type = plan.slug, plan.switch, plan.node_type
    storage_type = plan.storage_node_type if storage_nodes else None

    def fabric_label(tier, fabric):
        if SWITCH_TIERS[tier] == "interzone":
            return f"p{fabric + 1}-" if plan.planes > 1 else ""
        zone, plane_index = divmod(int(fabric), plan.planes)
        return (f"z{zone + 1}-" if plan.zones > 1 else "") + (f"p{plane_index + 1}-" if plan.planes > 1 else "")

    nodes = [f"{site}-gpu{i + 1:05d}" for i in range(node_count)]
    storage = [f"{site}-storage{i + 1:04d}" for i in range(storage_nodes)]
    main_switches = _switch_names(f"{site}-", main, fabric_label)
    plane_switches = _switch_names(f"{site}-storage-", plane, lambda tier, fabric: "") if plane else []
    port_type = interface_type(switch.protocol, switch.port_speed_gbit_s)
    main_ends, plane_ends = _endpoints(plan, counts, layout["storage_network"] == "separate", nodes, storage,
                                       port_type)
    fabrics = [(w, names, ends) for w, names, ends in ((main, main_switches, main_ends),
                                                       (plane, plane_switches, plane_ends)) if w is not None]
    types = [(node_type, "gpu-node", nodes), (storage_type, "storage-node", storage)]
    parts = racked_parts(plan)
    templates = {part.name: [{"name": name, "type": kind} for device, name, kind in main_ends + plane_ends
                             if device == members[0]] for part, _, members in types if part is not None and members}
    templates[switch.name] = [{"name": f"p{port + 1}", "type": port_type} for port in range(switch.radix)]
    if heights_needed:
        _check_heights(parts, u_heights)
    switches = [(name, f"{SWITCH_TIERS[tier]}-switch") for wiring, names, _ in fabrics
                for name, tier in zip(names, wiring.switch_tier)]
    places, racks, rack_units = defaultdict(lambda: ["", "", ""]), [], None  # no heights: nothing placed
    if heights_needed:  # the racks' files are served: the engine's layout at the parts' heights
        places, racks, rack_units = _racks(plan, [(node_type, "compute", nodes), (storage_type, "storage", storage),
                                                  (switch, "fabric", [name for name, _ in switches])],
                                           {part.slug: _u_height(part, u_heights) for part in parts})
    devices = [["name", "role", "manufacturer", "device_type", "site", "rack", "position", "face", "status"]]
    for part, role, members in (*types, *((switch, role, [name]) for name, role in switches)):
        devices += [[name, role, manufacturer_name(part.vendor), part.name, site, *places[name], "planned"]
                    for name in members]
    used_roles = sorted({row[1] for row in devices[1:]})
    modules = _modules(plan, fabrics)
    vendors = {manufacturer_name(p.vendor) for p in parts} | {row[3] for row in modules if row[3]}
    return {
        "manufacturers": [["name", "slug"]] + [[v, _slug(v)] for v in sorted(vendors)],
        "device-roles": [["name", "slug", "color"]] + [[role, role, ROLES[role]] for role in used_roles],
        "sites": [["name", "slug", "status"], [site, site, "planned"]],
        "racks": [["name", "site", "status", "width", "u_height"]] + [[r, site, "planned", RACK_WIDTH_IN, rack_units]
                                                                     for r in racks],
        "device-types": [{"manufacturer": manufacturer_name(p.vendor), "model": p.name, "slug": _slug(p.slug),
                          "u_height": _u_height(p, u_heights), "interfaces": templates[p.name]} for p in parts],
        "devices": devices,
        "cables": [["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name",
                    "type", "status"]] + _cables(plan, fabrics),
        "inventory-items": [["device", "name", "status", "manufacturer", "part_id", "component_type",
                             "component_name"]] + modules,
    }


def file_format(name: str) -> tuple[str, str]:
    """One import file's extension and media type."""
    return ("yaml", "application/yaml") if name in YAML_FILES else ("csv", "text/csv; charset=utf-8")


def netbox_text(name: str, records: list) -> str:
    """One import file as text: CSV rows, or YAML documents each starting ``---`` (NetBox's "auto"
    format takes a file for YAML only when it starts so)."""
    if name in YAML_FILES:
        return yaml.safe_dump_all(records, sort_keys=False, explicit_start=True)
    out = io.StringIO()
    csv.writer(out, lineterminator=CSV_LINE_END).writerows(csv_row(row) for row in records)
    return out.getvalue()


def netbox_zip(files: dict[str, list], plan_slug: str) -> bytes:
    """Every file in import order, numbered, in one ZIP archive."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for number, name in enumerate(FILES, start=1):
            archive.writestr(f"{plan_slug}-netbox/{number}-{name}.{file_format(name)[0]}",
                             netbox_text(name, files[name]))
    return buffer.getvalue()

"""A plan's built fabric as NetBox bulk-import files, so that the plan can become the inventory.

NetBox (netbox.readthedocs.io, "Bulk import") takes one file per object type, imported in dependency
order: manufacturers (name, slug), device roles (name, slug, color), the site (name, slug, status),
device types, devices (name, role, manufacturer, device_type, site, status), interfaces (device,
name, type) and cables (side_a_device, side_a_type, side_a_name, side_b_device, side_b_type,
side_b_name, type, status), each a CSV with a header row of field names except the device types.
Those are YAML documents in the device-type library's form (manufacturer, model, slug, u_height and
``interfaces``: NetBox's import makes them the type's interface templates, which only YAML or JSON
can carry), so that every device NetBox creates comes with its NICs or all its switch ports
(``p1`` to ``p<radix>``); the interfaces file then holds only what the templates do not make: the
ports past a switch's radix that inter-zone links take.

Everything is ``planned``. The wiring is :func:`simcore.stages.cluster.fabric_wiring`, the same trees the
bill of materials counts: one device per compute node, storage node and switch; one interface per
NIC the bill lists and per switch port; one cable per endpoint cable and per fibre (with optical
NIC links, the NIC's fibre is the cable from each NIC: the bill's endpoint line is then the NIC's
module, and its fibre count holds those fibres too).

Every column NetBox's import forms require is written (:data:`NETBOX_REQUIRED`, from NetBox 4.x's
``dcim/forms/bulk_import.py``), the device types' ``u_height`` among them: the catalogue's rack
height, or one the caller gives for a part whose height the catalogue lacks (none is guessed).
A second plan imported into the same NetBox names the plans already there (``existing``): the
manufacturers, roles and device types their files created are left out, since NetBox's import
refuses an object that exists, and so are the interfaces those types' templates make.
"""
import csv
import io
import zipfile

import numpy as np
import yaml

from planner.models import ClusterPlan
from planner.services.cells import CSV_LINE_END, csv_row
from planner.services.errors import InputError
from simcore import budget
from simcore.formulas.topology import SWITCH_TIERS
from simcore.stages import cluster

FILES = ("manufacturers", "device-roles", "sites", "device-types", "devices", "interfaces", "cables")
# The columns each file's NetBox 4.x import form requires (netbox-community/netbox, netbox/dcim/forms/
# bulk_import.py: ManufacturerImportForm, DeviceRoleImportForm, SiteImportForm, DeviceTypeImportForm
# (u_height: the model's field, without blank), DeviceImportForm, InterfaceImportForm, CableImportForm;
# a device type's interfaces: dcim/forms/object_import.py, InterfaceTemplateImportForm).
NETBOX_REQUIRED = {
    "manufacturers": ("name", "slug"),
    "device-roles": ("name", "slug", "color"),
    "sites": ("name", "slug", "status"),
    "device-types": ("manufacturer", "model", "slug", "u_height", "interfaces"),
    "device-types.interfaces": ("name", "type"),
    "devices": ("role", "manufacturer", "device_type", "site", "status"),
    "interfaces": ("device", "name", "type"),
    "cables": ("side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name"),
}
SHARED_FILES = ("manufacturers", "device-roles", "device-types")  # objects several plans' files name alike
YAML_FILES = ("device-types",)
INFINIBAND = {100: "infiniband-edr", 200: "infiniband-hdr", 400: "infiniband-ndr", 800: "infiniband-xdr"}
ETHERNET = {100: "100gbase-x-qsfp28", 200: "200gbase-x-qsfp56", 400: "400gbase-x-osfp", 800: "800gbase-x-osfp"}
CABLE_TYPES = {"dac": "dac-passive", "aoc": "aoc"}
ROLES = {"gpu-node": "4caf50", "storage-node": "2196f3", "leaf-switch": "ff9800", "spine-switch": "ff5722",
         "core-switch": "9c27b0", "interzone-switch": "607d8b"}


def interface_type(protocol: str, gbit_s: float) -> str:
    """NetBox's interface type for a port of this protocol and speed ("other" where it has none)."""
    return (INFINIBAND if protocol == "ib" else ETHERNET).get(int(gbit_s), "other")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


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


def _ports_and_cables(plan: ClusterPlan, fabrics, port_type: str) -> tuple[list, list]:
    """Interface rows for the switch ports the cables use, and the cable rows: an endpoint cable
    from each endpoint to its leaf port (a fibre where the part at the NIC is an optical module),
    a fibre for each switch-to-switch link."""
    fiber = plan.fiber
    fiber_type = ("mmf" if "multimode" in fiber.name.lower() or "mmf" in fiber.slug else "smf") if fiber else ""
    endpoint_cable = (fiber_type if plan.optical_nic_links else
                      CABLE_TYPES.get(plan.endpoint_cable.kind, "") if plan.endpoint_cable else "")
    interfaces, cables = [], []
    for wiring, names, ends in fabrics:
        if wiring is None:
            continue
        names = np.array(names, dtype=object)
        used = [(names[wiring.endpoint_switch], wiring.endpoint_port),
                (names[wiring.lower_switch], wiring.lower_port), (names[wiring.upper_switch], wiring.upper_port)]
        interfaces += [[device, f"p{port + 1}", port_type] for devices, ports in used
                       for device, port in zip(devices, ports)]
        cables += [[device, "dcim.interface", name, switch_name, "dcim.interface", f"p{port + 1}", endpoint_cable,
                    "planned"] for (device, name, _), switch_name, port in zip(ends, *used[0])]
        cables += [[a, "dcim.interface", f"p{pa + 1}", b, "dcim.interface", f"p{pb + 1}", fiber_type, "planned"]
                   for a, pa, b, pb in zip(*used[1], *used[2])]
    return interfaces, cables


# Seconds to wire and write one row (a device, an interface past a radix or a cable): 5.7-7.5 us
# measured by scripts/bench_netbox.py over the presets (the Ascend multi-rail plan's 71,879 rows in
# 535 ms), kept at the dearer end.
ROW_S = 8e-6


def export_rows(plan: ClusterPlan) -> int:
    """The devices and cables a plan's files will hold, from the fabric counts alone (no wiring)."""
    counts, layout = plan.fabric_arguments()
    trees = cluster.fabric_trees(*counts, **layout).total
    devices = plan.node_count + counts[3] + float(trees.switches)
    return int(devices + float(trees.endpoint_links) + float(trees.switch_links))


def plan_netbox(*, plan: ClusterPlan, u_heights: dict[str, int] | None = None,
                existing: list[ClusterPlan] = (), heights_needed: bool = True,
                work_budget_s: float | None = None) -> dict[str, list]:
    """Each NetBox import file's records, from the plan's fabric wiring: rows with the header first
    for the CSV files, one mapping per device type for the YAML; ``u_heights``: rack heights (U) by
    part slug for parts the catalogue has none for (needed unless the caller will not serve the
    device types); ``existing``: plans already imported into the same NetBox, whose shared objects
    are left out; ``work_budget_s`` (a web request): a plan whose rows would take longer is refused
    before any wiring (``manage.py export_netbox`` writes any plan's files)."""
    rows = sum(export_rows(p) for p in (plan, *existing))
    budget.check("plan", rows * ROW_S, work_budget_s,
                 f"{rows:,} devices and cables to wire; export it with manage.py export_netbox instead")
    files = _plan_files(plan, u_heights or {}, heights_needed)
    templates = {t["model"]: t["interfaces"] for t in files["device-types"]}
    for other in existing:
        theirs = _plan_files(other, u_heights or {}, heights_needed=False)
        templates.update({t["model"]: t["interfaces"] for t in theirs["device-types"]})
        for name in SHARED_FILES:
            present = {_identity(name, record) for record in _records(name, theirs[name])}
            kept = [record for record in _records(name, files[name]) if _identity(name, record) not in present]
            files[name] = kept if name in YAML_FILES else files[name][:1] + kept
    device_type = {row[0]: row[3] for row in files["devices"][1:]}
    templated = {model: {port["name"] for port in ports} for model, ports in templates.items()}
    files["interfaces"] = files["interfaces"][:1] + [row for row in files["interfaces"][1:]
                                                     if row[1] not in templated[device_type[row[0]]]]
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


def _plan_files(plan: ClusterPlan, u_heights: dict[str, int], heights_needed: bool = True) -> dict[str, list]:
    """Every file's records, the interfaces file listing every interface a cable uses."""
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
    ports, cables = _ports_and_cables(plan, ((main, main_switches, main_ends), (plane, plane_switches, plane_ends)),
                                      port_type)
    types = [(node_type, "gpu-node", nodes), (storage_type, "storage-node", storage)]
    parts = racked_parts(plan)
    ends = main_ends + plane_ends
    templates = {part.name: [{"name": name, "type": kind} for device, name, kind in ends if device == members[0]]
                 for part, _, members in types if part is not None and members}
    templates[switch.name] = [{"name": f"p{port + 1}", "type": port_type} for port in range(switch.radix)]
    devices = [["name", "role", "manufacturer", "device_type", "site", "status"]]
    for part, role, members in types:
        devices += [[name, role, part.vendor, part.name, site, "planned"] for name in members]
    for names, wiring in ((main_switches, main), (plane_switches, plane)):
        if wiring is not None:
            devices += [[name, f"{SWITCH_TIERS[tier]}-switch", switch.vendor, switch.name, site, "planned"]
                        for name, tier in zip(names, wiring.switch_tier)]
    used_roles = sorted({row[1] for row in devices[1:]})
    unknown = [part.slug for part in parts if not _u_height(part, u_heights)]
    if unknown and heights_needed:
        raise InputError({f"u_height.{slug}": ["the catalogue has no rack height for this part and NetBox's device "
                                               "type import needs one: give it in rack units"] for slug in unknown})
    return {
        "manufacturers": [["name", "slug"]] + [[v, _slug(v)] for v in sorted({p.vendor for p in parts})],
        "device-roles": [["name", "slug", "color"]] + [[role, role, ROLES[role]] for role in used_roles],
        "sites": [["name", "slug", "status"], [site, site, "planned"]],
        "device-types": [{"manufacturer": p.vendor, "model": p.name, "slug": _slug(p.slug),
                          "u_height": _u_height(p, u_heights), "interfaces": templates[p.name]} for p in parts],
        "devices": devices,
        "interfaces": [["device", "name", "type"]] + [list(end) for end in ends] + ports,
        "cables": [["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name",
                    "type", "status"]] + cables,
    }


def file_format(name: str) -> tuple[str, str]:
    """One import file's extension and media type."""
    return ("yaml", "application/yaml") if name in YAML_FILES else ("csv", "text/csv; charset=utf-8")


def netbox_text(name: str, records: list) -> str:
    """One import file as text: CSV rows, or YAML documents separated by ``---``."""
    if name in YAML_FILES:
        return yaml.safe_dump_all(records, sort_keys=False)
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

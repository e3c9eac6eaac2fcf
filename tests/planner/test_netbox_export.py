"""A plan's fabric as NetBox bulk-import files: NetBox's columns, every reference resolvable in import
order, device, cable and module counts equal to the bill of materials, no port a switch lacks, and
every device in a rack that holds it."""
import csv
import io
import zipfile

import pytest
import yaml

from planner.services.netbox import FILES, NETBOX_REQUIRED

COLUMNS = {  # as NetBox's bulk import documents them (dcim import forms)
    "manufacturers": ["name", "slug"],
    "device-roles": ["name", "slug", "color"],
    "sites": ["name", "slug", "status"],
    "racks": ["name", "site", "status", "width", "u_height"],
    "device-types": ["manufacturer", "model", "slug", "u_height", "interfaces"],  # YAML documents
    "devices": ["name", "role", "manufacturer", "device_type", "site", "rack", "position", "face", "status"],
    "cables": ["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name", "type",
               "status"],
    "inventory-items": ["device", "name", "status", "manufacturer", "part_id", "component_type", "component_name"],
}
# NetBox v4.6.8's CableTypeChoices (netbox/dcim/choices.py) that a fabric's cables can be.
CABLE_TYPES = {"dac-active", "dac-passive", "mmf", "mmf-om1", "mmf-om2", "mmf-om3", "mmf-om4", "mmf-om5", "smf",
               "smf-os1", "smf-os2", "aoc"}


# Rack heights the catalogue lacks, given as the user would (the Fire-Flyer paper gives none for its
# nodes; these are the heights the test assumes, not catalogue facts).
GIVEN_HEIGHTS = {"u_height.ff-pcie-a100": "4", "u_height.ff-3fs-storage": "2", "u_height.deepseek-h800": "8"}


def netbox_files(client, slug, **params) -> dict[str, list[dict]]:
    response = client.get(f"/api/plans/{slug}/netbox/", {**GIVEN_HEIGHTS, **params})
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    names = archive.namelist()
    assert names == [f"{slug}-netbox/{n}-{name}.{'yaml' if name == 'device-types' else 'csv'}"
                     for n, name in enumerate(FILES, start=1)]
    files = {}
    for name, path in zip(FILES, names):
        if name == "device-types":
            text = archive.read(path).decode()
            assert text.startswith("---\n")  # NetBox's "auto" format reads a file as YAML only so
            files[name] = list(yaml.safe_load_all(text))
            assert all(list(t) == COLUMNS[name] for t in files[name])
            continue
        reader = csv.DictReader(io.StringIO(archive.read(path).decode()))
        assert reader.fieldnames == COLUMNS[name], name
        files[name] = list(reader)
    return files


def netbox_interfaces(files) -> list[tuple[str, str, str]]:
    """Every interface NetBox holds after the import: those each device's type templates make."""
    templates = {t["model"]: t["interfaces"] for t in files["device-types"]}
    return [(d["name"], port["name"], port["type"]) for d in files["devices"] for port in templates[d["device_type"]]]


def switch_type(files) -> str:
    return next(d["device_type"] for d in files["devices"] if d["role"].endswith("-switch"))


def bom_quantities(client, slug) -> dict[str, int]:
    lines = client.get(f"/api/plans/{slug}/bom/").json()["lines"]
    return {line["part"]: line["quantity"] for line in lines}


@pytest.mark.parametrize("slug", ["ff2-pcie-2zone", "dgx-a100-3layer", "ascend-910b-multi-rail",
                                  "deepseek-h800-8plane"])
def test_counts_equal_the_bill_of_materials_and_every_reference_resolves(catalog, reader_client, settings, slug):
    # The Ascend preset's bound (186,603 rows, about 1.5 s) is past the default 1 s budget: a site
    # that serves it sets API_WORK_BUDGET_S higher (or writes it with manage.py export_netbox).
    settings.API_WORK_BUDGET_S = 2.0
    files = netbox_files(reader_client, slug)
    bom = bom_quantities(reader_client, slug)
    devices, interfaces, cables = files["devices"], netbox_interfaces(files), files["cables"]
    switches = bom.get("switch, computation fabric", 0) + bom.get("switch, storage plane", 0)
    assert len(devices) == bom["compute node"] + bom.get("storage node", 0) + switches
    nics = sum(q for part, q in bom.items() if part.endswith("NIC") and not part.startswith("optical module"))
    switch_ends = {d["name"] for d in devices if d["role"].endswith("-switch")}
    fibres = sum(1 for c in cables if c["side_a_device"] in switch_ends)
    endpoint_cables = len(cables) - fibres
    # The bill lists cables where the plan names the part; its quantities are the evaluation's counts.
    fabric = reader_client.post(f"/api/plans/{slug}/evaluate/", {}, format="json").json()["result"]["fabric"]
    plan = reader_client.get(f"/api/plans/{slug}/").json()
    ports = reader_client.get(f"/api/catalog/link-parts/{plan['transceiver']}/").json()["ports"]
    if "optical module at the NIC" in bom:  # a fibre a link, and modules at both ends of it
        assert endpoint_cables + fibres == fabric["fibers"] == bom["fibre"]
        assert bom["optical module at the NIC"] == fabric["endpoint_cables"] >= endpoint_cables / 2
        assert bom["optical transceiver"] * ports >= 2 * fibres + endpoint_cables
    else:
        assert (endpoint_cables, fibres) == (fabric["endpoint_cables"], fabric["fibers"])
        assert endpoint_cables == bom.get("endpoint cable", endpoint_cables) and fibres == bom.get("fibre", fibres)
        assert bom.get("optical transceiver", 2 * fibres / ports) * ports >= 2 * fibres
    node_ports = [i for i in interfaces if i[0] not in switch_ends]
    assert len(node_ports) == nics  # each NIC, from its node type's templates
    radix = {t["model"]: len(t["interfaces"]) for t in files["device-types"]}
    assert len(interfaces) == nics + len(switch_ends) * radix[switch_type(files)]
    assert {c["type"] for c in cables} <= CABLE_TYPES

    names = [d["name"] for d in devices]
    assert len(set(names)) == len(names)
    types = {(t["manufacturer"], t["model"]) for t in files["device-types"]}
    assert {(d["manufacturer"], d["device_type"]) for d in devices} == types
    assert {d["role"] for d in devices} == {r["slug"] for r in files["device-roles"]}
    made_by = {t["manufacturer"] for t in files["device-types"]} | {i["manufacturer"] for i in files["inventory-items"]}
    assert made_by - {""} == {m["name"] for m in files["manufacturers"]}
    assert all("--" not in m["slug"] for m in files["manufacturers"])
    assert {d["site"] for d in devices} == {slug} and {d["status"] for d in devices} == {"planned"}
    ports = {(device, name) for device, name, _ in interfaces}
    assert len(ports) == len(interfaces) and set(names) >= {device for device, _ in ports}
    ends = [(c[f"side_{s}_device"], c[f"side_{s}_name"]) for c in cables for s in "ab"]
    assert len(set(ends)) == len(ends) == 2 * len(cables) and set(ends) <= ports  # no port cabled twice
    assert {(d, n) for d, n, _ in node_ports} <= set(ends)  # every NIC cabled
    assert {c["side_a_type"] for c in cables} == {c["side_b_type"] for c in cables} == {"dcim.interface"}
    _modules_match_the_bill(files, bom, switch_ends, set(ends), ports, slug)
    _racks_hold_their_devices(files, reader_client, slug)


# Twin-port modules the wiring fills where the bill's count, dealing a tier's ports evenly over its
# switches, gives more: the Ascend preset's last pod is part full, so its spines use 57 of 64 ports
# (29 modules each) where the even deal gives every spine 63 or 64 (32): the bill counts 46,352.
WIRED_MODULES = {"ascend-910b-multi-rail": 46_128}


def _modules_match_the_bill(files, bom, switch_ends, cabled, ports, slug):
    """One inventory item per optical module, each on a cabled port of its device: the switches' as many
    as the bill counts (but WIRED_MODULES), the NICs' as the bill's "optical module at the NIC"."""
    items = files["inventory-items"]
    on_switches = sum(1 for i in items if i["device"] in switch_ends)
    assert on_switches == WIRED_MODULES.get(slug, bom.get("optical transceiver", 0))
    assert on_switches <= bom.get("optical transceiver", 0)
    assert len(items) - on_switches == bom.get("optical module at the NIC", 0)
    assert {(i["device"], i["component_name"]) for i in items} <= cabled & ports
    assert len({(i["device"], i["name"]) for i in items}) == len(items)
    assert {i["component_type"] for i in items} <= {"dcim.interface"}


def _racks_hold_their_devices(files, client, slug):
    """Every device in a listed rack of the site, within its height, no two sharing a unit; the racks
    are the engine's (compute, scale-up network, fabric) and, for storage nodes, racks by height."""
    racks = {r["name"]: int(r["u_height"]) for r in files["racks"]}
    assert {r["site"] for r in files["racks"]} == {slug} and {r["width"] for r in files["racks"]} == {"19"}
    heights = {t["model"]: t["u_height"] for t in files["device-types"]}
    taken = set()
    for d in files["devices"]:
        low = int(d["position"])
        units = {(d["rack"], u) for u in range(low, low + heights[d["device_type"]])}
        assert d["face"] == "front" and low >= 1 and low + heights[d["device_type"]] - 1 <= racks[d["rack"]]
        assert not units & taken, d["name"]
        taken |= units
    engine = client.post(f"/api/plans/{slug}/evaluate/", {}, format="json").json()["result"]["racks"]
    storage_racks = sum(1 for name in racks if "-storage-rack" in name)
    assert len(racks) == engine["total_count"] + storage_racks
    assert storage_racks == 0 or any(d["role"] == "storage-node" for d in files["devices"])


def test_the_fire_flyer_fabric_is_wired_as_two_zones_joined_by_inter_zone_switches(catalog, reader_client):
    files = netbox_files(reader_client, "ff2-pcie-2zone")
    roles = {}
    for device in files["devices"]:
        roles[device["role"]] = roles.get(device["role"], 0) + 1
    assert roles == {"gpu-node": 1240, "storage-node": 180, "leaf-switch": 80, "spine-switch": 40,
                     "interzone-switch": 2}
    node_ports = [i for i in netbox_interfaces(files) if i[0] == "ff2-pcie-2zone-gpu00001"]
    assert node_ports == [("ff2-pcie-2zone-gpu00001", "ib0", "infiniband-hdr")]
    qm8700 = next(t for t in files["device-types"] if t["slug"] == "qm8700")
    assert [p["name"] for p in qm8700["interfaces"]] == [f"p{k}" for k in range(1, 41)]
    used = [c[f"side_{s}_name"] for c in files["cables"] for s in "ab" if c[f"side_{s}_name"].startswith("p")]
    assert max(int(port[1:]) for port in used) == 40  # no port a 40-port switch lacks
    uplinks = {}
    for c in files["cables"]:
        if "leaf" in c["side_a_device"] and "spine" in c["side_b_device"]:
            uplinks[c["side_a_device"]] = uplinks.get(c["side_a_device"], 0) + 1
    # The zones' spines are full (800 ports each): each gives 2 ports to the 80 inter-zone links, so
    # each of the 80 leaves gives up one of its 20 uplinks, none losing more.
    assert len(uplinks) == 80 and set(uplinks.values()) == {19}
    leaf = next(c for c in files["cables"] if c["side_a_device"] == "ff2-pcie-2zone-gpu00001")
    assert leaf["side_b_device"] == "ff2-pcie-2zone-z1-leaf0001" and leaf["type"] == "dac-passive"
    zones_reached = {c["side_a_device"].split("-")[3] for c in files["cables"]
                     if c["side_b_device"].endswith("interzone0001")}
    assert zones_reached == {"z1", "z2"}


def test_one_file_as_csv_and_a_bad_file_name(catalog, reader_client):
    response = reader_client.get("/api/plans/dgx-a100-3layer/netbox/", {"file": "devices"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == COLUMNS["devices"] and len(rows) == 1 + 1250 + 1320
    bad = reader_client.get("/api/plans/dgx-a100-3layer/netbox/", {"file": "interfaces"})
    assert bad.status_code == 400 and "must be one of" in bad.json()["file"][0]


@pytest.mark.parametrize("slug", ["gb200-nvl72-1152", "ff2-pcie-2zone"])
def test_every_column_netboxs_import_forms_require_is_filled(catalog, reader_client, slug):
    """NetBox 4.x's import forms (NETBOX_REQUIRED) refuse a row that lacks a required column, as the
    device types once did without u_height."""
    files = netbox_files(reader_client, slug)
    records = {**files, "device-types.interfaces": [p for t in files["device-types"] for p in t["interfaces"]]}
    for name, required in NETBOX_REQUIRED.items():
        assert records[name] or name == "interfaces", name
        for row in records[name]:
            assert all(row[column] not in ("", None, []) for column in required), (name, row)
    heights = {t["slug"]: t["u_height"] for t in files["device-types"]}
    assert heights == ({"gb200-nvl72-tray": 1, "qm9700": 1} if slug == "gb200-nvl72-1152" else
                       {"ff-pcie-a100": 4, "ff-3fs-storage": 2, "qm8700": 1})


def test_a_part_without_a_rack_height_is_named_and_a_given_height_is_used(catalog, reader_client):
    refused = reader_client.get("/api/plans/ff2-pcie-2zone/netbox/")
    assert refused.status_code == 400
    assert set(refused.json()["errors"]) == {"u_height.ff-3fs-storage"}  # the node's 4U is in the catalogue
    assert reader_client.get("/api/plans/ff2-pcie-2zone/netbox/", {"u_height.ff-3fs-storage": "0"}).status_code == 400
    types = netbox_files(reader_client, "ff2-pcie-2zone")["device-types"]
    assert {t["slug"]: t["u_height"] for t in types} == {"ff-pcie-a100": 4, "ff-3fs-storage": 2, "qm8700": 1}


def test_a_second_plan_leaves_out_what_the_first_created(catalog, reader_client):
    first = netbox_files(reader_client, "dgx-a100-3layer")
    second = netbox_files(reader_client, "ff2-pcie-2zone", existing="dgx-a100-3layer")
    for name in ("manufacturers", "device-roles", "device-types"):
        assert not ({tuple(r.values())[:2] for r in first[name]} & {tuple(r.values())[:2] for r in second[name]}), name
    assert [(m["name"], m["slug"]) for m in second["manufacturers"]] == [("DeepSeek / High-Flyer",
                                                                          "deepseek-high-flyer")]
    assert [t["slug"] for t in second["device-types"]] == ["ff-pcie-a100", "ff-3fs-storage"]  # not the QM8700
    assert [r["slug"] for r in second["device-roles"]] == ["interzone-switch", "storage-node"]
    alone = netbox_files(reader_client, "ff2-pcie-2zone")
    for name in ("racks", "devices", "cables", "inventory-items"):
        assert second[name] == alone[name], name
    assert netbox_interfaces({**second, "device-types": first["device-types"] + second["device-types"]}) == \
        netbox_interfaces(alone)  # the QM8700's ports come from the first plan's templates
    missing = reader_client.get("/api/plans/ff2-pcie-2zone/netbox/", {**GIVEN_HEIGHTS, "existing": "no-such-plan"})
    assert missing.status_code == 400 and "existing" in missing.json()


def test_manufacturers_netbox_has_are_left_out_and_named_as_netbox_spells_them(catalog, reader_client):
    """A NetBox with the community device-type library's "NVIDIA" (here spelled "Nvidia") takes the
    files: no manufacturer row for it, and every device type, device and module names it so."""
    alone = netbox_files(reader_client, "dgx-h200-1024")
    assert [m["name"] for m in alone["manufacturers"]] == ["NVIDIA"]  # the switch, node and optics: one
    files = netbox_files(reader_client, "dgx-h200-1024", existing_manufacturers="Nvidia")
    assert files["manufacturers"] == []
    assert {t["manufacturer"] for t in files["device-types"]} == {d["manufacturer"] for d in files["devices"]} == {
        i["manufacturer"] for i in files["inventory-items"]} == {"Nvidia"}
    other = netbox_files(reader_client, "dgx-h200-1024", existing_manufacturers="Mellanox")
    assert other["manufacturers"] == alone["manufacturers"] and other["devices"] == alone["devices"]


def test_a_plan_too_large_for_a_request_is_refused_before_wiring_and_the_command_writes_it(
        catalog, reader_client, settings, tmp_path, monkeypatch):
    """The budget bounds the rows from the fabric's counts (no wiring): at 1 ms of budget the GB200
    preset's 342 devices, 2,304 cables and at most 3,456 modules (about 49 ms) are refused;
    manage.py export_netbox has no budget."""
    from django.core.management import call_command

    from planner.services import netbox

    settings.API_WORK_BUDGET_S = 0.001
    monkeypatch.setattr(netbox, "_plan_files", lambda *a, **k: pytest.fail("wired although over the budget"))
    refused = reader_client.get("/api/plans/gb200-nvl72-1152/netbox/")
    assert refused.status_code == 400
    reason = refused.json()["errors"]["plan"][0]
    assert "6,102 devices, cables and modules to write; export it with manage.py export_netbox" in reason
    monkeypatch.undo()
    out = tmp_path / "gb200.zip"
    call_command("export_netbox", "gb200-nvl72-1152", str(out))
    names = zipfile.ZipFile(out).namelist()
    assert names[0] == "gb200-nvl72-1152-netbox/1-manufacturers.csv" and len(names) == len(FILES)


def test_the_command_names_its_own_flag_for_a_missing_rack_height(catalog, tmp_path):
    """The command takes ``--u-height PART=U`` where the API takes ``?u_height.<part>=U``: a part with no
    height is named as the command takes it."""
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError) as refused:
        call_command("export_netbox", "ff2-pcie-2zone", str(tmp_path / "ff.zip"))
    assert str(refused.value).startswith("--u-height ff-3fs-storage=U: the catalogue has no rack height for this part")
    assert "u_height." not in str(refused.value)
    call_command("export_netbox", "ff2-pcie-2zone", str(tmp_path / "ff.zip"),
                 *(f"--u-height={part.removeprefix('u_height.')}={units}" for part, units in GIVEN_HEIGHTS.items()))
    assert (tmp_path / "ff.zip").stat().st_size > 0

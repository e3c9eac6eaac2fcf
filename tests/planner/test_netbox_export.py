"""A plan's fabric as NetBox bulk-import CSVs: NetBox's columns, every reference resolvable in import
order, and device, interface and cable counts equal to the bill of materials."""
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
    "device-types": ["manufacturer", "model", "slug", "u_height", "interfaces"],  # YAML documents
    "devices": ["name", "role", "manufacturer", "device_type", "site", "status"],
    "interfaces": ["device", "name", "type"],
    "cables": ["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name", "type",
               "status"],
}


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
            files[name] = list(yaml.safe_load_all(archive.read(path).decode()))
            assert all(list(t) == COLUMNS[name] for t in files[name])
            continue
        reader = csv.DictReader(io.StringIO(archive.read(path).decode()))
        assert reader.fieldnames == COLUMNS[name], name
        files[name] = list(reader)
    return files


def netbox_interfaces(files) -> list[tuple[str, str, str]]:
    """Every interface NetBox holds after the import: those each device's type templates make, then
    the interfaces file's."""
    templates = {t["model"]: t["interfaces"] for t in files["device-types"]}
    made = [(d["name"], port["name"], port["type"]) for d in files["devices"] for port in templates[d["device_type"]]]
    return made + [(i["device"], i["name"], i["type"]) for i in files["interfaces"]]


def switch_type(files) -> str:
    return next(d["device_type"] for d in files["devices"] if d["role"].endswith("-switch"))


def bom_quantities(client, slug) -> dict[str, int]:
    lines = client.get(f"/api/plans/{slug}/bom/").json()["lines"]
    return {line["part"]: line["quantity"] for line in lines}


@pytest.mark.parametrize("slug", ["ff2-pcie-2zone", "dgx-a100-3layer", "ascend-910b-multi-rail",
                                  "deepseek-h800-8plane"])
def test_counts_equal_the_bill_of_materials_and_every_reference_resolves(catalog, reader_client, slug):
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
    beyond_radix = [i for i in files["interfaces"] if int(i["name"][1:]) > radix[switch_type(files)]]
    assert len(interfaces) == nics + len(switch_ends) * radix[switch_type(files)] + len(beyond_radix)
    assert len(files["interfaces"]) == len(beyond_radix)  # the file holds only what no template makes

    names = [d["name"] for d in devices]
    assert len(set(names)) == len(names)
    types = {(t["manufacturer"], t["model"]) for t in files["device-types"]}
    assert {(d["manufacturer"], d["device_type"]) for d in devices} == types
    assert {d["role"] for d in devices} == {r["slug"] for r in files["device-roles"]}
    assert {t["manufacturer"] for t in files["device-types"]} == {m["name"] for m in files["manufacturers"]}
    assert {d["site"] for d in devices} == {slug} and {d["status"] for d in devices} == {"planned"}
    ports = {(device, name) for device, name, _ in interfaces}
    assert len(ports) == len(interfaces) and set(names) >= {device for device, _ in ports}
    ends = [(c[f"side_{s}_device"], c[f"side_{s}_name"]) for c in cables for s in "ab"]
    assert len(set(ends)) == len(ends) == 2 * len(cables) and set(ends) <= ports  # no port cabled twice
    assert {(d, n) for d, n, _ in node_ports} <= set(ends)  # every NIC cabled
    assert {c["side_a_type"] for c in cables} == {c["side_b_type"] for c in cables} == {"dcim.interface"}


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
    beyond = {i["device"] for i in files["interfaces"]}  # the inter-zone links past the top switches' radix
    assert beyond and all("spine" in device or "interzone" in device for device in beyond)
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
    bad = reader_client.get("/api/plans/dgx-a100-3layer/netbox/", {"file": "racks"})
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
    assert [m["name"] for m in second["manufacturers"]] == ["DeepSeek / High-Flyer (custom build)"]
    assert [t["slug"] for t in second["device-types"]] == ["ff-pcie-a100", "ff-3fs-storage"]  # not the QM8700
    assert [r["slug"] for r in second["device-roles"]] == ["interzone-switch", "storage-node"]
    alone = netbox_files(reader_client, "ff2-pcie-2zone")
    assert second["devices"] == alone["devices"] and second["cables"] == alone["cables"]
    assert netbox_interfaces({**second, "device-types": first["device-types"] + second["device-types"]}) == \
        netbox_interfaces(alone)  # the QM8700's ports come from the first plan's templates
    missing = reader_client.get("/api/plans/ff2-pcie-2zone/netbox/", {**GIVEN_HEIGHTS, "existing": "no-such-plan"})
    assert missing.status_code == 400 and "existing" in missing.json()


def test_a_plan_too_large_for_a_request_is_refused_before_wiring_and_the_command_writes_it(
        catalog, reader_client, settings, tmp_path, monkeypatch):
    """The budget counts the rows from the fabric's counts (no wiring): at 1 ms of budget the GB200
    preset's 342 devices and 2,304 cables (about 21 ms) are refused; manage.py export_netbox has no budget."""
    from django.core.management import call_command

    from planner.services import netbox

    settings.API_WORK_BUDGET_S = 0.001
    monkeypatch.setattr(netbox, "_plan_files", lambda *a, **k: pytest.fail("wired although over the budget"))
    refused = reader_client.get("/api/plans/gb200-nvl72-1152/netbox/")
    assert refused.status_code == 400
    reason = refused.json()["errors"]["plan"][0]
    assert "2,646 devices and cables to wire; export it with manage.py export_netbox" in reason
    monkeypatch.undo()
    out = tmp_path / "gb200.zip"
    call_command("export_netbox", "gb200-nvl72-1152", str(out))
    names = zipfile.ZipFile(out).namelist()
    assert names[0] == "gb200-nvl72-1152-netbox/1-manufacturers.csv" and len(names) == len(FILES)

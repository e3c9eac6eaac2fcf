"""Excel (XLSX) workbooks of a bill of materials and of a comparison, with units in the headers and
the same numbers as the JSON they come from (openpyxl)."""
import csv
import io

from planner.services.cells import CSV_LINE_END, csv_row, xlsx_text_cells

XLSX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
# One sheet per part list of a bill of materials, by the catalogue kind of its parts.
BOM_SHEETS = (("Nodes", ("compute-node", "storage-node")), ("Switches", ("switch",)), ("NICs", ("nic",)),
              ("Cables and optics", ("link-part",)))


def _workbook():
    """An empty workbook. openpyxl is imported here, on first use: it takes about 0.2 s to load, which
    every web and worker process would otherwise pay at start-up."""
    from openpyxl import Workbook

    book = Workbook()
    book.remove(book.active)
    return book


def _sheet(book, title: str, header: list[str], rows: list[list]):
    from openpyxl.utils import get_column_letter

    sheet = book.create_sheet(title)
    sheet.append(header)
    for row in rows:
        sheet.append(row)
    xlsx_text_cells(sheet)
    for index, name in enumerate(header, start=1):
        sheet.column_dimensions[get_column_letter(index)].width = max(12, len(name) + 2)
    sheet.freeze_panes = "A2"
    return sheet


# The pages' number formats as Excel writes them (simcore.outputs.display_output): fractions as percentages
# with one decimal, other figures with thousands separators; the cells stay numbers.
FRACTION_FORMAT, NUMBER_FORMAT = "0.0%", "#,##0.####"


def _formatted(sheet, units: list[str], columns):
    """Each metric row's value cells (``columns``, 1-based) in the format its unit reads in."""
    for row, unit in enumerate(units, start=2):
        for column in columns:
            sheet.cell(row=row, column=column).number_format = FRACTION_FORMAT if unit == "fraction" else NUMBER_FORMAT


def _bytes(book) -> bytes:
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


BAND_HEADER = ["prediction", "lowest error", "highest error", "runs like it, from", "to", "published cases", "group",
               "validated"]


def _band_cells(band: dict) -> list:
    return [band["value"], band["low_error"], band["high_error"], band["actual_low"], band["actual_high"],
            band["cases"], band["group"], band["validated"]]


def bom_xlsx(bom: dict) -> bytes:
    """A summary sheet (plan, price book, total with its band, unpriced parts), one sheet per part
    list (estimated lines marked, with their low and high), and the error bands: the total's from
    the book's estimates, the facility power's from the validation record."""
    currency = bom["currency"]
    book = _workbook()
    _sheet(book, "Summary", ["item", "value"], [
        ["plan", bom["plan"]], ["price book", bom["price_book"]], ["price book date", bom["price_date"]],
        ["currency", currency],
        [f"total ({currency})", bom["total"] if bom["total"] is not None else "none: parts without a price"],
        [f"total, low ({currency})", bom["total_low"]], [f"total, high ({currency})", bom["total_high"]],
        ["share of the total estimated", bom["estimated_share"]],
        ["unpriced parts", ", ".join(bom["unpriced"]) or "none"],
        *([["prices", bom["stale"]]] if bom["stale"] else [])])
    header = ["part", "catalogue slug", "quantity (units)", f"unit price ({currency})",
              f"extended price ({currency})", f"extended low ({currency})", f"extended high ({currency})",
              "confidence", "price source", "price date", "source link"]
    for title, kinds in BOM_SHEETS:
        lines = [line for line in bom["lines"] if line["part_kind"] in kinds]
        if lines:
            _sheet(book, title, header, [[line["part"], line["slug"], line["quantity"], line["unit_price"],
                                          line["extended_price"], line["extended_low"], line["extended_high"],
                                          line["confidence"], line["source"], line["price_date"],
                                          line["source_url"]] for line in lines])
    if bom["bands"]:
        _sheet(book, "Error bands", ["output", *BAND_HEADER],
               [[path, *_band_cells(band)] for path, band in bom["bands"].items()])
    return _bytes(book)


def comparison_table(comparison: dict) -> list[list]:
    """The comparison's metrics as rows, the header first: each metric by plan with its unit, then its
    ratio and difference to the first plan (the workbook's first sheet and the CSV file)."""
    plans, currency = comparison["plans"], comparison["currency"] or "price"
    unit = lambda metric: currency if metric["unit"] == "currency" else metric["unit"]  # noqa: E731
    header = ["metric", "unit", *plans, *(f"ratio to {plans[0]}: {p}" for p in plans[1:]),
              *(f"difference to {plans[0]}: {p}" for p in plans[1:])]
    return [header] + [[m["label"], unit(m), *m["values"], *m["ratio_to_first"][1:], *m["delta_to_first"][1:]]
                       for m in comparison["metrics"]]


def comparison_csv(comparison: dict) -> str:
    """:func:`comparison_table` as CSV (an empty cell where a plan has no value)."""
    out = io.StringIO()
    csv.writer(out, lineterminator=CSV_LINE_END).writerows([csv_row(["" if v is None else v for v in row])
                                                    for row in comparison_table(comparison)])
    return out.getvalue()


def comparison_xlsx(comparison: dict) -> bytes:
    """:func:`comparison_table`; where each plan's PUE and maximum node power come from; each banded
    prediction's error band from the validation record; where the plans train a workload, where
    each parallel group runs; the parts known only from an announcement; and why a plan could not be
    evaluated."""
    plans = comparison["plans"]
    book = _workbook()
    header, *rows = comparison_table(comparison)
    _formatted(_sheet(book, "Comparison", header, rows), [metric["unit"] for metric in comparison["metrics"]],
               columns=range(3, 3 + len(plans)))
    _sheet(book, "Bases", ["figure", *plans], [[basis["label"], *basis["values"]] for basis in comparison["bases"]])
    banded = [(metric, plan, band) for metric in comparison["metrics"]
              for plan, band in zip(plans, metric["bands"]) if band is not None]
    if banded:
        _sheet(book, "Error bands", ["metric", "plan", *BAND_HEADER],
               [[metric["label"], plan, *_band_cells(band)] for metric, plan, band in banded])
    if comparison["placements"]:
        _sheet(book, "Placement", ["parallel group", *plans],
               [[group.upper(), *where] for group, where in comparison["placements"].items()])
    if comparison["announced"]:
        _sheet(book, "Announced parts", ["plan", "part", "name", "source"],
               [[slug, part["part"], part["name"], part["source"]] for slug, parts in comparison["announced"].items()
                for part in parts])
    if comparison["infeasible"]:
        _sheet(book, "Not evaluated", ["plan", "reasons"],
               [[slug, "; ".join(reasons)] for slug, reasons in comparison["infeasible"].items()])
    return _bytes(book)


def measurement_xlsx(measurement, comparison: dict) -> bytes:
    """A measurement beside the engine as a workbook: its rows compared (measured, predicted, error;
    a trace's parts traced, with their spread, predicted and calibrated), what it fits or calibrates
    against the family's, and what the file says of the run."""
    book = _workbook()
    rows = comparison["rows"]
    header = list(dict.fromkeys(key for row in rows for key in row))
    _sheet(book, "Compared", header, [[row.get(key) for key in header] for row in rows])
    _sheet(book, "Fitted", ["constant", "value", "family's value", "rows or parts used"],
           [[name, fit["value"], fit["family_value"], fit["rows"]] for name, fit in comparison["fitted"].items()])
    _sheet(book, "Run", ["what the file says", "value"],
           [["name", measurement.name], ["kind", measurement.kind], ["file", measurement.filename],
            ["uploaded", measurement.created_at.isoformat()], ["note", measurement.note],
            *([key, value if isinstance(value, int | float | str) else str(value)]
              for key, value in measurement.provenance.items())])
    return _bytes(book)

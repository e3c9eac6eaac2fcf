"""Text cells made safe to open in a spreadsheet (OWASP, "CSV Injection"): a spreadsheet reads a
cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return as a formula, so a
catalogue note such as ``=HYPERLINK(...)`` would run in whoever opens the bill. Every CSV and XLSX
the product writes passes its text through here; numbers are left as numbers."""
import numpy as np

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Rows end in CR LF (RFC 4180), which makes the csv module quote any cell holding a CR or an LF: a
# bare CR inside an unquoted cell would start a new line, and its next character a new cell, which
# a spreadsheet may read as a formula ("x\r=cmd|...").
CSV_LINE_END = "\r\n"


def csv_cell(value):
    """A CSV cell: text that a spreadsheet would read as a formula gets a leading apostrophe, which
    makes it text (the value is otherwise unchanged)."""
    return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def csv_row(row):
    """:func:`csv_cell` over a row (a list, or a mapping of column to value)."""
    if isinstance(row, dict):
        return {key: csv_cell(value) for key, value in row.items()}
    return [csv_cell(value) for value in row]


def xlsx_text_cells(sheet) -> None:
    """Every string cell of an openpyxl sheet stored as text, never as a formula (openpyxl takes a
    string starting with ``=`` for one); the text reads as written."""
    for row in sheet.iter_rows():
        for cell in row:
            if isinstance(cell.value, str) and cell.data_type == "f":
                cell.data_type = "s"


def csv_column(values: np.ndarray) -> np.ndarray:
    """:func:`csv_cell` over a column of a sweep's points, vectorized (numbers pass unchanged)."""
    if values.dtype.kind not in "OUS":
        return values
    text = values.astype(str)
    risky = np.zeros(text.shape, dtype=bool)
    for start in FORMULA_STARTS:
        risky |= np.char.startswith(text, start)
    return np.where(risky, np.char.add("'", text), text).astype(object) if risky.any() else values

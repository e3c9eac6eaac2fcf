"""Every page at 1024 and 1440 px in real Chromium: every value inside the window and no text box
drawn over another (tests/e2e/layout.js reads the rendered boxes), a screenshot of each page under
test-artifacts/, and no console error (the ``page`` fixture). Then the plan page's "Compare with",
which keeps the workload, and the comparison's download, which equals the page."""
import io
import re
from pathlib import Path

import pytest
from openpyxl import load_workbook
from playwright.sync_api import expect

from frontend.templatetags.figures import figure
from tests.planner.test_sites import SITE

LAYOUT = (Path(__file__).resolve().parent / "layout.js").read_text()
PAGES = ["/", "/catalog/", "/catalog/?table=compute-node-types", "/catalog/accelerators/a100-pcie-40gb/",
         "/catalog/compute-node-types/gb200-nvl72-tray/", "/catalog/price-books/usd-2026/",
         "/plans/", "/plans/ff2-pcie-2zone/?workload=llama-13b-512", "/plans/gb200-nvl72-1152/",
         "/plans/ascend-910b-single-rail/", "/plans/new/", "/plans/new/?from=dgx-a100-3layer", "/workloads/",
         "/workloads/new/", "/compare/?ids=dgx-a100-3layer,ff2-pcie-2zone,ff2-pcie-3layer&workload=llama-13b-512",
         "/compare/?ids=hgx-b200-1152,gb200-nvl72-1152&workload=llama3-70b-class-1152", "/sweeps/", "/twins/",
         "/validation/", "/reliability/", "/tokens/", "/sites/new/", "/catalog/accelerators/rubin/",
         "/plans/vera-rubin-nvl144-1152/?workload=llama3-70b-class-1152",
         "/plans/dgx-h200-1024/?workload=llama3-70b-class-1152",  # its cost table ran 88 px under its power
         "/compare/?ids=gb300-nvl72-1152,dgx-b300-1152,mi355x-1152&workload=llama3-70b-class-1152"]


def _api(page, method: str, path: str, body: dict) -> dict:
    """A JSON call from the signed-in tab (its session and CSRF token), as the pages make them."""
    token = page.page.evaluate("document.querySelector('meta[name=csrf-token]').content")
    response = page.page.request.fetch(page.base + path, method=method, data=body,
                                       headers={"X-CSRFToken": token, "Referer": page.base + "/"})
    assert response.ok, response.text()
    return response.json()


def _sweep_site_and_twin(page) -> list[str]:
    """A finished sweep with points a constraint rejects, a finished site plan (its ranking table and
    chart), and a twin: their pages join the list."""
    sweep = _api(page, "POST", "/api/sweeps/", {
        "plan": "dgx-a100-3layer", "workload": "llama-13b-512",
        "axes": {"cluster.node_count": [16, 32, 64, 128], "workload.gpus": [128, 256, 512]},
        "goal": {"minimize": "cost.capex_total", "constraints": [{"metric": "power.facility_w", "max": 600_000}]}})
    site = _api(page, "POST", "/api/sweeps/site/", {**SITE, "builds": ["llama3-h100-16k", "gb200-nvl72-1152"]})
    twin = _api(page, "POST", "/api/twins/", {"plan": "ff2-pcie-2zone", "seed": 1})
    for made in (sweep, site):
        page.goto(f"/sweeps/{made['id']}/")
        expect(page.page.locator("#sweep-percent")).to_have_text("100%", timeout=90_000)
    expect(page.page.locator("#site-ranking")).to_be_visible()
    return [f"/sweeps/{sweep['id']}/", f"/sweeps/{site['id']}/", f"/twins/{twin['id']}/"]


@pytest.mark.parametrize("width", [1024, 1440])
def test_every_page_shows_every_value_and_no_label_covers_another(page, width):
    page.login()
    page.page.set_viewport_size({"width": width, "height": 900})
    defects = []
    for path in PAGES + _sweep_site_and_twin(page):
        page.goto(path)
        page.page.wait_for_load_state("networkidle")
        page.shot(f"{width}-{re.sub(r'[^a-z0-9]+', '-', path).strip('-') or 'home'}")
        found = page.page.evaluate(LAYOUT)
        defects += [f"{path}: {line}" for line in found["clipped"] + found["overlaps"] + found["small"]]
    assert not defects, "\n".join(defects)


def test_compare_from_a_plan_keeps_its_workload_and_downloads_the_table(page):
    page.login()
    page.goto("/plans/ff2-pcie-2zone/?workload=llama-13b-512")
    expect(page.page.locator("#plan-status")).to_contain_text("workload llama-13b-512")
    chooser = page.page.locator("form[aria-label='Compare with']")
    chooser.locator("select[name=with]").select_option("ff2-pcie-3layer")
    chooser.locator("button").click()
    page.page.wait_for_url(re.compile(r"/compare/\?"))
    expect(page.page.locator("select[name=workload]")).to_have_value("llama-13b-512")
    expect(page.page.locator("#comparison tr[data-metric=step_time_s] td")).to_have_count(2)
    page.shot("compare")
    with page.page.expect_download() as download:
        page.page.click("#compare-downloads >> text=Excel (XLSX)")
    sheet = load_workbook(io.BytesIO(Path(download.value.path()).read_bytes()))["Comparison"]
    header, *rows = list(sheet.values)
    assert header[2:4] == ("ff2-pcie-2zone", "ff2-pcie-3layer")
    shown = page.page.evaluate("""() => [...document.querySelectorAll('#comparison tr[data-metric]')].map((tr) =>
        [...tr.querySelectorAll('td')].map((td) => td.firstChild.textContent.trim()))""")
    units = [row[1] for row in rows]
    assert len(rows) == len(shown) > 20
    for row, cells, unit in zip(rows, shown, units):  # every value as the page formats it
        assert [figure(value, unit if unit in ("fraction", "W") else "") for value in row[2:4]] == cells, row[0]
    with page.page.expect_download() as download:
        page.page.click("#compare-downloads >> text=CSV")
    csv_rows = Path(download.value.path()).read_text().splitlines()
    assert len(csv_rows) == 1 + len(rows) and csv_rows[0].startswith("metric,unit,ff2-pcie-2zone,ff2-pcie-3layer")


def test_a_compare_chart_names_the_plans_it_cannot_draw(page):
    """Issue 70, item 5: a plan without storage has no time to train; its chart names it, never drops it."""
    page.login()
    _api(page, "POST", "/api/plans/dgx-h200-1024/clone/", {"slug": "h200-no-storage"})
    _api(page, "PATCH", "/api/plans/h200-no-storage/", {"external_storage_write_gbyte_s": None})
    page.goto("/compare/?ids=dgx-h200-1024,h200-no-storage&workload=deepseek-v3-class-1024")
    caption = page.page.locator("#compare-charts figure[data-metric=time_to_train_days] figcaption")
    expect(caption).to_contain_text("not drawn, no figure: h200-no-storage (unknown for this build")
    expect(page.page.locator("#compare-charts figure[data-metric=step_time_s] .missing")).to_have_count(0)


def test_a_blank_builder_opens_without_errors_and_a_new_twin_says_it_has_not_started(page):
    page.login()
    page.goto("/plans/new/")
    expect(page.page.locator("#preview-status")).to_contain_text("Choose a compute node type and a node count")
    expect(page.page.locator(".field-error:visible")).to_have_count(0)
    expect(page.page.locator("#form-errors")).to_be_hidden()
    twin = _api(page, "POST", "/api/twins/", {"plan": "ff2-pcie-2zone", "seed": 2})
    page.goto(f"/twins/{twin['id']}/")
    expect(page.page.locator("#twin-status")).to_have_text("created")
    expect(page.page.locator("#twin-metrics")).to_contain_text("not started: press Start")
    expect(page.page.locator("#twin-metrics")).not_to_contain_text("restarting")


def test_a_sweep_chart_names_its_axes_with_units_and_draws_rejected_points_apart(page):
    page.login()
    sweep_page, _, _ = _sweep_site_and_twin(page)
    page.goto(sweep_page)
    expect(page.page.locator("main")).to_contain_text("12 points in 1 chunk")
    chart = page.page.locator("#sweep-chart svg.chart")
    expect(chart).to_be_visible()
    page.page.select_option("#chart-controls select[name=x]", "axis:cluster.node_count")
    page.page.select_option("#chart-controls select[name=y]", "power.facility_w")
    expect(chart.locator("text.label")).to_have_text(["facility power (W)", "node count (nodes)"])  # y, then x
    # 16-128 DGX nodes for 128-512 GPU jobs: a job runs where it fits (8 GPUs a node); clusters over
    # 600 kW fail the constraint and are drawn hollow, with the reason on hover.
    rejected = chart.locator("circle.rejected")
    expect(rejected.first.locator("title")).to_contain_text("rejected: fails power.facility_w")
    assert rejected.count() > 0 and chart.locator("circle:not(.rejected)").count() > 0
    expect(page.page.locator("#sweep-chart ul.legend")).to_contain_text("rejected by a constraint")
    page.shot("sweep-rejected")
    # A goal's metric is what its chart shows first, against the first axis.
    timed = _api(page, "POST", "/api/sweeps/", {"plan": "dgx-a100-3layer", "workload": "llama-13b-512",
                                                "axes": {"workload.gpus": [128, 256, 512]},
                                                "goal": {"minimize": "training.step_time_s"}})
    page.goto(f"/sweeps/{timed['id']}/")
    expect(page.page.locator("#sweep-percent")).to_have_text("100%", timeout=90_000)
    expect(page.page.locator("#chart-controls select[name=y]")).to_have_value("training.step_time_s")
    expect(page.page.locator("#chart-controls select[name=x]")).to_have_value("axis:workload.gpus")


def test_the_blackwell_comparison_shows_capex_and_cost_per_token_once_every_part_has_a_price(page):
    """HGX B200 against GB200 NVL72 priced from a user's own quotes: the presets' book estimates the
    switch and the cabling, so the user copies it, replaces the estimates with their quotes, and clones
    both presets with their optics chosen onto it, and with the storage system their checkpoints go to
    (the presets have none, so their checkpoint and restart times, and so the time and cost to train,
    are unknown)."""
    page.login()
    _api(page, "POST", "/api/catalog/price-books/usd-2026/copy/", {"slug": "our-blackwell-quotes"})
    for kind, part, price in (("switch", "qm9700", 36000), ("link-part", "ndr-sr4-transceiver-400g", 900),
                              ("link-part", "osfp-800g-2xsr4-transceiver", 1400), ("link-part", "mmf-fiber-cable", 60)):
        _api(page, "POST", "/api/catalog/price-books/our-blackwell-quotes/items/", {
            "part_kind": kind, "part_slug": part, "unit_price": price, "basis": "our distributor's quote",
            "confidence": "secondary", "price_date": "2026-11-30"})
    for preset, mine in (("hgx-b200-1152", "our-hgx-b200"), ("gb200-nvl72-1152", "our-gb200")):
        _api(page, "POST", f"/api/plans/{preset}/clone/", {"slug": mine})
        _api(page, "PATCH", f"/api/plans/{mine}/", {
            "price_book": "our-blackwell-quotes", "endpoint_cable": "ndr-sr4-transceiver-400g",
            "transceiver": "osfp-800g-2xsr4-transceiver", "fiber": "mmf-fiber-cable",
            "external_storage_write_gbyte_s": 400, "external_storage_read_gbyte_s": 800})
    page.goto("/compare/?ids=our-hgx-b200,our-gb200&workload=llama3-70b-class-1152")
    # GEMM per price is per GPU against each GPU's share of its node's price: a 4-GPU tray against an
    # 8-GPU HGX node is not a whole node's price over one GPU's GEMM.
    comparison = page.page.evaluate("fetch('/api/plans/compare/?ids=our-hgx-b200,our-gb200').then((r) => r.json())")
    values = {m["key"]: m["values"] for m in comparison["metrics"]}
    per_gpu = [gemm / (price / gpus) for gemm, price, gpus in
               zip(values["gemm_mean_tflops"], values["node_price"], (8, 4))]
    expect(page.page.locator("#comparison tr[data-metric=gemm_per_node_price] td").nth(1)).to_contain_text(
        f"×{per_gpu[1] / per_gpu[0]:.3g}")
    expect(page.page.locator("#not-comparable-on-cost")).to_have_count(0)
    for metric in ("capex_total", "cost_per_million_tokens"):
        cells = page.page.locator(f"#comparison tr[data-metric={metric}] td")
        expect(cells).to_have_count(2)
        for i in range(2):
            expect(cells.nth(i)).to_have_text(re.compile(r"^\d[\d,.]*"))
    expect(page.page.locator("figure[data-metric=capex_total] svg.chart")).to_be_visible()
    page.shot("blackwell-priced")


def _both_marked(page, bad: dict):
    """Fill each field with its bad value; then every one is marked invalid with its message shown."""
    for field, value in bad.items():
        page.page.fill(f"#f-{field}", value)
    for field in bad:
        expect(page.page.locator(f"#f-{field}")).to_have_attribute("aria-invalid", "true")
        expect(page.page.locator(f"#e-{field}")).to_be_visible()


@pytest.mark.parametrize("width", [1024, 1440])
def test_the_plan_and_workload_forms_show_every_field_error_at_once_beside_its_field(page, width):
    """Two bad fields at once in each form: both marked, each message in the slot under its own label,
    inside the window at both widths (screenshots of each). The checks across fields (a fabric too small
    for the nodes, heads that key/value heads do not divide) follow once every field reads."""
    page.login()
    page.page.set_viewport_size({"width": width, "height": 900})
    page.goto("/plans/new/?from=ff2-pcie-2zone")
    expect(page.page.locator("#preview-body .tiles")).to_contain_text("9,920")
    _both_marked(page, {"node_count": "0", "rack_power_limit_w": "-1"})
    page.shot(f"{width}-plan-form-errors")
    page.goto("/workloads/new/?from=llama-13b-512")
    page.page.select_option("#f-plan", "ff2-pcie-2zone")
    expect(page.page.locator("#preview-body #step-breakdown")).to_contain_text("backward")
    _both_marked(page, {"layers": "0", "micro_batch": "0"})
    page.shot(f"{width}-workload-form-errors")
    found = page.page.evaluate(LAYOUT)
    assert not found["clipped"] + found["overlaps"], found

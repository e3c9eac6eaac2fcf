"""The architect's flows in real Chromium against the live stack (tests/e2e/conftest.py).

Each test saves a screenshot of every page it visits under test-artifacts/, and the ``page``
fixture fails the test if the browser logged a JavaScript error or an uncaught exception."""
import datetime
import re
from pathlib import Path

from playwright.sync_api import expect

from tests.e2e.conftest import VIEWER, VIEWER_PASSWORD
from tests.e2e.test_layout import LAYOUT, _api

DATA = Path(__file__).resolve().parent.parent / "data"


def test_login_is_required_and_every_page_renders(page):
    page.goto("/plans/")
    assert "/login/" in page.page.url
    page.shot("login")
    page.page.fill("#id_username", "architect")
    page.page.fill("#id_password", "wrong password")
    page.page.click("main button[type=submit]")
    expect(page.page.locator("main .error")).to_contain_text("enter a correct username and password")
    page.login()
    page.shot("home")
    page.goto("/catalog/")
    page.page.select_option("select[name=table]", "switches")
    page.page.select_option("select[name=vendor]", "NVIDIA (Mellanox)")
    page.page.click("form.filters button")
    expect(page.page.locator("main h2")).to_have_text(["Switches"])
    expect(page.page.locator("main [role=status]")).to_have_text("1 entry.")
    page.page.click("text=NVIDIA Mellanox QM8700")
    expect(page.page.locator("tr:has(code:text-is('radix')) td.text")).to_have_text("40")
    expect(page.page.locator("main")).to_contain_text("Source:")
    page.shot("catalog-entry")
    page.goto("/validation/")
    expect(page.page.locator("main h2").first).to_be_visible()
    assert page.page.locator("tr.pass").count() > 20
    page.shot("validation")
    page.goto("/tokens/")
    page.page.fill("input[name=name]", "procurement script")
    page.page.check("input[name=read_only]")
    page.page.click("#token-form button")
    expect(page.page.locator("#token-created code")).to_have_text(re.compile(r"^[A-Za-z0-9_-]{20,}$"))
    expect(page.page.locator("#token-list")).to_contain_text("procurement script")
    expect(page.page.locator("#token-list")).to_contain_text("read-only")
    page.shot("tokens")
    # The Content-Security-Policy allows no inline script: a page that needed one would log an error.
    response = page.page.goto(page.base + "/sweeps/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.goto("/api/docs/")
    expect(page.page.locator(".swagger-ui .info .title")).to_contain_text("AI cluster planner API")
    page.shot("api-docs")
    page.page.click("nav.docs-nav >> text=AI cluster planner")  # a way back to the app
    expect(page.page.locator("main h1").first).to_be_visible()
    assert page.page.url.rstrip("/") == page.base
    page.goto("/admin/login/")
    expect(page.page.locator("#content")).to_be_visible()
    for path in ("/reliability/", "/plans/ff2-pcie-2zone/", "/workloads/", "/twins/", "/compare/"):
        page.goto(path)
        page.page.wait_for_load_state("networkidle")
    page.goto("/plans/gb200-nvl72-1152/")  # no storage nodes: no storage rows in its power table
    expect(page.page.locator("#plan-report")).to_contain_text("IT total")
    expect(page.page.locator("#plan-report")).not_to_contain_text("storage node")
    # NVL72's GPUs reach each other over NVLink: no HFReduce (a PCIe-node library) in its allreduce figures.
    expect(page.page.locator("#allreduce-chart .legend")).to_have_text(re.compile(r"^\s*NCCL\s*$"))
    expect(page.page.locator("#plan-report")).to_contain_text("HFReduce is not shown")
    page.goto("/plans/ff2-pcie-2zone/?workload=llama-13b-512")
    expect(page.page.locator("#allreduce-chart .legend")).to_contain_text("HFReduce with NVLink pairs")
    expect(page.page.locator("#scaling-chart svg text", has_text=re.compile(r"^0$"))).to_have_count(1)
    # Every part of the step has its own colour, past the eight of the charts' palette.
    page.goto("/plans/llama3-h100-16k/?workload=llama3-405b-like")
    bars = page.page.locator("#step-breakdown svg rect.bar")
    expect(bars.first).to_be_visible()
    fills = [bars.nth(i).get_attribute("fill") for i in range(bars.count())]
    assert len(fills) >= 9 and len(set(fills)) == len(fills)
    # Each part in units people read (ms, µs), never a power of ten.
    legend = page.page.locator("#step-breakdown .legend").inner_text()
    assert "e-" not in legend and re.search(r"optimizer: [1-9][\d.,]* (µs|ms|s|min) \(", legend), legend
    # A prediction whose validation group misses says so beside it, linked to those cases.
    page.goto("/plans/deepseek-h800-8plane/?workload=deepseek-v3-2048")
    note = page.page.locator("#trust-note")
    expect(note).to_have_class(re.compile(r"\bwarn\b"))
    expect(note).to_contain_text("0 of 2 published mixture-of-experts training runs on hopper GPUs")
    # Each headline prediction has its band beside it, from the same runs.
    step_band = page.page.locator("#error-bands li[data-path='training.step_time_s']")
    expect(step_band).to_contain_text(re.compile(r"training step: on 2 published mixture-of-experts training runs on "
                                                 r"hopper GPUs with tensor, pipeline and data parallelism \(whole "
                                                 r"weights on each rank\) the prediction was [-+]\d+% to [-+]\d+% off, "
                                                 r"so runs like it come in at [\d.]+ s to [\d.]+ s"))
    expect(page.page.locator("#error-bands li[data-path='power.facility_w']")).to_contain_text("node, rack and cluster")
    note.locator("a").click()
    expect(page.page.locator("h2#training-dgx-cloud-recipes")).to_be_in_viewport()


def test_pages_work_narrow_and_from_the_keyboard(page):
    page.login()
    page.page.set_viewport_size({"width": 390, "height": 800})
    for path in ("/", "/plans/", "/compare/?ids=ff2-pcie-2zone,ff2-pcie-3layer", "/sweeps/", "/twins/", "/workloads/"):
        page.goto(path)
        overflow = page.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{path} scrolls sideways by {overflow}px at 390px wide"
    page.shot("narrow-compare")
    page.goto("/")
    page.page.keyboard.press("Tab")
    assert page.page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.page.keyboard.press("Tab")
    page.page.keyboard.press("Tab")
    assert page.page.evaluate("document.activeElement.getAttribute('href')") == "/catalog/"
    page.page.keyboard.press("Enter")
    page.page.wait_for_url(re.compile(r"/catalog/$"))


def test_fire_flyer_comparison_shows_122_against_1320_switches(page):
    page.login()
    page.page.click("text=Open the Fire-Flyer comparison")
    row = page.page.locator("#comparison tr[data-metric=switches] td")
    expect(row).to_have_count(3)
    expect(row.nth(0)).to_have_text("1,320")
    expect(row.nth(1)).to_contain_text("122")
    expect(row.nth(2)).to_contain_text("200")
    expect(page.page.locator("#compare-charts figure[data-metric=switches] svg rect.bar")).to_have_count(3)
    # The three-layer build's extra optics show in the fabric's share of interruptions and repair work.
    share = page.page.locator("#comparison tr[data-metric=fabric_interruption_share] td")
    expect(share).to_have_count(3)
    expect(page.page.locator("#comparison tr[data-metric=fabric_repair_hours_per_day] td")).to_have_count(3)
    # A total for all three builds (the FF builds' 3FS nodes at the book's estimate), each with its band.
    totals = page.page.locator("#comparison tr[data-metric=capex_total] td")
    expect(totals).to_have_count(3)
    for cell in totals.all():
        expect(cell).to_have_text(re.compile(r"\d"))
    expect(page.page.locator("#error-bands, #compare-bands").first).to_contain_text("the price book's estimates")
    page.shot("fire-flyer")
    page.page.click("#blackwell")
    ep = page.page.locator("#comparison tr[data-placement=ep] td")
    expect(ep.nth(0)).to_have_text("network")
    expect(ep.nth(1)).to_have_text("scale-up")
    expect(page.page.locator("#comparison tr[data-metric=racks] td").nth(1)).to_contain_text("16")
    expect(page.page.locator("#comparison tr[data-metric=node_max_power_w] td").nth(0)).to_contain_text("14.3 kW")
    expect(page.page.locator("#comparison tr[data-basis=node_max_power] td")).to_have_text(
        ["vendor maximum", "vendor maximum"])
    expect(page.page.locator("#comparison tr[data-basis=pue] td").nth(1)).to_contain_text("hyperscale hall")
    expect(page.page.locator("#compare-charts figure[data-metric=ep_traffic_s] svg rect.bar")).to_have_count(2)
    expect(page.page.locator("#not-comparable-on-cost")).to_have_count(0)  # one book prices both, fabric estimated
    expect(page.page.locator("#comparison tr[data-metric=capex_total] td")).to_have_count(2)
    page.shot("blackwell")


def test_plan_builder_shows_field_errors_then_saves_and_reports(page):
    page.login()
    page.goto("/plans/new/?from=ff2-pcie-2zone")
    expect(page.page.locator("#preview-body .tiles")).to_contain_text("9,920")
    # A job larger than the plan: the preview says by how much (issue 70, item 13), not only that it cannot run.
    page.page.select_option("#f-workload", "llama3-405b-like")
    expect(page.page.locator("#preview-status")).to_contain_text(
        "This build cannot run: workload 'llama3-405b-like': the job needs more GPUs than the cluster has: 16,384 GPUs "
        "against the cluster's 9,920")
    page.page.select_option("#f-workload", "")
    expect(page.page.locator("#preview-body .tiles")).to_contain_text("9,920")
    # Parts that fit the InfiniBand HDR nodes first; an Ethernet switch or an NDR optic says why not.
    switches = page.page.locator("#f-switch option[data-fits]")
    expect(switches.first).to_have_attribute("data-fits", "true")
    expect(switches.last).to_have_attribute("data-fits", "false")
    expect(page.page.locator("#f-switch option[value=spectrum4-sn5600]")).to_have_attribute("title", re.compile("RoCE"))
    expect(page.page.locator("#f-endpoint_cable option[data-fits]").first).to_have_attribute("data-fits", "true")
    page.page.fill("#f-node_count", "5000")
    error = page.page.locator("#e-node_count")
    expect(error).to_be_visible()
    expect(error).to_contain_text("do not fit a 2-layer fat-tree")
    expect(page.page.locator("#f-node_count")).to_have_attribute("aria-invalid", "true")
    page.shot("impossible-fabric")
    page.page.select_option("#f-fabric_layers", "3")
    page.page.fill("#f-zones", "1")
    page.page.fill("#f-interzone_switches", "0")
    expect(error).to_be_hidden()
    expect(page.page.locator("#preview-body .tiles")).to_contain_text("40,000")
    expect(page.page.locator("#f-hall")).to_have_value("industry-average")
    page.page.select_option("#f-hall", "hyperscale")  # the 3FS price book gives no PUE: the hall's applies
    page.page.fill("#f-slug", "ff-5000-3layer")
    page.page.fill("#f-name", "Fire-Flyer grown to 40,000 GPUs")
    page.page.click("#save-plan")
    page.page.wait_for_url(re.compile(r"/plans/ff-5000-3layer/$"))
    page.page.select_option("#plan-options select[name=workload]", "llama-13b-512")
    expect(page.page.locator("#plan-status")).to_contain_text("llama-13b-512")
    expect(page.page.locator("#bom")).to_contain_text("compute node")
    expect(page.page.locator("#bom-total")).to_contain_text("REL")  # the 3FS nodes at the book's estimate
    expect(page.page.locator("#bom tfoot")).to_contain_text("of the total is estimated")
    expect(page.page.locator("#topology svg.chart")).to_be_visible()
    expect(page.page.locator("#ettr-chart svg.chart")).to_contain_text("optimum")
    expect(page.page.locator("#ettr-restart-chart svg.chart")).to_contain_text("plan")
    expect(page.page.locator("#excluded-categories")).to_contain_text("Xid 31")  # a production job's own faults
    expect(page.page.locator("#plan-report")).to_contain_text("rendezvous and set-up")
    expect(page.page.locator("#allreduce-chart svg.chart path")).to_have_count(3)
    expect(page.page.locator("#allreduce-chart .marker-label")).to_have_text("NCCL: ring to tree")
    expect(page.page.locator("#step-breakdown")).to_contain_text("pipeline bubble")
    expect(page.page.get_by_text("nodes per rack: default budget")).to_be_visible()  # no site limit given
    expect(page.page.get_by_text(re.compile(r"PUE 1\.1: hyperscale hall: Google"))).to_be_visible()
    page.shot("plan")


def test_a_refused_save_says_why_beside_the_field_and_keeps_saying_it(page):
    page.login()
    page.goto("/workloads/new/")  # starts from a preset, so it evaluates at once
    expect(page.page.locator("#start-note")).to_contain_text("Starting from")
    expect(page.page.locator("#preview-status")).to_contain_text("Evaluated on")
    expect(page.page.locator("#form-errors")).to_be_hidden()
    page.goto("/plans/new/?from=ff2-pcie-2zone")
    expect(page.page.locator("#preview-body .tiles")).to_contain_text("9,920")
    page.page.click("#save-plan")  # the slug starts blank
    slug_error = page.page.locator("#e-slug")
    expect(slug_error).to_be_visible()
    expect(page.page.locator("#f-slug")).to_be_focused()
    page.page.fill("#f-node_count", "1200")  # another edit: the preview runs again
    page.page.wait_for_timeout(1500)
    expect(slug_error).to_be_visible()
    page.page.fill("#f-slug", "ff2-pcie-2zone")
    page.page.click("#save-plan")
    expect(slug_error).to_contain_text("is taken")
    page.page.wait_for_timeout(1500)
    expect(slug_error).to_contain_text("is taken")
    page.shot("refused-save")


def test_netbox_import_asks_for_the_rack_heights_the_catalogue_lacks(page):
    import io
    import zipfile

    import yaml

    page.login()
    page.goto("/plans/ff2-pcie-2zone/")
    form = page.page.locator("#netbox-heights")
    expect(form).to_contain_text("the catalogue has none for")
    expect(page.page.locator(".actions a", has_text="NetBox import")).to_have_count(0)  # no link that cannot succeed
    heights = form.locator("input[type=number]")
    expect(heights).to_have_count(1)  # the 3FS storage node (the PCIe node's 4U is in the catalogue)
    form.locator("button[type=submit]").click()  # empty: the browser keeps the user on the form
    expect(heights.first).to_be_focused()
    heights.nth(0).fill("2")
    with page.page.expect_download() as download:
        form.locator("button[type=submit]").click()
    archive = zipfile.ZipFile(io.BytesIO(Path(download.value.path()).read_bytes()))
    types = yaml.safe_load_all(archive.read(next(n for n in archive.namelist() if "device-types" in n)))
    assert {t["slug"]: t["u_height"] for t in types if t} == {"ff-pcie-a100": 4, "ff-3fs-storage": 2, "qm8700": 1}
    page.goto("/plans/dgx-a100-3layer/")  # every part has a height: a plain download
    expect(page.page.locator(".actions a", has_text="NetBox import (ZIP)")).to_be_visible()
    expect(page.page.locator("#netbox-heights")).to_have_count(0)


def _band_width(text: str) -> float:
    """The width of a band written "low REL to high REL"."""
    low, high = (float(value.replace(",", "")) for value in re.findall(r"[\d,]+(?:\.\d+)?", text)[:2])
    return high - low


def test_a_quote_replaces_an_estimate_and_narrows_the_totals_band(page):
    page.login()
    _save_copy(page, "ff2-pcie-2zone", "9,920", "quoted-ff", "Fire-Flyer 2 with our storage quote")
    storage = page.page.locator("#bom tr[data-slug=ff-3fs-storage]")
    expect(storage).to_contain_text("estimate")
    expect(page.page.locator("#bom-band")).to_contain_text(" to ")
    before = _band_width(page.page.locator("#bom-band").inner_text())
    page.shot("bill-estimated")
    storage.locator("a.quote-link").click()
    page.page.wait_for_url(re.compile(r"/catalog/price-books/fire-flyer-relative/\?"))
    expect(page.page.locator("#quote")).to_contain_text("Your quote for the plan Fire-Flyer 2 with our storage quote")
    expect(page.page.locator("#quote")).to_contain_text("the shared book does not change")
    expect(page.page.locator("#q-part")).to_have_value("storage-node:ff-3fs-storage")
    page.page.fill("#q-unit_price", "-2")
    page.page.fill("#q-basis", "our vendor's quote for 180 nodes")
    page.page.click("#quote-form button[type=submit]")
    expect(page.page.locator("#e-unit_price")).to_contain_text("must be a finite number of zero or more")
    page.page.fill("#q-unit_price", "1.75")
    page.page.click("#quote-form button[type=submit]")
    page.page.wait_for_url(re.compile(r"/plans/quoted-ff/#bom$"))
    expect(storage).to_contain_text("our vendor's quote for 180 nodes")
    expect(storage).not_to_contain_text("estimate")
    expect(page.page.locator("#plan-report")).to_contain_text("architect's own book")
    after = _band_width(page.page.locator("#bom-band").inner_text())
    assert after < before  # the quote is its own low and high
    page.shot("bill-quoted")


def test_workload_editor_names_bad_fields_and_shows_where_the_step_goes(page):
    page.login()
    page.goto("/workloads/new/?from=llama-13b-512")
    page.page.select_option("#f-plan", "ff2-pcie-2zone")
    breakdown = page.page.locator("#preview-body #step-breakdown")
    expect(breakdown).to_contain_text("backward")
    assert breakdown.locator("svg rect.bar").count() >= 4
    page.page.fill("#f-kv_heads", "6")
    error = page.page.locator("#e-kv_heads")
    expect(error).to_contain_text("must divide the 40 attention heads")
    expect(page.page.locator("#f-kv_heads")).to_have_attribute("aria-invalid", "true")
    page.shot("workload-error")
    page.page.fill("#f-kv_heads", "8")
    expect(error).to_be_hidden()
    page.page.select_option("#f-pipeline_schedule", "dualpipe")  # DualPipe pairs stages: an odd PP cannot run
    page.page.fill("#f-pp", "5")
    expect(page.page.locator("#e-pp")).to_contain_text("DualPipe needs an even PP")
    expect(page.page.locator("#f-pp")).to_have_attribute("aria-invalid", "true")
    page.page.fill("#f-pp", "4")
    expect(page.page.locator("#e-pp")).to_be_hidden()
    page.page.select_option("#f-pipeline_schedule", "1f1b")
    page.page.check("#f-sequence_parallel")
    page.page.select_option("#f-recompute", "selective")
    expect(error).to_be_hidden()
    expect(breakdown).to_contain_text("recomputation")
    page.page.fill("#f-slug", "llama-13b-gqa")
    page.page.fill("#f-name", "LLaMa-13B with 8 KV heads")
    page.page.click("#save-workload")
    page.page.wait_for_url(re.compile(r"/workloads/\?saved=llama-13b-gqa$"))
    expect(page.page.locator("main table")).to_contain_text("llama-13b-gqa")
    page.shot("workloads")


def test_workload_editor_offers_the_software_features_and_the_step_shows_their_costs(page):
    page.login()
    page.goto("/workloads/new/?from=llama3-405b-like")
    page.page.select_option("#f-plan", "llama3-h100-16k")
    breakdown = page.page.locator("#preview-body #step-breakdown")
    expect(breakdown).to_contain_text("waiting for the slowest GPU")  # Hopper's measured spread
    expect(page.page.locator("#h-attention_kernel")).to_contain_text("FlashAttention-3 paper")
    expect(page.page.locator("#h-fp8_recipe")).to_contain_text("current scaling reads a tensor once more")
    expect(page.page.locator("#h-tp_overlap_sms")).to_contain_text("Megatron-Bridge")
    page.page.check("#f-tp_comm_overlap")
    expect(breakdown).to_contain_text("SMs held by overlapped communication")
    page.shot("workload-step-costs")
    page.page.select_option("#f-precision", "fp8")
    page.page.select_option("#f-fp8_recipe", "mxfp8")
    expect(page.page.locator("#e-fp8_recipe")).to_contain_text("MXFP8 needs block-scaled FP8 tensor cores")
    expect(page.page.locator("#f-fp8_recipe")).to_have_attribute("aria-invalid", "true")
    page.page.select_option("#f-fp8_recipe", "tensorwise")
    expect(page.page.locator("#e-fp8_recipe")).to_be_hidden()


def test_a_small_model_on_grace_shows_its_host_and_cuda_graphs_take_it_away(page):
    page.login()
    page.goto("/workloads/new/?from=gpt2-medium-128&plan=gb200-nvl72-1152")
    expect(page.page.locator("#f-plan")).to_have_value("gb200-nvl72-1152")
    expect(page.page.locator("#preview-status")).to_contain_text("Evaluated on")  # the page's script is running
    page.page.fill("#f-micro_batch", "1")
    breakdown = page.page.locator("#preview-body #step-breakdown")
    expect(breakdown).to_contain_text("the host launching kernels", timeout=15_000)  # Grace's 14.55 us a launch
    expect(page.page.locator("#h-cuda_graphs")).to_contain_text("one host launch")
    page.shot("workload-host-bound")
    page.page.check("#f-cuda_graphs")
    expect(breakdown).not_to_contain_text("the host launching kernels")


def test_a_moe_step_on_gb200_names_what_its_compute_spends(page):
    """The step's table names the kernels inside its compute: the GB200's sustained clock below full,
    the grouped expert GEMMs at their measured share and the all-to-all dispatcher's token shuffles."""
    page.login()
    page.goto("/workloads/new/?from=deepseek-v3-class-1024&plan=gb200-nvl72-1152")
    expect(page.page.locator("#preview-status")).to_contain_text("Evaluated on")
    body = page.page.locator("#preview-body")
    expect(body).to_contain_text("of the compute: grouped expert GEMMs", timeout=15_000)
    expect(body).to_contain_text("of the compute: the sustained clock below full")
    expect(body).to_contain_text("of the compute: MoE token shuffles")
    page.shot("workload-compute-detail")
    page.page.select_option("#f-moe_dispatcher", "hybridep")  # HybridEP permutes inside its kernels
    expect(body).not_to_contain_text("MoE token shuffles")
    # Issue 70, item 13: on the plan's page the host's part says why it is what it is (Grace's measured rate).
    page.goto("/plans/gb200-nvl72-1152/?workload=deepseek-v3-class-1024")
    host = page.page.locator("#plan-report tr", has_text="the host launching kernels")
    expect(host).to_contain_text("14.55 µs a kernel launch", timeout=30_000)
    expect(host).to_contain_text("(measured)")
    expect(host).to_contain_text("CUDA graphs replay a layer with one launch")


def test_a_zero3_step_names_its_parameter_gathers(page):
    """Sharding the weights (ZeRO-3 / FSDP) shows what the data-parallel traffic is made of: the
    parameter all-gathers of every micro-batch beside the gradients' reduction and, over NCCL, the
    implementation's collective calls."""
    page.login()
    page.goto("/workloads/new/?from=llama-13b-512&plan=ff2-pcie-2zone")
    expect(page.page.locator("#preview-status")).to_contain_text("Evaluated on")
    body = page.page.locator("#preview-body")
    expect(body).not_to_contain_text("parameter all-gathers")
    page.page.fill("#f-zero_stage", "3")
    expect(body).to_contain_text("data-parallel traffic: parameter all-gathers (ZeRO-3 / FSDP)", timeout=15_000)
    expect(body).to_contain_text("data-parallel traffic: gradient reduction")
    expect(body).not_to_contain_text("collective calls")  # HFReduce's FSDP (HaiScale) reduces whole buffers
    page.shot("workload-fsdp-gathers")
    page.page.select_option("#f-collective", "nccl")
    page.page.select_option("#f-fsdp_implementation", "deepspeed-zero3-v0.3")
    expect(body).to_contain_text("data-parallel traffic: ZeRO-3 / FSDP collective calls", timeout=15_000)
    page.shot("workload-fsdp-calls")


def _cheapest_build_sweep_form(page, pareto_x: str, pareto_y: str):
    """The sweep form for 8-64 DGX-A100 nodes against 64-512 GPU jobs, cheapest build first, with a
    Pareto pair (the preset has every part priced: cost goals need complete bills)."""
    page.login()
    page.goto("/sweeps/?plan=dgx-a100-3layer")
    page.page.select_option("#s-workload", "llama-13b-512")
    rows = page.page.locator(".axis-row")
    rows.nth(0).locator("[name=axis-values]").fill("8..64 step 8")
    rows.nth(1).locator("[name=axis-path]").fill("workload.gpus")
    rows.nth(1).locator("[name=axis-values]").fill("64, 128, 256, 512")
    page.page.select_option("select[name=sense]", "minimize")
    page.page.select_option("select[name=objective]", "cost.capex_total")
    page.page.select_option("select[name=pareto-x]", pareto_x)
    page.page.select_option("select[name=pareto-y]", pareto_y)


def test_sweep_progress_reaches_100_percent_and_a_chart_appears(page):
    _cheapest_build_sweep_form(page, "cost.capex_total", "training.step_time_s")
    page.shot("sweep-form")
    page.page.click("#sweep-form button[type=submit]")
    page.page.wait_for_url(re.compile(r"/sweeps/\d+/$"))
    expect(page.page.locator("#sweep-percent")).to_have_text("100%", timeout=90_000)
    expect(page.page.locator("#sweep-status")).to_have_text("done")
    expect(page.page.locator("#sweep-chart svg.chart")).to_be_visible()
    page.shot("sweep")
    # 8 node counts x 4 job sizes; a job runs when its GPUs fit the cluster's (8 per node): 8 + 7 + 5 + 1
    # = 21 points. More nodes cost more and more GPUs step faster, so the front is the four smallest
    # clusters that hold each job size.
    expect(page.page.locator("#sweep-chart svg.chart rect.front")).to_have_count(4)
    expect(page.page.locator("#sweep-chart svg.chart circle")).to_have_count(17)
    expect(page.page.locator("#chart-note")).to_contain_text("21 valid points shown; 4 on the Pareto front")
    expect(page.page.locator("#sweep-cancel")).to_be_hidden()
    page.page.select_option("#chart-controls select[name=y]", "training.mfu")
    expect(page.page.locator("#sweep-chart svg.chart > title")).not_to_contain_text("training.mfu")  # labels, not paths
    expect(page.page.locator("#sweep-chart svg.chart > title")).to_contain_text(" against ")


def test_a_pareto_front_with_one_metric_maximised_is_the_brute_force_front(page):
    _cheapest_build_sweep_form(page, "power.it_total_w", "training.tokens_per_s")
    # Each direction follows the metric's better way: IT power minimised, tokens per second maximised.
    expect(page.page.locator("select[name=pareto-x-sense]")).to_have_value("min")
    expect(page.page.locator("select[name=pareto-y-sense]")).to_have_value("max")
    page.page.click("#sweep-form button[type=submit]")
    page.page.wait_for_url(re.compile(r"/sweeps/\d+/$"))
    expect(page.page.locator("#sweep-percent")).to_have_text("100%", timeout=90_000)
    sweep_id = page.page.url.rstrip("/").rsplit("/", 1)[1]
    sweep = page.page.evaluate(f"fetch('/api/sweeps/{sweep_id}/').then((r) => r.json())")
    sample = page.page.evaluate(f"fetch('/api/sweeps/{sweep_id}/sample/?points=1000').then((r) => r.json())")
    assert sweep["spec"]["goal"]["pareto"] == [{"x": "power.it_total_w", "y": "training.tokens_per_s",
                                               "x_sense": "min", "y_sense": "max"}]
    values = {r["point"]: (r["outputs"]["power.it_total_w"], r["outputs"]["training.tokens_per_s"])
              for r in sample["results"] if r["valid"]}
    assert len(values) == 21
    brute = {p for p, (w, t) in values.items()
             if not any(w2 <= w and t2 >= t and (w2, t2) != (w, t) for w2, t2 in values.values())}
    front_values = {values[p] for p in brute}  # equal points: the front keeps one of them
    assert len(front_values) > 1
    assert {values[p] for p in sweep["goal_result"]["pareto"][0]["points"]} == front_values
    expect(page.page.locator("#chart-controls select[name=ydir]")).to_have_value("max")
    expect(page.page.locator("#sweep-chart svg.chart rect.front")).to_have_count(len(front_values))
    expect(page.page.locator("#chart-note")).to_contain_text(f"{len(front_values)} on the Pareto front")
    # The optimum is named with its values, not only its number.
    optimum = sweep["goal_result"]["optimum"]
    named = re.compile(rf"#{optimum}, .* = .*; total price \(REL\) = ")
    expect(page.page.locator("#goal-result")).to_contain_text(named)
    # Flipping a direction on the page recomputes the front in the browser: both minimised here.
    page.page.select_option("#chart-controls select[name=ydir]", "min")
    both_min = {(w, t) for w, t in values.values()
                if not any(w2 <= w and t2 <= t and (w2, t2) != (w, t) for w2, t2 in values.values())}
    expect(page.page.locator("#chart-note")).to_contain_text(f"{len(both_min)} on the Pareto front")
    page.shot("sweep-pareto-mixed")


def test_twin_shows_an_injected_xid_74_to_every_viewer(page, open_tab):
    page.login()
    page.goto("/twins/?plan=ff2-pcie-2zone")
    page.page.fill("#t-speed", "10")
    page.page.select_option("#t-visibility", "shared")
    page.page.click("#twin-form button[type=submit]")
    page.page.wait_for_url(re.compile(r"/twins/\d+/$"))
    expect(page.page.locator("#socket-status")).to_have_text("live")
    expect(page.page.locator("#twin-legend")).to_contain_text("healthy: 1,240 nodes, 9,920 GPUs")
    twin_url = page.page.url
    watcher = open_tab("-second-viewer")
    watcher.login(VIEWER, VIEWER_PASSWORD)
    viewer = watcher.page
    viewer.goto(twin_url)
    expect(viewer.locator("#twin-controls")).to_have_count(0)  # another user may watch a shared twin, not steer it
    expect(viewer.locator("#socket-status")).to_have_text("live")
    page.page.click("#twin-controls [data-action=start]")
    expect(page.page.locator("#twin-status")).to_have_text("running")
    page.page.select_option("#twin-inject select[name=category]", "xid-74")
    page.page.fill("#twin-inject input[name=node]", "3")
    page.page.fill("#twin-inject input[name=gpu]", "5")
    page.page.click("#twin-inject button[type=submit]")
    expect(page.page.locator("#node-detail li[data-gpu='29']")).to_have_text("GPU 5 (cluster GPU 29): failed")
    expect(page.page.locator("#twin-events li[data-category=xid-74]").first).to_be_visible()
    page.shot("twin")
    expect(viewer.locator("#twin-events li[data-category=xid-74]").first).to_be_visible()
    expect(viewer.locator("#twin-legend")).to_contain_text("failed: 1 node, 1 GPU")
    watcher.shot("twin")
    # A leaf switch takes the nodes below it out; a job-caused Xid names the job it stops.
    page.page.select_option("#twin-inject select[name=category]", "switch")
    page.page.fill("#twin-inject input[name=part]", "0")
    page.page.click("#twin-inject button[type=submit]")
    expect(page.page.locator("#twin-events li[data-category=switch]").first).to_contain_text("leaf 0")
    expect(page.page.locator("#twin-metrics")).to_contain_text("leaf switches down1")
    # The nodes under it are up but cut off: drawn and counted so, and out of service.
    state_url = twin_url.replace(page.base, "").replace("/twins/", "/api/twins/") + "state/"
    state = page.page.evaluate(f"fetch('{state_url}').then((r) => r.json())")
    cut_off = state["node_state"].count(state["state_names"].index("cut off (leaf switch down)"))
    assert cut_off > 0
    expect(page.page.locator("#twin-legend")).to_contain_text(f"cut off (leaf switch down): {cut_off:,} nodes")
    in_service = 100 * state["metrics"]["availability"]
    assert in_service < 100
    expect(page.page.locator("#twin-metrics")).to_contain_text("nodes in service")
    # The job's tile takes a row: its progress in a bold line, the rest in a plain one (not nine bold lines).
    job_tile = page.page.locator("#twin-metrics .tile.job")
    expect(job_tile.locator(".tile-detail")).to_contain_text("ETTR ")
    # Both boxes in one call: the twin redraws its tiles on every tick, and a tile measured between redraws has none.
    box, row = page.page.evaluate(
        "['#twin-metrics .tile.job', '#twin-metrics'].map((s) => document.querySelector(s).getBoundingClientRect())"
        ".map((r) => ({height: r.height, width: r.width}))"
    )
    assert 0 < box["height"] < 120 and box["width"] > row["width"] - 2, (box, row)
    # Each event names its category once (the strong label is the event's kind).
    label = page.page.evaluate("JSON.parse(document.getElementById('category-names').textContent)['xid-74']")
    assert page.page.locator("#twin-events li[data-category=xid-74]").first.inner_text().count(label) == 1
    page.page.select_option("#twin-inject select[name=category]", "xid-31")
    page.page.fill("#twin-inject input[name=job]", "0")
    page.page.click("#twin-inject button[type=submit]")
    expect(page.page.locator("#twin-events li[data-category=xid-31]").first).to_contain_text("in main")
    page.page.click("#twin-controls [data-action=pause]")
    expect(page.page.locator("#twin-status")).to_have_text("paused")
    # A node's kernel log, uploaded from the page: its Xid 79 fails the GPU on bus 07 of node 2.
    page.page.fill("#twin-log input[name=node]", "2")
    page.page.set_input_files("#twin-log input[name=file]", files=[{
        "name": "dmesg.txt", "mimeType": "text/plain",
        "buffer": b"[Mon Nov 30 10:42:07 2026] kernel: eth0 link up\n"
                  b"[Mon Nov 30 10:42:09 2026] NVRM: Xid (PCI:0000:07:00): 79, pid=4242, name=python3, "
                  b"GPU has fallen off the bus.\n"}])
    page.page.click("#twin-log button[type=submit]")
    expect(page.page.locator("#log-result")).to_contain_text("2 lines read: 1 Xid lines, 1 fault ingested")
    expect(page.page.locator("#twin-events li[data-category=xid-79]").first).to_be_visible()
    # journalctl -k in its default short layout gives no year: refused naming it, then taken with the year.
    journal = {"name": "journal.txt", "mimeType": "text/plain",
               "buffer": b"Dec 01 09:15:02 node-03 kernel: NVRM: Xid (PCI:0000:07:00): 79, pid=4242, name=python3, "
                         b"GPU has fallen off the bus.\n"}
    page.page.fill("#twin-log input[name=node]", "3")
    page.page.set_input_files("#twin-log input[name=file]", files=[journal])
    page.page.click("#twin-log button[type=submit]")
    expect(page.page.locator("#log-result")).to_contain_text("year")
    page.page.fill("#twin-log input[name=year]", "2026")
    page.page.set_input_files("#twin-log input[name=file]", files=[journal])
    page.page.click("#twin-log button[type=submit]")
    expect(page.page.locator("#log-result")).to_contain_text("1 lines read: 1 Xid lines, 1 fault ingested")
    # Every event as CSV, from the page's link.
    href = page.page.get_attribute("#events-csv", "href")
    csv_text = page.page.evaluate(f"fetch('{href}').then((r) => r.text())")
    assert csv_text.splitlines()[0].startswith("seq,") and "xid-79" in csv_text and "xid-74" in csv_text
    page.shot("twin-log")
    # The owner edits the GPU addresses Xid lines are mapped by, in the page (after the log above).
    buses = page.page.locator("#twin-buses input[name=pci_bus_ids]")
    buses.fill(", ".join(f"0000:{b}:00.0" for b in ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")))
    page.page.click("#twin-buses button[type=submit]")
    expect(page.page.locator("#buses-status")).to_have_text("Saved: Xid lines are mapped by these addresses.")

def _save_copy(page, preset: str, gpus: str, slug: str, name: str):
    """Save a copy of a preset (its builder preview showing ``gpus``) from the builder and open its page."""
    page.goto(f"/plans/new/?from={preset}")
    expect(page.page.locator("#preview-body .tiles")).to_contain_text(gpus)
    page.page.fill("#f-slug", slug)
    page.page.fill("#f-name", name)
    page.page.click("#save-plan")
    page.page.wait_for_url(re.compile(rf"/plans/{slug}/$"))


def _my_dgx_a100(page, slug: str, name: str):
    """Signed in, save a copy of the DGX-A100 preset from the builder and open its page."""
    page.login()
    _save_copy(page, "dgx-a100-3layer", "10,000", slug, name)


def test_a_measurement_uploads_shows_measured_against_predicted_and_overrides(page):
    _my_dgx_a100(page, "my-measured-dgx", "DGX-A100 with our own measurements")
    form = page.page.locator("#measurement-form")
    form.locator("select[name=kind]").select_option("gemm")
    form.locator("input[name=file]").set_input_files(str(DATA / "gemm_dgx_a100.csv"))
    form.locator("button[type=submit]").click()
    measurement = page.page.locator("#measurements article.measurement")
    expect(measurement).to_contain_text("16384 × 16384 × 16384")
    expect(measurement).to_contain_text("251.8")  # measured, beside the prediction
    expect(measurement).to_contain_text("262.5")
    expect(measurement).to_contain_text("Fitted gemm_fraction")
    measurement.get_by_role("button", name="Use as override").click()
    expect(page.page.locator("#measurements .badge.override")).to_be_visible()
    expect(page.page.locator("#plan-report .overrides")).to_contain_text("Overridden by measurement: gemm_fraction")
    form.locator("input[name=file]").set_input_files(str(DATA / "gemm_dgx_a100.csv"))
    form.locator("select[name=kind]").select_option("nccl-tests")
    form.locator("button[type=submit]").click()
    expect(page.page.locator("#measurement-errors")).to_contain_text("no result rows found")
    form.locator("input[name=file]").set_input_files(str(DATA / "nccl_all_reduce_dgx_a100_8gpu.txt"))
    form.locator("button[type=submit]").click()
    nccl = page.page.locator("#measurements article.measurement", has_text="all_reduce on 8 ranks")
    expect(nccl.locator("figure.measurement-chart svg.chart path")).to_have_count(2)  # measured and engine
    expect(nccl).to_contain_text("Fitted scaleup_fraction")
    page.shot("measurements")
    for width in (1024, 1440):  # the measurement chart's message-size ticks stay apart
        page.page.set_viewport_size({"width": width, "height": 900})
        found = page.page.evaluate(LAYOUT)
        assert not found["clipped"] + found["overlaps"], found
    page.goto("/validation/")
    expect(page.page.locator("#measurements figure.measurement-chart svg.chart")).to_be_visible()
    expect(page.page.locator("#measurements article.measurement")).to_have_count(2)
    page.shot("validation-measurements")
    page.goto("/catalog/compute-node-types/dgx-a100/")
    articles = page.page.locator("#measurements article.measurement")
    expect(articles).to_have_count(2)  # the plan's two, both of this node type
    form = page.page.locator("#measurement-form")
    form.locator("select[name=kind]").select_option("gemm")
    form.locator("input[name=file]").set_input_files(str(DATA / "gemm_dgx_a100.csv"))
    form.locator("input[name=name]").fill("our DGX-A100 GEMMs")
    form.locator("button[type=submit]").click()
    expect(articles).to_have_count(3)
    expect(articles.first).to_contain_text("our DGX-A100 GEMMs")
    page.shot("node-type-measurements")


def test_a_profiler_trace_uploads_beside_the_engine_and_its_calibration_overrides_the_plan(page, tmp_path):
    """A gzipped trace of one LLaMa-13B layer uploaded from the plan page with its workload and layers:
    each part traced beside the engine's prediction and the calibrated one; as an override, the plan's
    evaluation names it."""
    import gzip
    import json

    from tests.planner.test_trace_measurements import SLOW_STEP

    traced = tmp_path / "rank0.json.gz"
    traced.write_bytes(gzip.compress(json.dumps({"traceEvents": SLOW_STEP}).encode()))
    _my_dgx_a100(page, "my-traced-dgx", "DGX-A100 with our own trace")
    form = page.page.locator("#measurement-form")
    form.locator("select[name=kind]").select_option("trace")
    form.locator("input[name=file]").set_input_files(str(traced))
    form.locator("button[type=submit]").click()
    expect(page.page.locator("#measurement-errors")).to_contain_text("give the workload the trace ran")
    form.locator("select[name=workload]").select_option("llama-13b-512")
    form.locator("input[name=dense_layers]").fill("1")
    form.locator("button[type=submit]").click()
    # (the user's node-type measurements of the DGX-A100, from other tests, are listed beside it)
    measurement = page.page.locator("#measurements article.measurement", has_text="Profiler trace")
    expect(measurement.locator("tr[data-part=gemm]")).to_contain_text("40 ms")  # readable units (issue 70, item 12)
    expect(measurement).to_contain_text("Calibrated gemm_fraction")
    measurement.get_by_role("button", name="Use as override").click()
    expect(page.page.locator("#plan-report .overrides")).to_contain_text("gemm_fraction")
    expect(page.page.locator("#plan-report .overrides")).to_contain_text("hbm_fraction")
    page.shot("trace-measurement")
    # The trace as a run of the user's own, then a step time entered by hand: both join this plan's bands.
    measurement.get_by_role("button", name="Add to my runs").click()
    runs = page.page.locator("#runs tbody tr:not(.timers)")
    expect(runs).to_have_count(1)
    expect(runs.first).to_contain_text("Compute time of a trace's layers")
    form = page.page.locator("#run-form")
    form.locator("select[name=workload]").select_option("llama-13b-512")
    form.locator("input[name=measured_s]").fill("-4")
    form.locator("input[name=source]").fill("our cluster, job 4711")
    form.locator("button[type=submit]").click()
    expect(page.page.locator("#run-errors")).to_contain_text("measured_s")
    form.locator("input[name=measured_s]").fill("40")
    form.locator("button[type=submit]").click()
    expect(runs.filter(has_text="our cluster, job 4711")).to_have_count(1)
    # And the Megatron-LM log that printed a step time: its median interval, its timers beside the engine's.
    from tests.simcore.test_megatron import megatron_log

    logged = tmp_path / "train.log"
    logged.write_text(megatron_log())
    form.locator("select[name=workload]").select_option("llama-13b-512")
    form.locator("input[name=megatron_log_file]").set_input_files(str(logged))
    form.locator("button[type=submit]").click()
    expect(page.page.locator("#runs tr.timers li[data-timer=forward-backward]")).to_contain_text("14,351 ms")
    expect(runs.filter(has_text="Megatron-LM log: the median of 3")).to_have_count(1)
    page.page.locator("#plan-options select[name=workload]").select_option("llama-13b-512")
    expect(page.page.locator("#plan-report")).to_contain_text("and 3 of your own runs", timeout=30_000)
    page.shot("your-runs")
    page.goto("/validation/")
    expect(page.page.locator("#runs tbody tr:not(.timers)")).to_have_count(3)


def test_a_trace_too_large_for_its_request_is_read_on_a_worker_and_shown(page, tmp_path):
    """6,000 profiler steps (9 MB of JSON, 150 kB of gzip: over TRACE_INLINE_MAX_BYTES) uploaded from
    the plan page: the API answers 202, the page follows the read on the worker and shows the trace
    once stored; a second upload while one reads would answer 429 (tests/planner)."""
    import gzip
    import json

    from tests.planner.test_trace_measurements import SLOW_STEP

    events = [{**event, "ts": event["ts"] + step * 100_000} for step in range(6_000) for event in SLOW_STEP]
    traced = tmp_path / "six-thousand-steps.json.gz"
    traced.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    _my_dgx_a100(page, "my-long-traced-dgx", "DGX-A100 with a long trace")
    form = page.page.locator("#measurement-form")
    form.locator("select[name=kind]").select_option("trace")
    form.locator("input[name=file]").set_input_files(str(traced))
    form.locator("select[name=workload]").select_option("llama-13b-512")
    form.locator("input[name=dense_layers]").fill("1")
    with page.page.expect_response(lambda response: response.url.endswith("/api/measurements/")) as posted:
        form.locator("button[type=submit]").click()
    assert posted.value.status == 202
    measurement = page.page.locator("#measurements article.measurement", has_text="six-thousand-steps.json.gz")
    expect(measurement.locator("tr[data-part=gemm]")).to_contain_text("4.0 min")  # 6,000 x 40 ms


def test_a_traces_calibration_carried_to_another_build_shows_both_figures_and_its_band(page, tmp_path):
    """A trace of two ranks on the user's DGX-A100 plan, carried from its page to their A100 PCIe build:
    that build's report uses the trace's shares, names them as carried, and shows its step time beside
    the family's with the band over the trace's ranks; "Stop carrying" puts the family's back."""
    import gzip
    import json

    from tests.planner.test_carried_calibration import TWO_RANKS

    traced = tmp_path / "ranks.json.gz"
    traced.write_bytes(gzip.compress(json.dumps({"traceEvents": TWO_RANKS}).encode()))
    page.login()
    _save_copy(page, "ff2-pcie-2zone", "9,920", "my-next-pcie", "The A100 PCIe build we might buy")
    _my_dgx_a100(page, "my-carrying-dgx", "DGX-A100 traced")
    form = page.page.locator("#measurement-form")
    form.locator("select[name=kind]").select_option("trace")
    form.locator("input[name=file]").set_input_files(str(traced))
    form.locator("select[name=workload]").select_option("llama-13b-512")
    form.locator("input[name=dense_layers]").fill("1")
    form.locator("button[type=submit]").click()
    measurement = page.page.locator("#measurements article.measurement", has_text="ranks.json.gz")
    measurement.locator("select[data-carry-plan]").select_option("my-next-pcie")
    measurement.get_by_role("button", name="Carry the calibration").click()
    page.page.wait_for_url(re.compile(r"/plans/my-next-pcie/$"))
    expect(page.page.locator("#carried li")).to_contain_text("From the trace ranks.json.gz on dgx-a100")
    page.page.locator("#plan-options select[name=workload]").select_option("llama-13b-512")
    note = page.page.locator("#carried-note")
    expect(note).to_contain_text("over the trace's ranks", timeout=30_000)
    expect(note).to_contain_text("on the family's own constants")
    carried_s, family_s = (page.page.locator(f"#carried-note .{name}").inner_text() for name in ("carried-step",
                                                                                                  "family-step"))
    assert carried_s != family_s
    expect(page.page.locator("#plan-report .overrides")).to_contain_text("carried from dgx-a100")
    expect(page.page.locator("#plan-report .tiles [data-path=\"training.step_time_s\"] dd")).to_contain_text(carried_s)
    page.shot("carried-calibration")
    for width in (1024, 1440):  # the note, the carried list and the runs form stay inside the page
        page.page.set_viewport_size({"width": width, "height": 900})
        found = page.page.evaluate(LAYOUT)
        assert not found["clipped"] + found["overlaps"], found
    page.page.get_by_role("button", name="Stop carrying").click()
    page.page.locator("#plan-options select[name=workload]").select_option("llama-13b-512")
    expect(page.page.locator("#plan-report .tiles")).to_be_visible(timeout=30_000)
    expect(page.page.locator("#carried-note")).to_have_count(0)


def test_a_site_plan_from_the_form_ranks_the_builds_and_charts_them(page):
    """The site form with a bad figure says which field; corrected, it runs on the worker, the page
    follows it live and, done, shows the ranked builds (what binds each, each time's band) and the
    chart of each build's best point."""
    page.login()
    page.goto("/sweeps/")
    page.page.click("#site-new-link")
    for box in page.page.locator("input[name=builds]").all():
        if box.get_attribute("value") not in ("llama3-h100-16k", "dgx-h200-1024", "gb200-nvl72-1152"):
            box.uncheck()
    page.page.fill("#site-power", "-3")
    page.page.fill("#site-floor", "0")
    page.page.click("#site-form button[type=submit]")
    placed = page.page.locator("#site-form .placed-error")  # every bad field at once, beside it, by its label
    expect(placed).to_have_count(2)
    expect(placed.first).to_contain_text("Facility power (MW): ")
    expect(placed.nth(1)).to_contain_text("Floor (racks): ")
    expect(page.page.locator("#site-power")).to_have_attribute("aria-invalid", "true")
    expect(page.page.locator("#site-power")).to_be_focused()
    expect(page.page.locator("#site-errors")).to_contain_text("fix the marked fields")
    page.shot("site-form-errors")
    page.page.fill("#site-power", "20")
    page.page.fill("#site-floor", "400")
    page.page.fill("#site-deadline", (datetime.date.today() + datetime.timedelta(days=120)).isoformat())
    page.shot("site-form")
    page.page.click("#site-form button[type=submit]")
    page.page.wait_for_url(re.compile(r"/sweeps/\d+/$"))
    expect(page.page.locator("#site-ranking")).to_be_visible(timeout=90_000)
    expect(page.page.locator("#site-ranking tbody tr")).to_have_count(3 * 2 * 2)
    # Owned and rented builds rank side by side: every part priced, estimates with their band.
    ranked = page.page.locator("#site-ranking tbody tr:not(.fail) th")
    expect(ranked.filter(has_text="owned").first).to_be_visible()
    expect(ranked.filter(has_text="rented").first).to_be_visible()
    expect(page.page.locator("#site-ranking tbody tr:not(.fail)").filter(has_text="owned").first).to_contain_text(
        "build ")
    expect(page.page.locator("#site-ranking")).not_to_contain_text("no valid point meets the prices limit")
    expect(page.page.locator("#site-bands")).to_contain_text("published dense transformer training runs on hopper")
    expect(page.page.locator("#site-chart svg.chart rect.front").first).to_be_visible()
    expect(page.page.locator("#site-chart svg.chart")).to_contain_text("cost (USD)")
    # Issue 70, item 10: the best-points chart draws the deadline and names each build in its legend.
    expect(page.page.locator("#site-chart svg.chart line.limit")).to_have_count(1)
    expect(page.page.locator("#site-chart svg.chart")).to_contain_text("deadline, 120 days")
    expect(page.page.locator("#site-chart ul.legend")).to_contain_text("build = GB200 NVL72")
    # A row leads to its build as the site sized it: a new plan of its node count on the site's book and hall.
    first_build = page.page.locator("#site-ranking tbody tr th a").first
    expect(first_build).to_have_attribute("href", re.compile(
        r"^/plans/new/\?from=[\w-]+&node_count=\d+&price_book=usd-2026&hall=[\w-]+(&rack_power_limit_w=\d+)?$"))
    nodes = re.search(r"node_count=(\d+)", first_build.get_attribute("href")).group(1)
    # The sweep's own chart answers the site's question: time to train against buying and running, on log
    # scales (days and costs over decades), every choice named in words.
    controls = page.page.locator("#chart-controls")
    expect(controls.locator("select[name=x]")).to_have_value("training.time_to_train_days")
    expect(controls.locator("select[name=y]")).to_have_value("training.buy_and_run_cost")
    expect(controls.locator("input[name=xlog]")).to_be_checked()
    expect(controls.locator("input[name=ylog]")).to_be_checked()
    options = controls.locator("select[name=c] option").all_inner_texts()
    assert "racks in all (compute, scale-up network and switch racks) (racks)" in options
    assert not [o for o in options if o.endswith("()") or "racks.total_count" in o], options
    page.shot("site-plan")
    first_build.click()
    page.page.wait_for_url(re.compile(r"/plans/new/"))
    expect(page.page.locator("[name=node_count]")).to_have_value(nodes)


def test_a_site_plan_over_the_default_builds_weighs_the_generation_bought_now(page):
    """The site form offers every shared preset, the generation bought in late 2026 among them; planned
    over all of them, the ranking carries GB300 NVL72, HGX B300, MI355X and Vera Rubin, the announced
    one badged as such, and its plan page says which of its parts are only announced."""
    page.login()
    page.goto("/sites/new/")
    current = ("gb300-nvl72-1152", "dgx-b300-1152", "mi355x-1152", "vera-rubin-nvl144-1152")
    for slug in current:
        expect(page.page.locator(f"input[name=builds][value={slug}]")).to_be_checked()
    page.page.click("#site-form button[type=submit]")
    page.page.wait_for_url(re.compile(r"/sweeps/\d+/$"))
    expect(page.page.locator("#site-ranking")).to_be_visible(timeout=120_000)
    rows = page.page.locator("#site-ranking tbody tr")
    for slug in current:
        expect(rows.filter(has=page.page.locator(f"th a[href^='/plans/new/?from={slug}&']")).first).to_be_visible()
    rubin = rows.filter(has=page.page.locator("th a[href^='/plans/new/?from=vera-rubin-nvl144-1152&']"))
    expect(rubin.locator(".badge-announced")).to_have_count(rubin.count())
    expect(rows.filter(has=page.page.locator("th a[href^='/plans/new/?from=gb300-nvl72-1152&']")).locator(
        ".badge-announced")).to_have_count(0)
    page.shot("site-current-generation")
    page.goto("/plans/vera-rubin-nvl144-1152/?workload=llama3-70b-class-1152")
    expect(page.page.locator("#announced-note")).to_contain_text("Announced, not shipping")
    expect(page.page.locator("#announced-note")).to_contain_text("NVIDIA Rubin GPU")
    assert ",compute node" not in page.page.locator("#announced-note").inner_text()  # issue 70, item 13
    page.shot("plan-announced")


def _site_ranking_at(page, confidence: str) -> list[tuple[str, float]]:
    """Plan the form's default site over three builds at a confidence; each ranked row's build and
    its chance of meeting the deadline (percent)."""
    page.goto("/sites/new/")
    for box in page.page.locator("input[name=builds]").all():
        if box.get_attribute("value") not in ("llama3-h100-16k", "dgx-h200-1024", "gb200-nvl72-1152"):
            box.uncheck()
    page.page.select_option("#site-confidence", confidence)
    page.page.click("#site-form button[type=submit]")
    page.page.wait_for_url(re.compile(r"/sweeps/\d+/$"))
    expect(page.page.locator("#site-ranking")).to_be_visible(timeout=90_000)
    rows = page.page.locator("#site-ranking tbody tr:not(.fail)")
    return [(row.locator("th").inner_text(), float(row.locator(".chance").inner_text().split("%")[0]))
            for row in rows.all()]


def test_a_site_planned_at_95_percent_confidence_ranks_as_the_bands_say(page):
    """The same site at 50% and at 95% confidence: at 95% every ranked build has at least a 95% chance
    of meeting the deadline (the share of its band under it), at 50% some have less, and the
    rankings differ."""
    page.login()
    middle = _site_ranking_at(page, "0.5")
    expect(page.page.locator("main")).to_contain_text("planned at 50% confidence")
    page.shot("site-plan-50")
    safe = _site_ranking_at(page, "0.95")
    expect(page.page.locator("main")).to_contain_text("planned at 95% confidence")
    page.shot("site-plan-95")
    assert middle and safe and all(chance >= 50 for _, chance in middle)
    assert all(chance >= 95 for _, chance in safe) and any(chance < 95 for _, chance in middle)
    assert [name for name, _ in middle] != [name for name, _ in safe]
    bars = page.page.locator("#site-chart line.error-bar")  # each build's time band, and owned, its price band
    expect(bars.first).to_be_attached()
    assert bars.count() > len(safe)
    page.page.uncheck("#site-chart-bands")
    expect(bars).to_have_count(0)


def test_a_job_that_cannot_run_on_a_build_leaves_the_builds_own_report(page):
    """1,152 GPUs of Llama-3-70B-class on the 1,024-GPU DGX H200 plan: the page says why the job
    cannot run and still shows the build's bill, its total and its power."""
    page.login()
    page.goto("/plans/dgx-h200-1024/?workload=llama3-70b-class-1152")
    notice = page.page.locator("#job-infeasible")
    expect(notice).to_contain_text("cannot run on this build")
    expect(notice).to_contain_text("workload 'llama3-70b-class-1152'")
    expect(page.page.locator("#bom-total")).not_to_have_text("not priced")
    expect(page.page.locator("#bom tbody tr").first).to_be_visible()
    expect(page.page.locator(".tile[data-path='power.facility_w']")).to_be_visible()
    expect(page.page.locator(".tile[data-path='training.step_time_s']")).to_have_count(0)
    page.shot("job-cannot-run")


def test_the_workload_editor_previews_on_a_plan_that_holds_the_job_and_says_why_one_cannot(page):
    """A 1,152-GPU workload previews first on the smallest plan that holds it (not the last plan made);
    on a plan too small, the preview says why instead of asking to fix fields none of which is wrong."""
    page.login()
    page.goto("/workloads/new/?from=llama3-70b-class-1152")
    plan = page.page.locator("#f-plan").input_value()
    assert plan in ("dgx-b300-1152", "gb200-nvl72-1152", "gb300-nvl72-1152", "hgx-b200-1152", "mi355x-1152",
                    "vera-rubin-nvl144-1152"), plan  # 1,152 GPUs: the smallest that hold it
    expect(page.page.locator("#preview-body #step-breakdown")).to_be_visible()
    page.page.select_option("#f-plan", "dgx-h200-1024")
    body = page.page.locator("#preview-body")
    expect(body).to_contain_text("No evaluation: ")
    expect(body).not_to_contain_text("Fix the highlighted fields")


def test_a_missing_figure_says_why(page):
    """A copy of the DGX H200 preset without its storage system checkpoints asynchronously and names no
    storage write bandwidth: the optimal interval, which must outlast the write, is "unknown" with that
    reason beside Young's and Daly's (every preset names its storage since issue 70, item 5)."""
    page.login()
    _api(page, "POST", "/api/plans/dgx-h200-1024/clone/", {"slug": "h200-unstored"})
    _api(page, "PATCH", "/api/plans/h200-unstored/", {"external_storage_write_gbyte_s": None})
    page.goto("/plans/h200-unstored/?workload=llama-13b-512")
    row = page.page.locator("tr", has_text="optimal checkpoint interval")
    expect(row).to_contain_text("unknown")
    expect(row).to_contain_text("whose time is unknown")
    expect(row).to_contain_text("Young ")
    trained = page.page.locator("tr", has_text="time to train").first  # unknown, with why and the failure-free time
    expect(trained).to_contain_text("unknown")
    expect(trained).to_contain_text("its ETTR is unknown")
    expect(trained).to_contain_text("failure-free ")
    page.goto("/plans/llama3-h100-16k/?workload=llama3-405b-like")  # known: with the step time's band
    expect(page.page.locator("tr", has_text="time to train").first).to_contain_text("(the step time's band)")


def test_a_headline_outside_its_own_band_is_flagged_not_shown_bare(page):
    """VGG16 on the Fire-Flyer plan: every published Ampere CNN run (Fire-Flyer's own) came in slower than
    the engine predicts, so the step time and MFU tiles carry the range runs like it came in at."""
    page.login()
    page.goto("/plans/ff2-pcie-2zone/?workload=vgg16-512")
    step = page.page.locator(".tile[data-path='training.step_time_s']")
    expect(step).to_have_class(re.compile(r"\bwarn\b"))
    expect(step).to_contain_text("outside its band: runs like it came in at")
    expect(page.page.locator(".tile[data-path='training.mfu']")).to_have_class(re.compile(r"\bwarn\b"))
    expect(page.page.locator(".tile[data-path='power.facility_w']")).not_to_have_class(re.compile(r"\bwarn\b"))
    expect(page.page.locator("#error-bands")).to_contain_text("itself lies outside that range")
    page.shot("headline-outside-band")

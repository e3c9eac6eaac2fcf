"""Server-rendered pages: what they show, read through Django's test client (the browser flows
are in tests/e2e)."""
import html
import re

import pytest

from frontend.templatetags.figures import figure, ratio, short_money
from planner.models import ClusterPlan, PriceItem


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_fire_flyer_comparison_lines_up_switches_and_prices(catalog, signed_in):
    response = signed_in.get("/compare/?ids=dgx-a100-3layer,ff2-pcie-2zone,ff2-pcie-3layer")
    assert response.status_code == 200
    row = re.search(r'data-metric="switches">(.*?)</tr>', response.content.decode(), re.S).group(1)
    cells = [re.sub(r"<[^>]+>", "", c).split()[0] for c in re.findall(r'<td class="num">(.*?)</td>', row, re.S)]
    assert cells == ["1,320", "122", "200"]  # FF Table III and the three-layer variant
    assert "×0.0924" in row  # 122 / 1,320
    power = re.search(r'data-metric="facility_power_w">(.*?)</tr>', response.content.decode(), re.S).group(1)
    cells = re.findall(r'<td class="num">(.*?)</td>', power, re.S)
    assert "(W)" not in power and len(cells) == 3 and all(re.search(r"\d MW", c) for c in cells)  # MW, not watts


def test_compare_accepts_picked_plans_and_reports_bad_choices(catalog, signed_in):
    picked = signed_in.get("/compare/?pick=ff2-pcie-2zone&pick=ff2-pcie-3layer&workload=llama-13b-512")
    assert 'data-metric="step_time_s"' in picked.content.decode()
    one = text(signed_in.get("/compare/?ids=ff2-pcie-2zone"))
    assert "choose 2 to 4 different plans" in one
    unknown = text(signed_in.get("/compare/?ids=ff2-pcie-2zone,ff2-pcie-3layer&workload=nope"))
    assert "no workload 'nope' is visible to you" in unknown.replace("&#x27;", "'")


def test_catalogue_filters_and_entry_shows_every_field_with_its_source(catalog, signed_in):
    page = text(signed_in.get("/catalog/?table=switches&vendor=nvidia+(mellanox)"))
    assert "1 entry." in page and "QM8700" in page and "QM9700" not in page
    entry = signed_in.get("/catalog/switches/qm8700/")
    body = text(entry)
    assert "radix 40" in body and "port_speed_gbit_s 200" in body and "Source:" in body
    assert signed_in.get("/catalog/nope/qm8700/").status_code == 404
    assert signed_in.get("/catalog/switches/nope/").status_code == 404


@pytest.mark.parametrize("query", ["q=RoCE", "q=ndr&vendor=nvidia", "confidence=secondary"])
def test_the_catalogue_page_and_the_api_filter_alike(catalog, signed_in, query):
    page = signed_in.get(f"/catalog/?table=nics&{query}").content.decode()
    shown = set(re.findall(r'href="/catalog/nics/([^/"]+)/"', page))
    listed = {row["slug"] for row in signed_in.get(f"/api/catalog/nics/?{query}&page_size=500").json()["results"]}
    assert shown == listed and listed  # not two empty lists


def test_validation_page_shows_every_reference_case(catalog, signed_in):
    from simcore.tools.references import CASES

    body = signed_in.get("/validation/").content.decode()
    assert body.count('<tr class="pass">') + body.count('<tr class="fail">') == len(CASES)
    assert f"of {len(CASES)} cases meet their criterion" in body


def test_validation_page_shows_how_each_band_is_made(catalog, signed_in):
    from simcore.tools.references import error_bands, held_back_coverage, validate

    rows, _ = validate()
    page = text(signed_in.get("/validation/"))
    for group, band in error_bands(rows).items():
        low, high = (f"{'+' if e >= 0 else '−'}{abs(e):.1%}" for e in (band["low"], band["high"]))
        assert f"{group} {band['cases']} {low} {high}" in page, group
    for check in held_back_coverage(rows):
        assert f"{check['group']} {check['fallback']} " in page and f"{check['inside']} of {check['cases']}" in page


def test_reliability_page_and_api_list_every_profile_with_its_sources(catalog, signed_in):
    from simcore.formulas.reliability import FF_XID_COUNTS, LLAMA3_TABLE5, RESTART_PROFILES

    body = text(signed_in.get("/reliability/"))
    for profile in ("fire-flyer", "llama3", "per-node-rate", *RESTART_PROFILES):
        assert profile in body
    assert "Xid 79: GPU has fallen off the bus" in body and "1,836" in body and "MegaScale" in body
    profiles = signed_in.get("/api/reliability-profiles/").json()
    rows = {p["key"]: p["categories"] for p in profiles["failure_profiles"]}
    assert len(rows["fire-flyer"]) == len(FF_XID_COUNTS) + 3 and len(rows["llama3"]) == len(LLAMA3_TABLE5)
    assert rows["per-node-rate"][0]["per_1000_unit_days"] == 6.5
    assert all(c["source"] for categories in rows.values() for c in categories)
    assert [p["key"] for p in profiles["restart_profiles"]] == list(RESTART_PROFILES)


def test_builder_offers_the_catalogue_and_starts_from_a_plan(catalog, signed_in):
    body = signed_in.get("/plans/new/?from=ff2-pcie-2zone").content.decode()
    assert '<option value="qm8700">' in body and '<option value="ff-pcie-a100">' in body
    initial = re.search(r'<script id="initial-plan" type="application/json">(.*?)</script>', body, re.S).group(1)
    assert '"node_count": 1240' in initial and '"slug": ""' in initial


def test_figures_read_as_their_units():
    assert figure(1320.0) == "1,320"
    assert figure(11519.9) == "11,520"
    assert figure(0.4640501, "fraction") == "46.4%"
    assert figure(9.233174) == "9.233"
    assert figure(None) == "–" and figure(float("nan")) == "–"
    assert ratio(122 / 1320) == "×0.0924" and ratio(None) == "–"


def test_the_comparison_buttons_open_the_blackwell_and_supernode_comparisons(catalog, signed_in):
    page = signed_in.get("/compare/").content.decode()
    for ids in ("hgx-b200-1152,gb200-nvl72-1152", "ascend-910b-single-rail,cloudmatrix384-x26"):
        assert f"?ids={ids}&amp;workload=deepseek-v3-class-1024" in page
    body = signed_in.get("/compare/?ids=ascend-910b-single-rail,cloudmatrix384-x26&workload=deepseek-v3-class-1024")
    text_ = body.content.decode()
    assert 'data-placement="ep"' in text_ and "scale-up" in text_ and 'data-metric="scaleup_domain_gpus"' in text_


def test_a_comparison_with_an_incomplete_bill_says_it_is_not_comparable_on_cost(catalog, signed_in):
    PriceItem.objects.filter(price_book__slug="fire-flyer-relative", part_kind="storage-node").delete()
    page = text(signed_in.get("/compare/?ids=dgx-a100-3layer,ff2-pcie-2zone"))
    assert "Not comparable on cost: a bill has parts without a price" in page
    assert "ff2-pcie-2zone : no price for storage_nodes" in page and "dgx-a100-3layer :" not in page


def test_staff_see_an_admin_link_and_others_do_not(db, client, user, django_user_model):
    client.force_login(user)
    assert 'id="admin-link"' not in client.get("/").content.decode()
    staff = django_user_model.objects.create_user("staff-member", password="pw-staff-1234", is_staff=True)
    client.force_login(staff)
    assert 'href="/admin/" id="admin-link"' in client.get("/").content.decode()


def test_catalogue_lists_key_specs_with_units_and_entries_show_names_and_money(catalog, signed_in):
    page = signed_in.get("/catalog/?table=accelerators").content.decode()
    assert "Peak FP16 (TFLOPS)" in page and "TDP (W)" in page and "Memory bandwidth (GB/s)" in page
    a100 = text(signed_in.get("/catalog/accelerators/a100-pcie-40gb/"))
    assert "TDP tdp_w 250 W" in a100 and "Peak FP16 peak_fp16_tflops 312 TFLOPS" in a100
    book = text(signed_in.get("/catalog/price-books/usd-2026/"))
    assert "379,273 USD" in book and "379273.0000" not in book
    assert "2024-12-17" in book  # the listing's date, and its link
    assert 'href="https://web.archive.org/web/20241217210350/' in signed_in.get(
        "/catalog/price-books/usd-2026/").content.decode()
    assert "NVIDIA DGX B200 (HGX B200 board) (compute node type)" in book
    assert "Energy price energy_price_per_kwh 0.08 USD per kWh" in book


def test_the_workload_preview_starts_on_a_plan_that_holds_it(catalog, signed_in, user):
    def previewed(path):
        return re.search(r'<option value="([^"]+)" selected>', signed_in.get(path).content.decode()).group(1)

    assert previewed("/workloads/new/") == "ff2-pcie-2zone"  # nothing to size by: the Fire-Flyer 2 preset
    from planner.models import ClusterPlan, Workload
    gpus = Workload.objects.get(slug="llama3-70b-class-1152").gpus
    chosen = ClusterPlan.objects.get(slug=previewed("/workloads/new/?from=llama3-70b-class-1152"))
    smaller = [p for p in ClusterPlan.objects.filter(owner=None) if gpus <= p.gpu_count < chosen.gpu_count]
    assert chosen.gpu_count >= gpus and not smaller
    assert previewed("/workloads/new/?plan=gb200-nvl72-1152") == "gb200-nvl72-1152"
    signed_in.post("/api/plans/ff2-pcie-3layer/clone/", {"slug": "mine", "name": "Mine"},
                   content_type="application/json")
    # Your own plan, made last, is 10,000 GPUs: a 1,152-GPU job still starts on the smallest that holds it;
    # a workload with no GPU count starts on your most recent plan.
    assert previewed("/workloads/new/?from=llama3-70b-class-1152") == chosen.slug
    assert previewed("/workloads/new/") == "mine"


def test_the_plan_list_counts_gpus_and_nodes_with_thousands_separators(catalog, signed_in):
    page = signed_in.get("/plans/").content.decode()
    assert '<th scope="col">GPUs</th>' in page
    assert '<td class="num">9,984</td><td class="num">1,248</td>' in page  # 26 CloudMatrix 384 supernodes
    assert '<td class="num">1248</td>' not in page


def test_compare_with_offers_the_nearest_sibling_first(catalog, signed_in):
    def first_choice(slug):
        page = signed_in.get(f"/plans/{slug}/").content.decode()
        return re.search(r'<select name="with"><option value="([^"]+)"', page).group(1)

    assert first_choice("gb200-nvl72-1152") == "hgx-b200-1152"  # Blackwell, 1,152 GPUs each
    assert first_choice("gb300-nvl72-1152") == "dgx-b300-1152"  # and Blackwell Ultra's 288 GB beside its own
    assert first_choice("ff2-pcie-2zone") == "ff2-pcie-3layer"


def test_the_comparison_page_lists_each_plans_error_bands(catalog, signed_in):
    from simcore.tools.references import error_bands, validate

    cases = error_bands(validate()[0])["step_time:ampere:dense:3d"]["cases"]
    page = text(signed_in.get("/compare/", {"ids": "ff2-pcie-2zone,ascend-910b-single-rail",
                                           "workload": "llama-13b-512"}))
    bands = page[page.index("Error bands Where published runs like each prediction came in"):]
    ff, ascend = bands.split("Ascend", 1) if "Ascend" in bands else (bands, "")
    assert f"training step: on {cases} published dense transformer training runs on ampere GPUs" in ff
    assert "Outside everything validated: on " in ascend


def test_a_site_plan_shows_its_ranked_builds_with_what_binds_them(catalog, signed_in, eager_celery):
    """The form offers the shared builds, the workloads and their tokens; the finished plan's
    page lists every build best first, with its layout, its time and that time's band, its cost and
    what binds it, and the chart's data."""
    form = text(signed_in.get("/sites/new/"))
    assert "Plan from a site" in form and "GB200 NVL72, 1,152 GPUs" in form and "Llama-3-70B-class" in form
    assert "Tokens to train (empty: the workload's own)" in form
    from tests.planner.test_sites import SITE

    response = signed_in.post("/api/sweeps/site/", SITE, content_type="application/json")
    sweep = response.json()
    page = signed_in.get(f"/sweeps/{sweep['id']}/")
    body = text(page)
    first = sweep["site_result"]["builds"][0]
    band = first["time_band"]
    assert "A 20.0 MW site of 400 racks of at most 130 kW each, liquid cooled, in a hall of class hyperscale" in body
    marked = "" if band["headline_inside"] else "outside its band "  # its figure outside the band it is read with
    assert (f"1 {first['name']} : {first['layers']} layers, {first['ownership']} Pareto {first['gpus']:,.0f} "
            f"({first['node_count']:,.0f}) {first['tp']} × {first['pp']} × {first['dp']} "
            f"{first['time_to_train_days']:.1f} {marked}{band['days_low']:.1f} to {band['days_high']:.1f} ") in body
    outside = "" if band["validated"] else "outside everything validated: "
    assert (f"{first['family']}: {outside}on {band['cases']} {band['basis']} the step time was predicted "
            f"{band['low_error']:+.1%} to {band['high_error']:+.1%} off") in body
    assert "deadline : the points that would do better break the deadline limit" in body
    # Rubin, not on sale, has no rate to rent it at.
    assert "priced : the book has no on-demand GPU-hour rate for its GPU: renting it is unpriced" in body
    owned = next(row for row in sweep["site_result"]["builds"] if row["ownership"] == "owned" and row["point"])
    rented = next(row for row in sweep["site_result"]["builds"] if row["ownership"] == "rented" and row["point"])
    assert short_money(owned["cost"]) in body  # "52.5 M", never a raw 52,512,345 (issue 70, item 10)
    rent = rented["rent"]  # the rate, its term, provider and date (issue 70, item 3)
    assert (f"{rent['rate']:g} USD a GPU-hour on demand{' (estimate)' if rent['estimate'] else ''}, "
            f"{rent['provider']}, {rent['price_date']}") in html.unescape(body)
    assert "at its GPU's on-demand rate, every build on the same term" in body
    assert 'id="site-builds"' in page.content.decode()


def test_a_quote_from_a_bill_never_edits_the_shared_book(catalog, client, editor):
    """Even a catalogue editor, following "add your quote" from a preset's bill, gets no form that would
    change the shared book for everyone: the page offers to start their own plan, whose quotes go to
    their own copy. Their own plan's quote form posts to the plan."""
    client.force_login(editor)
    page = client.get("/catalog/price-books/usd-2026/?plan=llama3-h100-16k&part=switch:qm9700").content.decode()
    assert 'id="quote-form"' not in page and "Change a price in this shared book" not in page
    assert 'href="/plans/new/?from=llama3-h100-16k"' in page
    mine = ClusterPlan.objects.get(slug="llama3-h100-16k")
    mine.pk, mine.slug, mine.owner, mine.visibility = None, "editors-h100", editor, "private"
    mine.save()
    page = client.get("/catalog/price-books/usd-2026/?plan=editors-h100&part=switch:qm9700").content.decode()
    assert 'data-plan="editors-h100"' in page and "the shared book does not change" in page
    assert '<option value="switch:qm9700" selected>' in page
    plain = client.get("/catalog/price-books/usd-2026/").content.decode()  # the catalogue page itself
    assert "Change a price in this shared book" in plain


def test_a_sweep_around_a_plan_keeps_its_workload_and_sweeps_sizes_it_can_build(catalog, signed_in, eager_celery):
    """From the GB200 NVL72 plan's page with the 1,152-GPU workload: the workload is chosen, and the job
    grows with the cluster (issue 70, item 11: sweeping node counts under a fixed 1,152-GPU job gave nine
    points and one time): nine data-parallel degrees around its own 36, each a whole number of its
    batch's micro-batches a rank, each point valid and each a different time. Without a workload, node
    counts in whole NVL72 racks (18 trays) up to what the fabric holds."""
    page = signed_in.get("/sweeps/?plan=gb200-nvl72-1152&workload=llama3-70b-class-1152").content.decode()
    assert '<option value="llama3-70b-class-1152" selected>' in page
    path = re.search(r'name="axis-path" list="axis-paths" value="([^"]+)"', page).group(1)
    values = re.search(r'name="axis-values" value="([^"]+)"', page).group(1)
    assert path == "job.data_parallel" and values == "9, 12, 16, 18, 24, 32, 36, 48, 64"  # 64: the fabric's most
    sweep = signed_in.post("/api/sweeps/", {"plan": "gb200-nvl72-1152", "workload": "llama3-70b-class-1152",
                                            "axes": {path: [int(v) for v in values.split(", ")]}},
                           content_type="application/json").json()
    rows = signed_in.get(f"/api/sweeps/{sweep['id']}/results/", {"page_size": 50}).json()["results"]
    assert len(rows) == 9 and all(row["valid"] for row in rows)
    assert len({row["outputs"]["training.step_time_s"] for row in rows}) == 9  # the job moves with the axis
    assert [row["outputs"]["cluster.gpus"] for row in rows] == [32 * int(v) for v in values.split(", ")]
    bare = signed_in.get("/sweeps/?plan=gb200-nvl72-1152").content.decode()
    assert re.search(r'name="axis-values" value="([^"]+)"', bare).group(1) == "144..432 step 36"


def test_a_twin_page_says_what_its_job_is(catalog, signed_in):
    """A twin's page states each job: a workload's, sized by the engine, or the default year of work,
    named as such; the new-twin form offers the workload."""
    assert '<select id="t-workload" name="workload">' in signed_in.get("/twins/").content.decode()
    trained = signed_in.post("/api/twins/", {"plan": "dgx-h200-1024", "workload": "llama-13b-512", "tokens": 2e12},
                             content_type="application/json").json()
    page = text(signed_in.get(f"/twins/{trained['id']}/"))
    days = trained["jobs"][0]["work_s"] / 86400
    assert f"Job 0, llama-13b-512: 64 nodes, {days:.1f} days of work (failure-free)" in page
    assert "the default job" not in page
    plain = signed_in.post("/api/twins/", {"plan": "dgx-h200-1024"}, content_type="application/json").json()
    assert "365.0 days of work (failure-free)" in text(signed_in.get(f"/twins/{plain['id']}/"))
    assert "(the default job: a year's work on all but the spare nodes, no workload" in text(
        signed_in.get(f"/twins/{plain['id']}/"))


def test_the_comparison_offers_the_generation_bought_now_and_names_announced_parts(catalog, signed_in):
    page = signed_in.get("/compare/").content.decode()
    assert "?ids=gb300-nvl72-1152,dgx-b300-1152,mi355x-1152&amp;workload=llama3-70b-class-1152" in page
    assert "1,152 GPUs each" in page and "about 10,000 NPUs each" in page  # like sizes (issue 70, item 13)
    shown = signed_in.get("/compare/", {"ids": "gb300-nvl72-1152,vera-rubin-nvl144-1152"}).content.decode()
    note = shown[shown.index('id="announced-parts"'):]
    note = note[:note.index("</div>")]
    assert "<code>vera-rubin-nvl144-1152</code>" in note and "accelerator NVIDIA Rubin GPU" in note
    assert "gb300-nvl72-1152" not in note


def test_your_runs_show_on_your_plan_and_the_validation_page_and_nowhere_else(catalog, signed_in, user,
                                                                             django_user_model):
    from planner.models import Workload
    from planner.services.runs import run_create

    mine = ClusterPlan.objects.get(slug="dgx-a100-3layer")
    mine.pk, mine.slug, mine.owner, mine.visibility = None, "mine", user, "private"
    mine.save()
    workload = Workload.objects.get(slug="llama-13b-512")
    from tests.simcore.test_megatron import megatron_log

    run_create(owner=user, plan=mine, workload=workload, measured_s=20.0, source="our cluster, job 12", name="job 12")
    run_create(owner=user, plan=mine, workload=workload, megatron_log=megatron_log(), name="job 13")
    plan_page = text(signed_in.get("/plans/mine/"))
    assert "Your runs" in plan_page and "job 12" in plan_page and "our cluster, job 12" in plan_page
    assert "forward-backward 14,351 ms against the engine's" in plan_page and "Megatron-LM log: the median" in plan_page
    assert "dense transformer training on ampere GPUs" in plan_page and "Add the run" in plan_page
    assert "step_time:ampere:dense" not in plan_page  # the band in words, not by its key (issue 70, item 12)
    workload_page = signed_in.get("/plans/mine/?workload=llama-13b-512").content.decode()
    assert '<option value="llama-13b-512" selected>' in workload_page  # the run form takes the page's workload
    assert "job 12" not in text(signed_in.get("/plans/dgx-a100-3layer/"))  # not the reader's plan: no runs there
    validation = text(signed_in.get("/validation/"))
    assert "job 12" in validation and "Step time (s)" in validation and "our cluster, job 12" in validation
    other = django_user_model.objects.create_user("other", password="pw-other-1234")
    signed_in.force_login(other)
    assert "job 12" not in text(signed_in.get("/validation/"))


def test_a_carried_calibration_is_offered_on_the_traces_plan_and_listed_on_the_build_it_was_carried_to(
        catalog, signed_in, user):
    import gzip
    import json

    from planner.models import Workload
    from planner.services.measurements import measurement_carry, measurement_upload
    from tests.planner.test_carried_calibration import TWO_RANKS, copy_plan

    traced_on, other = copy_plan("dgx-a100-3layer", "traced", user, 32), copy_plan("ff2-pcie-2zone", "bought", user, 64)
    trace = measurement_upload(owner=user, kind="trace", plan=traced_on, filename="ranks.json.gz",
                               content=gzip.compress(json.dumps({"traceEvents": TWO_RANKS}).encode()),
                               traced={"workload": Workload.objects.get(slug="llama-13b-512"), "moe_layers": 0,
                                       "dense_layers": 1})

    def carry_targets():
        body = signed_in.get("/plans/traced/").content.decode()
        found = re.search(r'<select data-carry-plan="\d+">(.*?)</select>', body)
        return re.findall(r'<option value="([^"]+)">', found.group(1)) if found else []

    assert carry_targets() == ["bought"]  # the reader's other Ampere build, not the traced plan itself
    measurement_carry(measurement=trace, plan=other)
    assert carry_targets() == []  # carried already
    page = text(signed_in.get("/plans/bought/"))
    fitted = trace.fitted["gemm_fraction"]
    assert "Calibrations carried here" in page and "From the trace ranks.json.gz on dgx-a100 (plan traced" in page
    assert (f"gemm_fraction {figure(fitted['value'])} ({figure(fitted['low'])} to {figure(fitted['high'])} over its "
            f"ranks and steps; the family's {figure(fitted['family_value'])})") in page
    assert "Stop carrying" in page

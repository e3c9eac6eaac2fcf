"""Catalogue API: list, filter, detail, writes with and without permission, and bad input."""
import copy

import pytest
from django.urls import reverse

from planner import models

# One valid new entry per endpoint, and a field to change in an update.
NEW_ENTRIES = {
    "accelerator": (
        {
            "slug": "test-gpu",
            "name": "Test GPU",
            "vendor": "Acme",
            "source": "unit test",
            "confidence": "estimate",
            "form_factor": "sxm",
            "peak_tf32_tflops": 100,
            "peak_fp16_tflops": 200,
            "tdp_w": 300,
            "scaleup_link": "nvlink4",
            "scaleup_bw_gbyte_s": 900,
            "host_pcie_gen": 5,
        },
        ("tdp_w", 350.0),
    ),
    "cpu": (
        {
            "slug": "test-cpu",
            "name": "Test CPU",
            "vendor": "Acme",
            "source": "unit test",
            "confidence": "estimate",
            "cores": 64,
            "memory_channels": 12,
            "memory_type": "DDR5-4800",
            "memory_bandwidth_gbyte_s": 460.8,
            "pcie_gen": 5,
            "pcie_lanes": 128,
        },
        ("cores", 96),
    ),
    "nic": (
        {
            "slug": "test-nic",
            "name": "Test NIC",
            "vendor": "Acme",
            "source": "unit test",
            "confidence": "estimate",
            "line_rate_gbit_s": 800,
            "ports": 1,
            "protocol": "ib",
            "host_pcie_gen": 6,
        },
        ("ports", 2),
    ),
    "switch": (
        {
            "slug": "test-switch",
            "name": "Test switch",
            "vendor": "Acme",
            "source": "unit test",
            "confidence": "estimate",
            "radix": 64,
            "port_speed_gbit_s": 800,
            "protocol": "roce",
        },
        ("radix", 128),
    ),
    "linkpart": (
        {
            "slug": "test-dac",
            "name": "Test DAC",
            "vendor": "Acme",
            "source": "unit test",
            "confidence": "estimate",
            "kind": "dac",
            "speed_gbit_s": 400,
        },
        ("reach_m", 2.0),
    ),
    "computenodetype": (
        {
            "slug": "test-node",
            "name": "Test node",
            "vendor": "Acme",
            "source": "unit test",
            "confidence": "estimate",
            "accelerator": "a100-sxm4-80gb",
            "accelerators_per_node": 8,
            "cpu": "epyc-7742",
            "cpus_per_node": 2,
            "compute_nic": "cx6-hdr-ib",
            "compute_nics_per_node": 8,
            "nvlink_topology": "all-to-all",
        },
        ("compute_nics_per_node", 4),
    ),
    "storagenodetype": (
        {
            "slug": "test-storage",
            "name": "Test storage node",
            "vendor": "Acme",
            "source": "unit test",
            "confidence": "estimate",
            "ssd_count": 12,
            "ssd_capacity_tb": 7.68,
            "nic": "cx7-ndr-ib",
            "nics_per_node": 2,
        },
        ("ssd_count", 24),
    ),
    "pricebook": (
        {
            "slug": "test-book",
            "name": "Test book",
            "vendor": "Acme",
            "source": "unit test",
            "confidence": "estimate",
            "currency": "EUR",
            "price_date": "2026-01-01",
            "pue": 1.2,
            "items": [
                {
                    "part_kind": "switch",
                    "part_slug": "qm9700",
                    "unit_price": "30000.00",
                    "low_price": "25000.00",
                    "high_price": "40000.00",
                    "basis": "an estimate from a reseller's listing",
                    "confidence": "estimate",
                }
            ],
        },
        ("pue", 1.4),
    ),
}
MODEL_OF = {
    "accelerator": models.Accelerator,
    "cpu": models.CPU,
    "nic": models.NIC,
    "switch": models.Switch,
    "linkpart": models.LinkPart,
    "computenodetype": models.ComputeNodeType,
    "storagenodetype": models.StorageNodeType,
    "pricebook": models.PriceBook,
}
# A seeded entry per endpoint, with its vendor, for detail and filter tests.
SEEDED = {
    "accelerator": ("a100-pcie-40gb", "NVIDIA"),
    "cpu": ("epyc-7742", "AMD"),
    "nic": ("cx6-hdr-ib", "NVIDIA (Mellanox)"),
    "switch": ("qm8700", "NVIDIA (Mellanox)"),
    "linkpart": ("hdr-dac-200g", "NVIDIA (Mellanox)"),
    "computenodetype": ("ff-pcie-a100", "DeepSeek / High-Flyer (custom build)"),
    "storagenodetype": ("ff-3fs-storage", "DeepSeek / High-Flyer (custom build)"),
    "pricebook": ("fire-flyer-relative", "DeepSeek / High-Flyer"),
}
ENDPOINTS = list(NEW_ENTRIES)


def list_url(basename):
    return reverse(f"{basename}-list")


def detail_url(basename, slug):
    return reverse(f"{basename}-detail", kwargs={"slug": slug})


def snapshot(basename):
    """Everything stored in a table, to prove a failed request wrote nothing."""
    rows = list(MODEL_OF[basename].objects.order_by("slug").values())
    if basename == "pricebook":
        rows.append(list(models.PriceItem.objects.order_by("id").values()))
    return rows


@pytest.mark.parametrize("basename", ENDPOINTS)
class TestReads:
    def test_list_is_paginated_and_counts_the_seed(self, basename, catalog, reader_client):
        response = reader_client.get(list_url(basename), {"page_size": 2})
        assert response.status_code == 200
        body = response.json()
        assert body["count"] == MODEL_OF[basename].objects.count() > 0
        assert len(body["results"]) == min(2, body["count"])

    def test_filter_by_slug_and_vendor(self, basename, catalog, reader_client):
        slug, vendor = SEEDED[basename]
        by_slug = reader_client.get(list_url(basename), {"slug": slug}).json()
        assert [row["slug"] for row in by_slug["results"]] == [slug]
        by_vendor = reader_client.get(list_url(basename), {"vendor": vendor.upper()}).json()
        assert by_vendor["count"] == MODEL_OF[basename].objects.filter(vendor=vendor).count()
        assert all(row["vendor"] == vendor for row in by_vendor["results"])
        assert reader_client.get(list_url(basename), {"slug": "no-such-part"}).json()["count"] == 0

    def test_detail_carries_source_and_confidence(self, basename, catalog, reader_client):
        slug, _ = SEEDED[basename]
        body = reader_client.get(detail_url(basename, slug)).json()
        assert body["slug"] == slug
        assert len(body["source"]) > 3
        assert body["confidence"] in {"datasheet", "secondary", "measured", "estimate", "unverified"}

    def test_reads_need_login(self, basename, catalog, anon_client):
        assert anon_client.get(list_url(basename)).status_code == 401

    def test_public_read_setting_opens_reads(self, basename, catalog, anon_client, settings):
        settings.CATALOG_PUBLIC_READ = True
        assert anon_client.get(list_url(basename)).status_code == 200
        assert anon_client.post(list_url(basename), NEW_ENTRIES[basename][0]).status_code == 401


@pytest.mark.parametrize("basename", ENDPOINTS)
class TestWrites:
    def test_create_update_delete_with_permission(self, basename, catalog, editor_client):
        entry, (field, new_value) = NEW_ENTRIES[basename]
        created = editor_client.post(list_url(basename), entry)
        assert created.status_code == 201, created.json()
        assert MODEL_OF[basename].objects.filter(slug=entry["slug"]).exists()
        patched = editor_client.patch(detail_url(basename, entry["slug"]), {field: new_value})
        assert patched.status_code == 200, patched.json()
        assert patched.json()[field] == new_value
        stored = MODEL_OF[basename].objects.get(slug=entry["slug"])
        assert getattr(stored, field) == new_value
        assert editor_client.delete(detail_url(basename, entry["slug"])).status_code == 204
        assert not MODEL_OF[basename].objects.filter(slug=entry["slug"]).exists()

    @pytest.mark.parametrize("caller,code", [("anon_client", 401), ("reader_client", 403)])
    def test_writes_without_login_or_permission_are_refused(self, basename, catalog, caller, code, request):
        """Anonymous writes answer 401, writes without the model permission 403; nothing changes. (Any
        signed-in user may create a price book of their own: tests/planner/test_price_books.py.)"""
        client = request.getfixturevalue(caller)
        slug, _ = SEEDED[basename]
        before = snapshot(basename)
        if not (basename == "pricebook" and caller == "reader_client"):
            assert client.post(list_url(basename), NEW_ENTRIES[basename][0]).status_code == code
        assert client.patch(detail_url(basename, slug), {"notes": "x"}).status_code == code
        assert client.delete(detail_url(basename, slug)).status_code == code
        assert snapshot(basename) == before

    def test_missing_required_field_names_it(self, basename, catalog, editor_client):
        entry = copy.deepcopy(NEW_ENTRIES[basename][0])
        del entry["source"]
        before = snapshot(basename)
        response = editor_client.post(list_url(basename), entry)
        assert response.status_code == 400
        assert "required" in response.json()["source"][0]
        assert snapshot(basename) == before

    def test_wrong_type_names_the_field(self, basename, catalog, editor_client):
        entry = copy.deepcopy(NEW_ENTRIES[basename][0])
        field, _ = NEW_ENTRIES[basename][1]
        entry[field] = "lots"
        before = snapshot(basename)
        response = editor_client.post(list_url(basename), entry)
        assert response.status_code == 400
        assert field in response.json()
        assert snapshot(basename) == before

    def test_duplicate_slug_is_refused(self, basename, catalog, editor_client):
        entry = copy.deepcopy(NEW_ENTRIES[basename][0])
        entry["slug"] = SEEDED[basename][0]
        before = snapshot(basename)
        response = editor_client.post(list_url(basename), entry)
        assert response.status_code == 400
        assert "slug" in response.json()
        assert snapshot(basename) == before


# Field-level rules: (endpoint, change to a valid new entry, field named in the error, words in it)
BAD_INPUT = [
    ("accelerator", {"peak_fp16_tflops": -1}, "peak_fp16_tflops", "greater than zero"),
    ("accelerator", {"tdp_w": 0}, "tdp_w", "greater than zero"),
    ("accelerator", {"scaleup_bw_gbyte_s": None}, "scaleup_bw_gbyte_s", "required"),
    ("accelerator", {"scaleup_link": "none"}, "scaleup_bw_gbyte_s", "must be empty"),
    ("accelerator", {"full_clock_power_w": 200}, "full_clock_power_w", "below the TDP"),
    ("accelerator", {"peak_tf32_tflops": 400}, "peak_fp16_tflops", "must not fall"),
    ("accelerator", {"host_pcie_gen": 7}, "host_pcie_gen", "not a valid choice"),
    ("cpu", {"memory_bandwidth_gbyte_s": 0}, "memory_bandwidth_gbyte_s", "greater than zero"),
    ("cpu", {"cores": 0}, "cores", "greater than or equal to 1"),
    ("nic", {"line_rate_gbit_s": -400}, "line_rate_gbit_s", "greater than zero"),
    ("nic", {"protocol": "ethernet"}, "protocol", "not a valid choice"),
    ("switch", {"radix": 41}, "radix", "must be even"),
    ("switch", {"port_speed_gbit_s": 0}, "port_speed_gbit_s", "greater than zero"),
    ("linkpart", {"speed_gbit_s": 0}, "speed_gbit_s", "greater than zero"),
    ("computenodetype", {"accelerator": "no-such-gpu"}, "accelerator", "does not exist"),
    ("computenodetype", {"compute_nic": "no-such-nic"}, "compute_nic", "does not exist"),
    ("computenodetype", {"root_ports_shared_by_two_gpus": 5}, "root_ports_shared_by_two_gpus", "need 10 GPUs"),
    ("computenodetype", {"storage_nics_per_node": 2}, "storage_nics_per_node", "together"),
    (
        "computenodetype",
        {"nvlink_topology": "pairs", "accelerators_per_node": 7},
        "nvlink_topology",
        "even number",
    ),
    ("computenodetype", {"accelerator": "ascend-910b3"}, "nvlink_topology", "no scale-up link"),
    ("storagenodetype", {"nic": "missing"}, "nic", "does not exist"),
    ("storagenodetype", {"ssd_capacity_tb": -7.68}, "ssd_capacity_tb", "greater than zero"),
    ("pricebook", {"pue": 0.9}, "pue", "at least 1.0"),
    ("pricebook", {"currency": "usd"}, "currency", "upper-case"),
    (
        "pricebook",
        {"items": [{"part_kind": "switch", "part_slug": "no-such-switch", "unit_price": "1", "basis": "x",
                    "confidence": "estimate"}]},
        "items",
        "no switch with slug 'no-such-switch'",
    ),
    (
        "pricebook",
        {"items": [{"part_kind": "switch", "part_slug": "qm8700", "unit_price": "-5", "basis": "x",
                    "confidence": "estimate"}]},
        "items",
        "zero or more",
    ),
    (
        "pricebook",
        {
            "items": [
                {"part_kind": "switch", "part_slug": "qm8700", "unit_price": "1", "basis": "x",
                 "confidence": "secondary"},
                {"part_kind": "switch", "part_slug": "qm8700", "unit_price": "2", "basis": "y",
                 "confidence": "secondary"},
            ]
        },
        "items",
        "priced twice",
    ),
    (
        "pricebook",
        {"items": [{"part_kind": "switch", "part_slug": "qm8700", "unit_price": "1", "basis": "x",
                    "confidence": "estimate"}]},
        "items",
        "an estimate needs its low and high prices",
    ),
    (
        "pricebook",
        {"items": [{"part_kind": "switch", "part_slug": "qm8700", "unit_price": "5", "low_price": "1",
                    "high_price": "3", "basis": "x", "confidence": "estimate"}]},
        "items",
        "must hold the price 5",
    ),
    (
        "pricebook",
        {"items": [{"part_kind": "gpu-hour", "part_slug": "h100-sxm5-80gb", "unit_price": "2", "basis": "x",
                    "confidence": "secondary"}]},
        "items",
        "a GPU-hour price needs its rental term",
    ),
    (
        "pricebook",
        {"items": [{"part_kind": "switch", "part_slug": "qm8700", "term": "1-year", "unit_price": "2", "basis": "x",
                    "confidence": "secondary"}]},
        "items",
        "only a GPU-hour price has a rental term",
    ),
    (
        "pricebook",
        {"items": [{"part_kind": "gpu-hour", "part_slug": "h100-sxm5-80gb", "term": "1-year", "unit_price": "2",
                    "basis": "x", "confidence": "secondary"}]},
        "items",
        "a GPU-hour price names who rents at it",
    ),
    (
        "pricebook",
        {"items": [{"part_kind": "switch", "part_slug": "qm8700", "provider": "a cloud", "unit_price": "2",
                    "basis": "x", "confidence": "secondary"}]},
        "items",
        "only a GPU-hour price has a provider",
    ),
]


@pytest.mark.parametrize("basename,change,field,words", BAD_INPUT)
def test_bad_input_answers_400_naming_the_field(basename, change, field, words, catalog, editor_client):
    entry = {**copy.deepcopy(NEW_ENTRIES[basename][0]), **change}
    before = snapshot(basename)
    response = editor_client.post(list_url(basename), entry, format="json")
    assert response.status_code == 400
    body = response.json()
    assert field in body, body
    assert words in str(body[field]), body
    assert snapshot(basename) == before


@pytest.mark.parametrize("basename,change,field,words", BAD_INPUT[:6] + BAD_INPUT[11:13])
def test_bad_update_leaves_the_stored_entry_alone(basename, change, field, words, catalog, editor_client):
    slug, _ = SEEDED[basename]
    before = snapshot(basename)
    response = editor_client.patch(detail_url(basename, slug), change, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert snapshot(basename) == before


def test_nan_is_refused(catalog, editor_client):
    entry = {**NEW_ENTRIES["switch"][0], "port_speed_gbit_s": "NaN"}
    response = editor_client.post(list_url("switch"), entry, format="json")
    assert response.status_code == 400
    assert "port_speed_gbit_s" in response.json()


def test_deleting_a_part_in_use_answers_409_and_keeps_it(catalog, editor_client):
    response = editor_client.delete(detail_url("accelerator", "a100-pcie-40gb"))
    assert response.status_code == 409
    assert "Fire-Flyer 2 PCIe A100 node" in response.json()["referenced_by"]
    assert models.Accelerator.objects.filter(slug="a100-pcie-40gb").exists()


def test_a_409_names_a_referrer_deleted_meanwhile_by_its_kind(catalog, editor_client, monkeypatch):
    """A delete refused because a plan still uses the part, where that plan is deleted between the
    refusal and its description (its deferred fields unreadable): 409 naming a cluster plan, not a
    500 (schemathesis found it with two workers on PostgreSQL)."""
    from django.db.models import ProtectedError

    from planner.models import ClusterPlan

    plan = ClusterPlan.objects.only("pk").filter(switch__slug="qm9700").first()
    ClusterPlan.objects.filter(pk=plan.pk).delete()

    def refuse(self, *args, **kwargs):
        raise ProtectedError("in use", {plan})

    monkeypatch.setattr(models.Switch, "delete", refuse)
    response = editor_client.delete(detail_url("switch", "qm9700"))
    assert response.status_code == 409 and response.json()["referenced_by"] == ["a cluster plan"]


def test_price_book_update_replaces_items_atomically(catalog, editor_client):
    url = detail_url("pricebook", "fire-flyer-relative")
    items = [{"part_kind": "switch", "part_slug": "qm9700", "unit_price": "4.5", "low_price": "4", "high_price": "6",
              "basis": "b", "confidence": "estimate"}]
    response = editor_client.patch(url, {"items": items}, format="json")
    assert response.status_code == 200
    stored = models.PriceBook.objects.get(slug="fire-flyer-relative").items.get()
    assert (stored.part_slug, float(stored.unit_price)) == ("qm9700", 4.5)


def test_filter_by_kind(catalog, reader_client):
    body = reader_client.get(list_url("accelerator"), {"form_factor": "pcie", "page_size": 100}).json()
    slugs = {row["slug"] for row in body["results"]}
    assert slugs == {"a100-pcie-40gb", "a100-pcie-80gb", "h100-pcie-80gb"}
    roce = reader_client.get(list_url("switch"), {"protocol": "roce"}).json()
    assert {row["slug"] for row in roce["results"]} == {"spectrum4-sn5600", "tomahawk4-64x400g", "tomahawk5-128x400g"}


def test_token_authentication(catalog, user, anon_client):
    from planner.models import AccessToken

    token = AccessToken.objects.create(user=user)
    anon_client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert anon_client.get(list_url("switch")).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None
    anon_client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    assert anon_client.get(list_url("switch")).status_code == 401


def test_read_only_token_cannot_write(catalog, editor, anon_client):
    from planner.models import AccessToken

    token = AccessToken.objects.create(user=editor, name="ci", read_only=True)
    anon_client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert anon_client.get(list_url("switch")).status_code == 200
    response = anon_client.post(list_url("switch"), NEW_ENTRIES["switch"][0])
    assert response.status_code == 403
    assert response.json()["detail"] == "this API token is read-only"
    assert not models.Switch.objects.filter(slug="test-switch").exists()


def test_token_endpoint_issues_a_token(user, anon_client):
    response = anon_client.post(reverse("api-token"), {"username": "reader", "password": "pw-reader-1234"})
    assert response.status_code == 200
    assert len(response.json()["token"]) == 40
    bad = anon_client.post(reverse("api-token"), {"username": "reader", "password": "wrong"})
    assert bad.status_code == 400
    # A name longer than any account's is refused by field, before it reaches the lockout's record
    # of failures (a 500 on PostgreSQL's varchar(255) before).
    long = anon_client.post(reverse("api-token"), {"username": "x" * 300, "password": "wrong"})
    assert long.status_code == 400 and long.json()["errors"] == {
        "username": ["Ensure this field has no more than 150 characters."]}


def test_a_password_login_token_leaves_the_other_tokens_working(user, anon_client):
    """bin/run prints the demo user's "default" token; a script's password login gets a key of its own
    token ("password login", or the name it gives), so the printed one keeps working."""
    from planner.services.accounts import token_issue

    printed = token_issue(user)
    login = lambda **name: anon_client.post(reverse("api-token"), {"username": "reader",  # noqa: E731
                                                                   "password": "pw-reader-1234", **name})
    first, second, named = login().json()["token"], login().json()["token"], login(name="nightly sweep").json()["token"]

    def works(key):
        return anon_client.get("/api/plans/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200

    assert works(printed) and works(second) and works(named) and not works(first)  # only its own name rotates
    assert sorted(user.access_tokens.values_list("name", flat=True)) == ["default", "nightly sweep", "password login"]
    user.access_tokens.create(name="read only", read_only=True)
    refused = login(name="read only")
    assert refused.status_code == 400 and "read-only" in refused.json()["errors"]["name"][0]


def test_the_schema_and_docs_are_for_signed_in_users(anon_client, db):
    assert anon_client.get("/api/schema/").status_code == 401
    docs = anon_client.get("/api/docs/")
    assert docs.status_code == 302 and docs["Location"].startswith("/login/?next=/api/docs/")


def test_openapi_schema_and_offline_docs(reader_client, user):
    schema = reader_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/catalog/accelerators/{slug}/" in paths
    reader_client.force_login(user)  # the docs are a page: a signed-in browser session
    docs = reader_client.get("/api/docs/")
    assert docs.status_code == 200
    page = docs.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in page
    assert "cdn" not in page.lower()

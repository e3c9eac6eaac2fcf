"""A buyer's own price book: copy a shared one, add quotes to it, price a plan from it; prices carry
their date and source; a book over a year old is flagged."""
import datetime

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from planner.models import ClusterPlan, PriceBook, PriceItem
from planner.services.prices import staleness

FF = "ff2-pcie-2zone"  # priced in fire-flyer-relative but for its 3FS storage node
BOOKS = "/api/catalog/price-books/"
QUOTE = {"part_kind": "storage-node", "part_slug": "ff-3fs-storage", "unit_price": "1.75",
         "basis": "vendor quote, 180 units", "confidence": "secondary", "price_date": "2026-11-20",
         "source_url": "https://example.com/quotes/3fs-2026-11"}


@pytest.fixture
def other_client(db):
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("other", password="pw-other-1234"))
    return client


def my_plan(client, slug="my-ff"):
    assert client.post(f"/api/plans/{FF}/clone/", {"slug": slug}, format="json").status_code == 201
    return slug


def test_a_quote_for_your_plan_goes_to_your_own_copy_and_narrows_the_band(catalog, reader_client, other_client):
    plan = my_plan(reader_client)
    before = reader_client.get(f"/api/plans/{plan}/bom/").json()
    storage = next(line for line in before["lines"] if line["part_kind"] == "storage-node")
    assert storage["confidence"] == "estimate" and before["price_book"] == "fire-flyer-relative"
    before_storage = storage["extended_price"]
    shared = list(PriceItem.objects.filter(price_book__slug="fire-flyer-relative").order_by("id").values())
    quoted = reader_client.post(f"/api/plans/{plan}/quotes/", QUOTE, format="json")
    assert quoted.status_code == 200, quoted.json()
    book = PriceBook.objects.get(slug=quoted.json()["slug"])
    assert (book.slug, book.owner.username, book.price_date) == ("fire-flyer-relative-reader", "reader",
                                                                 datetime.date.today())
    assert ClusterPlan.objects.get(slug=plan).price_book == book
    assert list(PriceItem.objects.filter(price_book__slug="fire-flyer-relative").order_by("id").values()) == shared
    after = reader_client.get(f"/api/plans/{plan}/bom/").json()
    storage = next(line for line in after["lines"] if line["part_kind"] == "storage-node")
    assert storage["unit_price"] == 1.75 and storage["extended_price"] == storage["extended_low"] == 1.75 * 180
    assert (storage["price_date"], storage["source_url"], storage["confidence"]) == (
        "2026-11-20", QUOTE["source_url"], "secondary")
    assert after["total"] == pytest.approx(before["total"] - before_storage + 315)
    assert after["total_high"] - after["total_low"] < before["total_high"] - before["total_low"]
    assert after["price_book_owner"] == "reader"
    # A second quote replaces the first in the same book: no second copy.
    reader_client.post(f"/api/plans/{plan}/quotes/", {**QUOTE, "unit_price": "2"}, format="json")
    assert PriceItem.objects.get(price_book=book, part_slug="ff-3fs-storage").unit_price == 2
    assert PriceBook.objects.filter(owner__username="reader").count() == 1
    # Another plan of yours on the shared book reuses your copy on its first quote.
    second = my_plan(reader_client, "my-ff-2")
    assert reader_client.post(f"/api/plans/{second}/quotes/", QUOTE, format="json").json()["slug"] == book.slug
    # Only the plan's owner quotes it: a preset answers 403, another user's private plan 404.
    assert reader_client.post(f"/api/plans/{FF}/quotes/", QUOTE, format="json").status_code == 403
    assert other_client.post(f"/api/plans/{plan}/quotes/", QUOTE, format="json").status_code == 404
    bad = reader_client.post(f"/api/plans/{plan}/quotes/", {**QUOTE, "confidence": "estimate"}, format="json")
    assert bad.status_code == 400 and "low_price" in bad.json()["errors"]


def test_a_copied_book_holds_your_quotes(catalog, reader_client):
    plan = my_plan(reader_client)
    copied = reader_client.post(f"{BOOKS}fire-flyer-relative/copy/", {"slug": "my-ff-prices", "plan": plan},
                                format="json")
    assert copied.status_code == 201, copied.json()
    assert copied.json()["owner"] == "reader" and len(copied.json()["items"]) == PriceItem.objects.filter(
        price_book__slug="fire-flyer-relative").count()
    assert copied.json()["price_date"] == datetime.date.today().isoformat()
    assert ClusterPlan.objects.get(slug=plan).price_book.slug == "my-ff-prices"
    quoted = reader_client.post(f"{BOOKS}my-ff-prices/items/", QUOTE, format="json")
    assert quoted.status_code == 200, quoted.json()
    reader_client.post(f"{BOOKS}my-ff-prices/items/", {**QUOTE, "unit_price": "2"}, format="json")
    assert PriceItem.objects.get(price_book__slug="my-ff-prices", part_slug="ff-3fs-storage").unit_price == 2


def test_your_book_is_yours_alone(catalog, reader_client, other_client):
    created = reader_client.post(BOOKS, {"slug": "my-quotes", "name": "Mine", "vendor": "me", "source": "quotes",
                                         "confidence": "secondary", "currency": "USD", "price_date": "2026-11-01"},
                                 format="json")
    assert created.status_code == 201 and created.json()["owner"] == "reader"
    assert other_client.get(f"{BOOKS}my-quotes/").status_code == 404
    assert "my-quotes" not in [b["slug"] for b in other_client.get(BOOKS, {"page_size": 100}).json()["results"]]
    assert other_client.post(f"{BOOKS}my-quotes/items/", QUOTE, format="json").status_code == 404
    # Nor can another user price a plan from it: to them it does not exist.
    other_plan = my_plan(other_client, "other-ff")
    refused = other_client.patch(f"/api/plans/{other_plan}/", {"price_book": "my-quotes"}, format="json")
    assert refused.status_code == 400 and "price_book" in refused.json()["errors"]
    assert other_client.post(f"{BOOKS}my-quotes/copy/", {"slug": "stolen"}, format="json").status_code == 404
    # Copying into someone else's plan is refused; the plan keeps its book.
    mine = my_plan(reader_client)
    response = other_client.post(f"{BOOKS}fire-flyer-relative/copy/", {"slug": "x-copy", "plan": mine},
                                 format="json")
    assert response.status_code == 400 and "plan" in response.json()["errors"]  # private: not visible to them
    assert not PriceBook.objects.filter(slug="x-copy").exists()
    assert ClusterPlan.objects.get(slug=mine).price_book.slug == "fire-flyer-relative"


def test_shared_books_need_the_catalogue_permission_and_bad_quotes_name_their_field(catalog, reader_client):
    before = list(PriceItem.objects.order_by("id").values())
    assert reader_client.post(f"{BOOKS}fire-flyer-relative/items/", QUOTE, format="json").status_code == 403
    assert reader_client.patch(f"{BOOKS}fire-flyer-relative/", {"pue": 1.3}, format="json").status_code == 403
    reader_client.post(f"{BOOKS}fire-flyer-relative/copy/", {"slug": "mine"}, format="json")
    for change, field in (({"unit_price": "-1"}, "unit_price"), ({"part_slug": "no-such-node"}, "part_slug"),
                          ({"source_url": "javascript:alert(1)"}, "source_url"),
                          ({"price_date": "soon"}, "price_date")):
        response = reader_client.post(f"{BOOKS}mine/items/", {**QUOTE, **change}, format="json")
        assert response.status_code == 400 and field in response.json()["errors"], response.json()
    assert list(PriceItem.objects.exclude(price_book__slug="mine").order_by("id").values()) == before
    taken = reader_client.post(f"{BOOKS}fire-flyer-relative/copy/", {"slug": "usd-2026"}, format="json")
    assert taken.status_code == 400 and "is taken" in taken.json()["errors"]["slug"][0]


def test_prices_over_a_year_old_are_flagged_on_the_plan(catalog, reader_client):
    plan = ClusterPlan.objects.get(slug="llama3-h100-16k")  # its switch and fibre priced 2024-08-22, the rest 2025
    assert staleness(plan, datetime.date(2025, 8, 22)) is None
    assert staleness(plan, datetime.date(2025, 8, 23)).startswith(
        "cost: 2 of the 7 prices this plan takes from 'usd-2026' were stated more than a year ago (the oldest on "
        "2024-08-22, 12 months ago)")
    assert staleness(ClusterPlan.objects.get(slug=FF), datetime.date(2030, 1, 1)) is None  # relative units
    result = reader_client.post("/api/plans/llama3-h100-16k/evaluate/", {}, format="json").json()["result"]
    stale = [c for c in result["constraints"] if c["code"] == "cost.stale_prices"]
    assert len(stale) == 1 and "usd-2026" in stale[0]["message"]
    assert reader_client.get("/api/plans/llama3-h100-16k/bom/").json()["stale"] == stale[0]["message"]


def test_the_llama3_preset_sets_renting_its_gpus_against_owning_them(catalog, reader_client):
    bom = reader_client.get("/api/plans/llama3-h100-16k/bom/").json()
    assert [(r["term"], r["unit_price"]) for r in bom["rentals"]] == [("on-demand", 11.06), ("1-year", 7.67),
                                                                      ("3-year", 4.86)]
    three_year = bom["rentals"][2]
    assert three_year["price_date"] == "2025-03-17" and "3-year committed-use" in three_year["basis"]
    assert three_year["provider"] == "Google Cloud (a3-highgpu)"
    evaluated = reader_client.post("/api/plans/llama3-h100-16k/evaluate/", {"workload": "llama3-405b-like"},
                                   format="json").json()["result"]
    cost, training = evaluated["cost"], evaluated["training"]
    # The capital's four years are set against the term covering four years; the run rents at the term
    # covering its days, and says which.
    assert (cost["rent_per_gpu_hour"], cost["rent_term"]) == (4.86, "3-year commitment")
    days = training["time_to_train_days"]
    offers = {"on demand": days * 11.06, "1-year commitment": max(days, 365) * 7.67,
              "3-year commitment": max(days, 3 * 365) * 4.86}
    assert training["rent_term"] == min(offers, key=offers.get)
    assert cost["capex_total"] is not None and cost["own_per_gpu_hour"] is not None


def test_your_quotes_never_reach_another_user_through_a_plan(catalog, reader_client, other_client):
    reader_client.post(f"{BOOKS}fire-flyer-relative/copy/", {"slug": "secret-book"}, format="json")
    reader_client.post(f"{BOOKS}secret-book/items/", {**QUOTE, "unit_price": "777"}, format="json")
    # Not through a preview: to another user the book does not exist.
    preview = other_client.post("/api/plans/preview/", {"node_type": "ff-pcie-a100", "node_count": 8,
                                                        "switch": "qm8700", "price_book": "secret-book"},
                                format="json")
    assert preview.status_code == 400 and "price_book" in preview.json()["errors"]
    # Not through a shared plan: a plan priced from its owner's book stays private.
    plan = my_plan(reader_client, "secret-plan")
    assert reader_client.patch(f"/api/plans/{plan}/", {"price_book": "secret-book"}, format="json").status_code == 200
    shared = reader_client.patch(f"/api/plans/{plan}/", {"visibility": "shared"}, format="json")
    assert shared.status_code == 400 and "visibility" in shared.json()["errors"]
    assert other_client.get(f"/api/plans/{plan}/bom/").status_code == 404
    # The quote comes back in the book the items action answers with.
    book = reader_client.post(f"{BOOKS}secret-book/items/", {**QUOTE, "unit_price": "778"}, format="json").json()
    assert [i["unit_price"] for i in book["items"] if i["part_slug"] == "ff-3fs-storage"] == ["778.0000"]


def test_the_seed_loader_never_takes_over_a_users_book(catalog, reader_client, tmp_path):
    from planner.services.catalog import CatalogFileError, catalog_load

    reader_client.post(BOOKS, {"slug": "seeded-later", "name": "Mine", "vendor": "me", "source": "quotes",
                               "confidence": "secondary", "currency": "USD", "price_date": "2026-11-01"},
                       format="json")
    seeds = tmp_path / "price-books"
    seeds.mkdir()
    (seeds / "seeded-later.yaml").write_text(open("planner/catalog/data/price-books/fire-flyer-relative.yaml").read()
                                             .replace("slug: fire-flyer-relative", "slug: seeded-later"))
    with pytest.raises(CatalogFileError) as refused:
        catalog_load(data_dir=tmp_path)
    assert "belongs to a user's entry" in str(refused.value.errors)
    assert PriceBook.objects.get(slug="seeded-later").owner.username == "reader"


def test_a_gpu_hour_quote_names_who_rents_at_it(catalog, reader_client, client, user):
    """A rental rate is a provider's (issue 70, item 3): quoted without one it is refused naming the
    field, which the quote form offers."""
    assert reader_client.post(f"{BOOKS}usd-2026/copy/", {"slug": "my-rates"}, format="json").status_code == 201
    quote = {"part_kind": "gpu-hour", "part_slug": "h100-sxm5-80gb", "term": "on-demand", "unit_price": "2.49",
             "basis": "our reseller's offer for 512 GPUs", "confidence": "secondary"}
    refused = reader_client.post(f"{BOOKS}my-rates/items/", quote, format="json")
    assert refused.status_code == 400 and "a GPU-hour price names who rents at it" in str(refused.json()["errors"])
    saved = reader_client.post(f"{BOOKS}my-rates/items/", {**quote, "provider": "Acme GPU Cloud"}, format="json")
    assert saved.status_code in (200, 201), saved.json()
    item = next(i for i in saved.json()["items"] if i["part_kind"] == "gpu-hour" and i["part_slug"] == "h100-sxm5-80gb"
                and i["term"] == "on-demand")
    assert (item["provider"], item["unit_price"]) == ("Acme GPU Cloud", "2.4900")
    client.force_login(user)
    assert 'id="q-provider" name="provider"' in client.get("/catalog/price-books/my-rates/").content.decode()

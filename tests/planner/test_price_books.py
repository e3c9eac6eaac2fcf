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


def test_a_quote_in_your_own_copy_completes_your_plans_bill(catalog, reader_client):
    plan = my_plan(reader_client)
    before = reader_client.get(f"/api/plans/{plan}/bom/").json()
    assert before["total"] is None and before["unpriced"] == ["ff-3fs-storage"]
    copied = reader_client.post(f"{BOOKS}fire-flyer-relative/copy/", {"slug": "my-ff-prices", "plan": plan},
                                format="json")
    assert copied.status_code == 201, copied.json()
    assert copied.json()["owner"] == "reader" and len(copied.json()["items"]) == PriceItem.objects.filter(
        price_book__slug="fire-flyer-relative").count()
    assert ClusterPlan.objects.get(slug=plan).price_book.slug == "my-ff-prices"
    quoted = reader_client.post(f"{BOOKS}my-ff-prices/items/", QUOTE, format="json")
    assert quoted.status_code == 200, quoted.json()
    bom = reader_client.get(f"/api/plans/{plan}/bom/").json()
    storage = next(line for line in bom["lines"] if line["part_kind"] == "storage-node")
    assert storage["unit_price"] == 1.75 and storage["extended_price"] == 1.75 * 180
    assert (storage["price_date"], storage["source_url"]) == ("2026-11-20", QUOTE["source_url"])
    assert bom["unpriced"] == [] and bom["total"] == pytest.approx(before_total_without_storage(before) + 315)
    assert bom["price_book_owner"] == "reader"
    # A second quote for the same part replaces the first.
    reader_client.post(f"{BOOKS}my-ff-prices/items/", {**QUOTE, "unit_price": "2"}, format="json")
    assert PriceItem.objects.get(price_book__slug="my-ff-prices", part_slug="ff-3fs-storage").unit_price == 2


def before_total_without_storage(bom):
    return sum(line["extended_price"] or 0 for line in bom["lines"])


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


def test_a_book_over_a_year_old_is_flagged_on_the_plan(catalog, reader_client):
    book = PriceBook.objects.get(slug="usd-2026")
    assert staleness(book, datetime.date(2026, 6, 1)) is None
    assert "dated 2025-06-01, 12 months ago" in staleness(book, datetime.date(2026, 6, 2))
    assert staleness(PriceBook.objects.get(slug="fire-flyer-relative"), datetime.date(2030, 1, 1)) is None  # REL
    result = reader_client.post("/api/plans/llama3-h100-16k/evaluate/", {}, format="json").json()["result"]
    stale = [c for c in result["constraints"] if c["code"] == "cost.stale_prices"]
    assert len(stale) == 1 and "usd-2026" in stale[0]["message"]
    assert reader_client.get("/api/plans/llama3-h100-16k/bom/").json()["stale"] == stale[0]["message"]


def test_the_llama3_preset_sets_renting_its_gpus_against_owning_them(catalog, reader_client):
    bom = reader_client.get("/api/plans/llama3-h100-16k/bom/").json()
    assert bom["rental"]["unit_price"] == 4.86 and bom["rental"]["price_date"] == "2025-03-17"
    assert "3-year committed-use" in bom["rental"]["basis"] and bom["rental"]["source_url"].startswith("https://")
    cost = reader_client.post("/api/plans/llama3-h100-16k/evaluate/", {}, format="json").json()["result"]["cost"]
    assert cost["rent_per_gpu_hour"] == 4.86
    # Its optics have no dated price: the capital, so owning an hour, stays unknown until quoted.
    assert cost["capex_total"] is None and cost["own_per_gpu_hour"] is None


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

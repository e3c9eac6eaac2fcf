"""Edits that never silently overwrite one another: every plan and workload read carries an ETag
(its version); a write sent with an older If-Match answers 412 and stores nothing; concurrent writes
without one run one after the other on the locked row, so each sees the others' changes."""
import os
import threading
import time

import pytest
from django.db import connection
from rest_framework.test import APIClient

from planner.models import ClusterPlan, Workload
from planner.serializers import ClusterPlanSerializer


@pytest.fixture
def mine(catalog, user):
    plan = ClusterPlan.objects.get(slug="ff2-pcie-2zone")
    plan.pk, plan.slug, plan.owner, plan.visibility = None, "my-ff", user, "private"
    plan.save()
    return plan


def test_a_stale_if_match_answers_412_and_changes_nothing(mine, reader_client):
    read = reader_client.get("/api/plans/my-ff/")
    assert read["ETag"] == '"1"' and read.json()["version"] == 1
    first = reader_client.patch("/api/plans/my-ff/", {"name": "first"}, format="json", HTTP_IF_MATCH='"1"')
    assert first.status_code == 200 and first["ETag"] == '"2"' and first.json()["version"] == 2
    stale = reader_client.patch("/api/plans/my-ff/", {"name": "second"}, format="json", HTTP_IF_MATCH='"1"')
    assert stale.status_code == 412 and stale["Content-Type"] == "application/problem+json"
    assert "changed since you read it" in stale.json()["detail"] and "version 2" in stale.json()["detail"]
    mine.refresh_from_db()
    assert (mine.name, mine.version) == ("first", 2)
    assert reader_client.put("/api/plans/my-ff/", {**reader_client.get("/api/plans/my-ff/").json(), "name": "third"},
                             format="json", HTTP_IF_MATCH='"2"').status_code == 200
    workload = Workload.objects.get(slug="llama-13b-512")
    workload.pk, workload.slug, workload.owner = None, "my-llama", mine.owner
    workload.save()
    assert reader_client.patch("/api/workloads/my-llama/", {"name": "x"}, format="json",
                               HTTP_IF_MATCH='"7"').status_code == 412


def test_the_schema_documents_the_412(reader_client):
    schema = reader_client.get("/api/schema/?format=json").json()
    assert "412" in schema["paths"]["/api/plans/{slug}/"]["patch"]["responses"]
    assert "412" in schema["paths"]["/api/workloads/{slug}/"]["put"]["responses"]


@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"),
                    reason="row locks need PostgreSQL (CI's database); SQLite runs writes one at a time")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_three_concurrent_patches_all_land(monkeypatch, django_user_model):
    """Each PATCH changes its own field while the others are between their read and their write
    (a pause in validation widens the window): all three changes are kept."""
    from django.core.management import call_command

    call_command("load_catalog", verbosity=0)
    user = django_user_model.objects.create_user("editor-race", password="pw-editor-race-1234")
    plan = ClusterPlan.objects.get(slug="ff2-pcie-2zone")
    plan.pk, plan.slug, plan.owner, plan.visibility = None, "race", user, "private"
    plan.save()
    validate = ClusterPlanSerializer.validate

    def slow_validate(self, attrs):
        time.sleep(0.3)
        return validate(self, attrs)

    monkeypatch.setattr(ClusterPlanSerializer, "validate", slow_validate)
    changes = [{"name": "renamed"}, {"description": "described"}, {"pue": 1.25}]
    answers = []

    def patch(change):
        client = APIClient()
        client.force_authenticate(user)
        answers.append(client.patch("/api/plans/race/", change, format="json").status_code)
        connection.close()

    threads = [threading.Thread(target=patch, args=(change,)) for change in changes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    plan.refresh_from_db()
    assert answers == [200, 200, 200]
    assert (plan.name, plan.description, plan.pue, plan.version) == ("renamed", "described", 1.25, 4)


def test_the_editors_send_the_version_they_opened(mine, client, user):
    """The builder and the workload editor PUT with If-Match set from the page's data-version, so a
    change saved elsewhere since shows as the 412's message instead of being overwritten."""
    client.force_login(user)
    assert 'data-editing="my-ff" data-version="1"' in client.get("/plans/my-ff/edit/").content.decode()
    mine.version = 5
    mine.save()
    assert 'data-version="5"' in client.get("/plans/my-ff/edit/").content.decode()


@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"),
                    reason="row locks need PostgreSQL (CI's database); SQLite runs writes one at a time")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_first_quotes_on_two_plans_at_once_make_one_copy_of_their_book(monkeypatch, django_user_model):
    """Two plans of one user on the shared book, each quoted for the first time while the other's
    copy is being made (a pause widens the window): both answer 200, one copy holds both quotes and
    prices both plans, and the shared book is unchanged."""
    from django.core.management import call_command

    from planner.models import PriceBook, PriceItem
    from planner.services import prices

    call_command("load_catalog", verbosity=0)
    user = django_user_model.objects.create_user("quote-race", password="pw-quote-race-1234")
    for slug in ("race-a", "race-b"):
        plan = ClusterPlan.objects.get(slug="llama3-h100-16k")
        plan.pk, plan.slug, plan.owner, plan.visibility = None, slug, user, "private"
        plan.save()
    shared = list(PriceItem.objects.filter(price_book__slug="usd-2026").order_by("id").values())
    copy_book = prices.copy_book

    def slow_copy(**kwargs):
        time.sleep(0.3)
        return copy_book(**kwargs)

    monkeypatch.setattr(prices, "copy_book", slow_copy)
    answers = []

    def quote(slug, part):
        client = APIClient()
        client.force_authenticate(user)
        answers.append(client.post(f"/api/plans/{slug}/quotes/", {
            "part_kind": "link-part", "part_slug": part, "unit_price": "500", "basis": "a quote",
            "confidence": "secondary"}, format="json").status_code)
        connection.close()

    threads = [threading.Thread(target=quote, args=args) for args in
               (("race-a", "mmf-fiber-cable"), ("race-b", "ndr-sr4-transceiver-400g"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [200, 200]
    mine = PriceBook.objects.get(owner=user)
    assert set(ClusterPlan.objects.filter(owner=user).values_list("price_book__slug", flat=True)) == {mine.slug}
    assert mine.items.filter(unit_price=500).count() == 2
    assert list(PriceItem.objects.filter(price_book__slug="usd-2026").order_by("id").values()) == shared


def test_price_books_carry_an_etag_and_a_stale_if_match_answers_412_for_writes_and_quotes(catalog, reader_client):
    """Four writers of one book each send the version they read: the first lands, the rest answer 412
    (before, the last PUT silently won); a quote added to the book raises its version too."""
    created = reader_client.post("/api/catalog/price-books/", {
        "slug": "my-quotes", "name": "Mine", "vendor": "x", "source": "quotes", "confidence": "secondary",
        "currency": "USD", "price_date": "2026-11-01"}, format="json")
    assert created.status_code == 201 and created.json()["version"] == 1
    read = reader_client.get("/api/catalog/price-books/my-quotes/")
    assert read["ETag"] == '"1"'
    answers = [reader_client.patch("/api/catalog/price-books/my-quotes/", {"name": f"writer {i}"}, format="json",
                                   HTTP_IF_MATCH=read["ETag"]) for i in range(4)]
    assert [a.status_code for a in answers] == [200, 412, 412, 412]
    assert answers[0]["ETag"] == '"2"' and "changed since you read it" in answers[1].json()["detail"]
    quote = {"part_kind": "switch", "part_slug": "qm8700", "unit_price": "9000", "basis": "our quote",
             "confidence": "secondary"}
    stale = reader_client.post("/api/catalog/price-books/my-quotes/items/", quote, format="json", HTTP_IF_MATCH='"1"')
    assert stale.status_code == 412
    added = reader_client.post("/api/catalog/price-books/my-quotes/items/", quote, format="json", HTTP_IF_MATCH='"2"')
    assert added.status_code == 200 and added["ETag"] == '"3"' and added.json()["version"] == 3
    book = reader_client.get("/api/catalog/price-books/my-quotes/").json()
    assert book["name"] == "writer 0" and [i["part_slug"] for i in book["items"]] == ["qm8700"]

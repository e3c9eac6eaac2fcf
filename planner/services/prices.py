"""Price books as a buyer works with them: their own copy of a shared book, their quotes in it, and
how old a book's prices are."""
import datetime

from django.db import transaction
from django.db.models import F

from planner.adapters import plan_price_items
from planner.models import ClusterPlan, PriceBook, PriceItem

# A book whose prices are older than this is flagged on every plan priced from it.
STALE_AFTER_DAYS = 365


@transaction.atomic
def put_item(*, book: PriceBook, part_kind: str, part_slug: str, term: str = "", **fields) -> PriceItem:
    """Add the book's price for a part (a GPU-hour's for one rental term), or replace the one it has:
    a quote without a band is its own low and high."""
    fields = {"low_price": None, "high_price": None, **fields}
    item, _ = PriceItem.objects.update_or_create(price_book=book, part_kind=part_kind, part_slug=part_slug,
                                                 term=term, defaults=fields)
    book.version = F("version") + 1
    book.save(update_fields=["updated_at", "version"])
    book.refresh_from_db(fields=["version"])
    return item


@transaction.atomic
def copy_book(*, book: PriceBook, owner, slug: str, name: str | None = None,
              plan: ClusterPlan | None = None) -> PriceBook:
    """``book`` with its items as ``owner``'s own, dated today (each item keeps the date its price was
    stated; currency, energy price and PUE kept); with ``plan``, that plan is priced from the copy."""
    items = list(book.items.all())
    copy = PriceBook.objects.create(
        slug=slug, name=name or f"{book.name} (your quotes)", vendor=book.vendor, owner=owner,
        source=f"copied from the price book '{book.slug}' ({book.source})", confidence=book.confidence,
        notes=book.notes, currency=book.currency, price_date=datetime.date.today(),
        energy_price_per_kwh=book.energy_price_per_kwh, pue=book.pue)
    PriceItem.objects.bulk_create(
        PriceItem(price_book=copy, part_kind=item.part_kind, part_slug=item.part_slug, term=item.term,
                  unit_price=item.unit_price, low_price=item.low_price, high_price=item.high_price,
                  basis=item.basis, confidence=item.confidence, price_date=item.price_date or book.price_date,
                  source_url=item.source_url, provider=item.provider) for item in items)
    if plan is not None:
        _price_plan_from(plan, copy)
    return copy


def _price_plan_from(plan: ClusterPlan, book: PriceBook) -> None:
    """``plan`` priced from ``book``, its row locked and its version counted, as every plan write."""
    plan = ClusterPlan.objects.select_for_update().get(pk=plan.pk)
    plan.price_book, plan.version = book, plan.version + 1
    plan.full_clean()
    plan.save()


@transaction.atomic
def plan_quote(*, plan: ClusterPlan, owner, part_kind: str, part_slug: str, term: str = "", **fields) -> PriceBook:
    """``owner``'s quote for a part of their ``plan``, saved to their own book: the one pricing the
    plan, else their copy of the plan's shared book (made on first use, dated today, and reused by
    their other plans on that book), which then prices the plan. Nothing shared changes. The plan's
    row is locked first, and a shared book's row before a copy is sought or made, so first quotes
    made at once (on one plan, or on two plans on one book) make one copy."""
    plan = ClusterPlan.objects.select_for_update().get(pk=plan.pk)
    book = plan.price_book
    if book.owner_id != owner.id:
        book = PriceBook.objects.select_for_update().get(pk=book.pk)
        slug = f"{book.slug}-{owner.username}".lower()[:100]
        mine = PriceBook.objects.filter(slug=slug, owner=owner).first()
        if mine is None:
            taken = set(PriceBook.objects.filter(slug__startswith=slug[:90]).values_list("slug", flat=True))
            slug = next(s for s in (slug, *(f"{slug[:90]}-{n}" for n in range(2, 10_000))) if s not in taken)
            mine = copy_book(book=book, owner=owner, slug=slug)
        _price_plan_from(plan, mine)
        book = mine
    put_item(book=book, part_kind=part_kind, part_slug=part_slug, term=term, **fields)
    return book


def staleness(plan: ClusterPlan, today: datetime.date | None = None) -> str | None:
    """A sentence when some of the prices the plan is evaluated at were stated more than a year
    before ``today`` (an item's own date, else its book's), else None (and None for relative units,
    a paper's ratios rather than market prices)."""
    book = plan.price_book
    if book.currency == "REL":
        return None
    today = today or datetime.date.today()
    items = {item.pk: item for item in plan_price_items(plan).values() if item is not None}
    dates = [item.price_date or book.price_date for item in items.values()]
    old = [d for d in dates if (today - d).days > STALE_AFTER_DAYS]
    if not old:
        return None
    oldest = min(old)
    return (f"cost: {len(old)} of the {len(dates)} prices this plan takes from '{book.slug}' were stated more than a "
            f"year ago (the oldest on {oldest.isoformat()}, {(today - oldest).days // 30} months ago): they may no "
            "longer hold; check them against a current quote")

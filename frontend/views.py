from django.shortcuts import render

from planner.services.catalog import catalog_summary


def home(request):
    """The landing page: what the catalogue holds and where the API lives."""
    return render(request, "frontend/home.html", {"tables": catalog_summary()})

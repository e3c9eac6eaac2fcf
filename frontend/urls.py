from django.contrib.auth import views as auth_views
from django.urls import path

from frontend import views

app_name = "frontend"
urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon),
    path("login/", auth_views.LoginView.as_view(template_name="frontend/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("catalog/", views.catalog, name="catalog"),
    path("catalog/<str:table>/<slug:slug>/", views.catalog_entry, name="catalog-entry"),
    path("plans/", views.plan_list, name="plans"),
    path("plans/new/", views.plan_builder, name="plan-new"),
    path("plans/<slug:slug>/", views.plan_detail, name="plan"),
    path("plans/<slug:slug>/edit/", views.plan_builder, name="plan-edit"),
    path("workloads/", views.workload_list, name="workloads"),
    path("workloads/new/", views.workload_editor, name="workload-new"),
    path("workloads/<slug:slug>/edit/", views.workload_editor, name="workload-edit"),
    path("compare/", views.compare, name="compare"),
    path("sweeps/", views.sweep_list, name="sweeps"),
    path("sweeps/<int:sweep_id>/", views.sweep_detail, name="sweep"),
    path("sites/new/", views.site_new, name="site-new"),
    path("twins/", views.twin_list, name="twins"),
    path("twins/<int:twin_id>/", views.twin_detail, name="twin"),
    path("validation/", views.validation, name="validation"),
    path("reliability/", views.reliability_profiles, name="reliability"),
    path("tokens/", views.tokens, name="tokens"),
]

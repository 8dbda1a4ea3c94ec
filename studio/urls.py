from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.decorators.cache import cache_control
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from studio import views as studio_views
from studio.i18n import ScriptCatalog

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="project-list", permanent=False), name="home"),
    # The operator's: liveness, readiness, Prometheus (docs/deploy.md, "Health checks" and "Metrics").
    path("healthz", studio_views.healthz, name="healthz"),
    path("readyz", studio_views.readyz, name="readyz"),
    path("metrics", studio_views.metrics, name="metrics"),
    path("login/", studio_views.ThrottledLoginView.as_view(), name="login"),
    # The admin's own login would bypass the throttle: send it to ours.
    path("admin/login/", RedirectView.as_view(pattern_name="login", query_string=True), name="admin-login"),
    path("login/oidc/", studio_views.oidc_start, name="oidc-start"),
    path("login/oidc/callback/", studio_views.oidc_callback, name="oidc-callback"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # The workspace's API first: its autosave and heartbeat are most of the requests, and URLs are tried in order.
    # Its paths and the other routes' are disjoint, so the order changes which view answers no path.
    path("api/", include("annotation.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("account/settings/", studio_views.account_settings, name="account-settings"),
    path("account/token/", studio_views.account_token, name="account-token"),
    # The scripts' translations in the request's language (static/js/i18n.js reads them); a page loads it once.
    path(
        "jsi18n/",
        cache_control(private=True, max_age=300)(ScriptCatalog.as_view()),
        name="javascript-catalog",
    ),
    path("api/token/", studio_views.ApiToken.as_view(), name="api-token"),
    path("api/", include("traces.api_urls")),
    path("api/", include("prescoring.api_urls")),
    path("api/", include("exports.api_urls")),
    path("api/", include("evaluation.api_urls")),
    path("api/", include("webhooks.api_urls")),
    path("api/", include("insights.api_urls")),
    path("api/", include("replays.api_urls")),
    path("", include("replays.urls")),
    path("", include("traces.urls")),
    path("", include("annotation.urls")),
    path("", include("exports.urls")),
    path("", include("evaluation.urls")),
    path("", include("webhooks.urls")),
    path("", include("insights.urls")),
]

handler404 = "studio.views.not_found"
handler500 = "studio.views.server_error"

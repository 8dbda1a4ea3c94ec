"""Single sign-on end to end, in Chromium, against node-oidc-provider (OpenID Certified) started on loopback by the
test (tests/oidc_provider.py): the first sign-in makes the person with their group's role and projects, a group
taken away at the provider takes the access away at the next sign-in, an ID token minted for another client is
refused, a sign-in's state is good once and for a while only, a provider that does not answer is a page that says
so, and signing out ends the studio's session."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from studio.models import SignInIdentity
from studio.models import StudioSession as Session
from studio.oidc_config import GroupAccess, OidcConfig
from studio.permissions import Role, user_roles
from tests.conftest import TEST_PASSWORD
from tests.oidc_provider import Provider, ProviderInstallError, ensure_installed
from tests.ports import free_port

pytestmark = [
    pytest.mark.browser,
    pytest.mark.subprocess,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("role_groups"),
]

CLIENT_ID, CLIENT_SECRET = "studio", "studio-test-client-secret-0123456789"
MAPPING = {
    "studio-leads": GroupAccess(role="lead", projects=("Desktop agents",)),
    "studio-annotators": GroupAccess(role="annotator", projects=("Desktop agents",)),
}


@pytest.fixture(scope="module")
def provider(live_server, tmp_path_factory):
    try:
        folder = ensure_installed()
    except ProviderInstallError as error:
        pytest.fail(f"cannot install the OpenID Connect provider (npm needs the package registry):\n{error}")
    client = {
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "redirect_uris": [f"{live_server.url}/login/oidc/callback/"],
    }
    running = Provider(folder, free_port(), tmp_path_factory.mktemp("oidc") / "provider.json", [client]).start()
    yield running
    running.stop()


def config_for(issuer: str, **extra) -> OidcConfig:
    return OidcConfig(
        issuer=issuer, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, groups=MAPPING, label="Test ID", **extra
    )


@pytest.fixture
def sso(settings, provider, db):
    from traces.services import project_create

    provider.accounts = {
        "alice-sub": {"preferred_username": "alice", "email": "alice@example.org", "groups": ["studio-leads"]},
        "mallory-sub": {"preferred_username": "mallory", "groups": ["studio-leads"]},
    }
    provider.wrong_audience = ["mallory-sub"]
    provider.update()
    settings.OIDC = config_for(provider.issuer)
    project_create(name="Desktop agents")
    return provider


def sign_in(browser, base_url: str, account: str, *, before_return=None, callbacks: list | None = None):
    """A fresh browser: the studio's "Sign in with" button, the provider's sign-in and consent pages; returns the page
    back at the studio (``before_return`` runs while the provider's sign-in page is open; ``callbacks`` gathers the
    callback URLs the provider sent the browser to)."""
    page = browser.new_context().new_page()
    if callbacks is not None:
        page.on("request", lambda request: callbacks.append(request.url) if "/oidc/callback/" in request.url else None)
    page.goto(f"{base_url}/login/")
    page.click("a.sso-sign-in")
    page.wait_for_selector("input[name=login]")
    if before_return is not None:
        before_return(page)
    page.fill("input[name=login]", account)
    page.fill("input[name=password]", "any password: the provider's development sign-in")
    with page.expect_navigation():
        page.click("button[type=submit]")
    if not page.url.startswith(base_url):
        with page.expect_navigation(url=lambda url: url.startswith(base_url)):
            page.click("button[type=submit]")  # the consent page: "Continue"
    page.wait_for_load_state()
    return page


def refusal_on(page) -> str:
    return page.inner_text(".sso-message")


def test_sign_in_makes_the_person_with_their_groups_access_and_sign_out_ends_the_session(
    sso, browser, live_server, artifacts_dir
):
    page = sign_in(browser, live_server.url, "alice-sub")
    assert "/projects/" in page.url and "Desktop agents" in page.inner_text("main")
    page.screenshot(path=str(artifacts_dir / "sso-signed-in.png"))
    alice = get_user_model().objects.get(username="alice")
    assert user_roles(alice) == {Role.LEAD} and not alice.has_usable_password()
    assert set(alice.memberships.values_list("project__name", flat=True)) == {"Desktop agents"}
    assert SignInIdentity.objects.get(user=alice).subject == "alice-sub"

    sessions_before = Session.objects.count()

    # Sign out: the session ends in the database, and the next page asks for a login.
    page.click("summary:has-text('Account')")
    page.click("button:has-text('Log out')")
    page.wait_for_url(lambda url: "/login/" in url)
    assert Session.objects.count() < sessions_before
    page.goto(f"{live_server.url}/projects/")
    assert "/login/" in page.url


def test_a_replayed_callback_is_refused(sso, browser, live_server, artifacts_dir):
    seen: list[str] = []
    page = sign_in(browser, live_server.url, "alice-sub", callbacks=seen)
    assert "/projects/" in page.url
    assert seen, "the provider sent the browser back to the callback"
    response = page.goto(seen[0])
    assert response.status == 400
    assert "expired or was already used" in refusal_on(page)
    page.screenshot(path=str(artifacts_dir / "sso-replayed-state.png"))


def test_an_expired_state_is_refused(sso, settings, browser, live_server):
    settings.OIDC = config_for(sso.issuer, state_ttl_s=1)
    page = sign_in(browser, live_server.url, "alice-sub", before_return=lambda page: page.wait_for_timeout(2500))
    assert "/login/oidc/callback/" in page.url
    assert "expired or was already used" in refusal_on(page)
    assert not get_user_model().objects.filter(username="alice").exists()


def test_a_group_taken_away_at_the_provider_takes_the_access_away(sso, browser, live_server, artifacts_dir):
    sign_in(browser, live_server.url, "alice-sub")
    alice = get_user_model().objects.get(username="alice")
    assert user_roles(alice) == {Role.LEAD}

    sso.accounts["alice-sub"]["groups"] = ["studio-annotators", "somebody-elses-group"]
    sso.update()
    sign_in(browser, live_server.url, "alice-sub")
    alice = get_user_model().objects.get(pk=alice.pk)
    assert user_roles(alice) == {Role.ANNOTATOR}

    sso.accounts["alice-sub"]["groups"] = ["somebody-elses-group"]
    sso.update()
    page = sign_in(browser, live_server.url, "alice-sub")
    assert page.url.startswith(f"{live_server.url}/login/oidc/callback/")
    message = refusal_on(page)
    assert "no group that gives access" in message and "somebody-elses-group" in message
    page.screenshot(path=str(artifacts_dir / "sso-group-revoked.png"))
    alice = get_user_model().objects.get(pk=alice.pk)
    assert user_roles(alice) == frozenset() and not alice.memberships.exists()
    page.goto(f"{live_server.url}/projects/")
    assert "/login/" in page.url  # not signed in


def test_an_id_token_for_another_audience_is_refused(sso, browser, live_server, artifacts_dir):
    page = sign_in(browser, live_server.url, "mallory-sub")
    assert "did not check out" in refusal_on(page) and "aud" in refusal_on(page)
    page.screenshot(path=str(artifacts_dir / "sso-wrong-audience.png"))
    assert not get_user_model().objects.filter(username="mallory").exists()
    assert not SignInIdentity.objects.exists()


def test_a_provider_that_does_not_answer_is_a_page_saying_so(settings, browser, live_server, artifacts_dir):
    settings.OIDC = config_for(f"http://127.0.0.1:{free_port()}", timeout_s=2)
    page = browser.new_context().new_page()
    page.goto(f"{live_server.url}/login/")
    response_holder = []
    page.on("response", lambda response: response_holder.append(response) if "/login/oidc/" in response.url else None)
    page.click("a.sso-sign-in")
    page.wait_for_selector(".sso-message")
    assert response_holder[-1].status == 503
    assert "did not answer" in refusal_on(page)
    page.screenshot(path=str(artifacts_dir / "sso-provider-down.png"))


def test_a_misconfigured_provider_is_a_page_naming_the_problem(sso, settings, browser, live_server, artifacts_dir):
    # An issuer address the provider does not call itself (localhost for 127.0.0.1): its discovery document is refused.
    settings.OIDC = config_for(sso.issuer.replace("127.0.0.1", "localhost"))
    page = browser.new_context().new_page()
    page.goto(f"{live_server.url}/login/")
    page.click("a.sso-sign-in")
    page.wait_for_selector(".sso-message")
    assert "does not describe itself as that OpenID Connect provider" in refusal_on(page)
    page.screenshot(path=str(artifacts_dir / "sso-issuer-mismatch.png"))
    # A client secret the provider does not know: the token exchange is refused, and nobody is made.
    settings.OIDC = OidcConfig(**{**config_for(sso.issuer).__dict__, "client_secret": "not-the-secret"})
    page = sign_in(browser, live_server.url, "alice-sub")
    assert "The provider refused the sign-in" in refusal_on(page)
    assert not get_user_model().objects.filter(username="alice").exists()


def test_with_passwords_off_only_the_break_glass_admin_logs_in_by_password(
    sso, settings, browser, live_server, make_user, artifacts_dir
):
    settings.OIDC = config_for(sso.issuer, local_passwords=False, break_glass_user="root")
    make_user("root", superuser=True)
    make_user("eng", Role.ENGINEER)
    page = browser.new_context().new_page()
    page.goto(f"{live_server.url}/login/")
    assert not page.is_visible("input[name=password]")  # folded away under the admin's summary
    page.screenshot(path=str(artifacts_dir / "sso-passwords-off.png"))
    page.click("summary:has-text('Administrator')")
    page.fill("input[name=username]", "eng")
    page.fill("input[name=password]", TEST_PASSWORD)
    page.click("button[type=submit]")
    assert "/login/" in page.url and "didn't match" in page.inner_text("main")
    page.fill("input[name=username]", "root")
    page.fill("input[name=password]", TEST_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)


def test_a_provider_gone_down_since_the_last_sign_in_is_a_page_saying_so(sso, browser, live_server):
    """Last in the module: it stops the module's provider."""
    sign_in(browser, live_server.url, "alice-sub")
    sso.stop()
    page = browser.new_context().new_page()
    page.goto(f"{live_server.url}/login/")
    page.click("a.sso-sign-in")
    page.wait_for_selector(".sso-message")
    assert page.url.startswith(live_server.url) and "did not answer" in refusal_on(page)

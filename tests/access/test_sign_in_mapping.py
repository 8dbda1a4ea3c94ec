"""Single sign-on without a provider: the configuration's checks (studio.oidc_config), what groups give
(studio.oidc.access_from_groups) and the sign-in's writes on checked claims (studio.oidc.oidc_user_sign_in), the
break-glass password and API tokens with passwords off. The round trip through a real provider in a browser is
tests/access/test_single_sign_on.py."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from studio.models import SignInIdentity
from studio.oidc import SignInRefused, access_from_groups, oidc_sign_in_or_refuse
from studio.oidc_config import GroupAccess, OidcConfig, oidc_config
from studio.permissions import Role, user_roles
from tests.conftest import TEST_PASSWORD

ISSUER = "https://id.example.org"
GROUPS = {
    "studio-leads": {"role": "lead", "projects": ["Desktop"]},
    "studio-annotators": {"role": "annotator", "projects": ["Desktop", "Web"]},
    "web-only": {"projects": ["Web"]},
    "studio-admins": {"role": "admin"},
}


def environment(**extra) -> dict:
    base = {
        "STUDIO_OIDC_ISSUER": ISSUER,
        "STUDIO_OIDC_CLIENT_ID": "studio",
        "STUDIO_OIDC_CLIENT_SECRET": "a-secret",
        "STUDIO_OIDC_GROUPS": json.dumps(GROUPS),
    }
    return {k: v for k, v in {**base, **extra}.items() if v is not None}


def test_without_an_issuer_there_is_no_single_sign_on():
    assert oidc_config({}, production=True) is None
    with pytest.raises(ImproperlyConfigured, match="STUDIO_OIDC_CLIENT_ID set without STUDIO_OIDC_ISSUER"):
        oidc_config({"STUDIO_OIDC_CLIENT_ID": "studio"}, production=False)


@pytest.mark.parametrize(
    ("extra", "production", "problem"),
    [
        ({"STUDIO_OIDC_ISSUER": "http://id.example.org"}, False, r"must use https:// \(plain http only to a loopback"),
        ({"STUDIO_OIDC_ISSUER": "http://127.0.0.1:9000"}, True, "must use https:// in production"),
        ({"STUDIO_OIDC_ISSUER": "id.example.org"}, False, "must be the provider's https:// address"),
        ({"STUDIO_OIDC_CLIENT_SECRET": None}, False, "needs STUDIO_OIDC_CLIENT_ID and STUDIO_OIDC_CLIENT_SECRET"),
        ({"STUDIO_OIDC_GROUPS": None}, False, "STUDIO_OIDC_GROUPS is missing"),
        ({"STUDIO_OIDC_GROUPS": "{leads: lead}"}, False, "STUDIO_OIDC_GROUPS is not JSON"),
        ({"STUDIO_OIDC_GROUPS": "[]"}, False, "must be a JSON object of groups"),
        ({"STUDIO_OIDC_GROUPS": '{"g": {"role": "boss"}}'}, False, "role 'boss' is not one of"),
        ({"STUDIO_OIDC_GROUPS": '{"g": {"projects": "Desktop"}}'}, False, "projects must be a list"),
        ({"STUDIO_OIDC_GROUPS": '{"g": {}}'}, False, "gives nothing"),
        ({"STUDIO_OIDC_GROUPS": '{"g": {"role": "lead", "proj": []}}'}, False, "unknown keys: proj"),
        ({"STUDIO_OIDC_LOCAL_PASSWORDS": "false"}, False, "needs STUDIO_OIDC_BREAK_GLASS_USER"),
        ({"STUDIO_OIDC_LOCAL_PASSWORDS": "maybe"}, False, "must be true or false"),
        ({"STUDIO_OIDC_SCOPES": "profile groups"}, False, "must include openid"),
        ({"STUDIO_OIDC_STATE_TTL_S": "soon"}, False, "STUDIO_OIDC_STATE_TTL_S"),
    ],
)
def test_a_wrong_configuration_stops_the_start_naming_it(extra, production, problem):
    with pytest.raises(ImproperlyConfigured, match=problem):
        oidc_config(environment(**extra), production=production)


def test_a_loopback_provider_over_http_outside_production():
    config = oidc_config(environment(STUDIO_OIDC_ISSUER="http://127.0.0.1:9000/"), production=False)
    assert config.issuer == "http://127.0.0.1:9000" and config.local_passwords
    assert config.groups["web-only"] == GroupAccess(role=None, projects=("Web",))
    assert "a-secret" not in repr(config)


def test_groups_give_the_union_of_what_the_mapping_names():
    mapping = oidc_config(environment(), production=False).groups
    access = access_from_groups(["studio-annotators", "web-only", "unmapped"], mapping)
    assert access.roles == {"annotator"} and access.projects == {"Desktop", "Web"}
    assert access.groups == ("studio-annotators", "web-only")
    assert access_from_groups(["unmapped"], mapping).nothing
    both = access_from_groups(["studio-leads", "studio-admins"], mapping)
    assert both.roles == {"lead", "admin"} and both.projects == {"Desktop"}


@pytest.fixture
def config():
    return oidc_config(environment(), production=False)


@pytest.fixture
def projects(db):
    from traces.services import project_create

    return {name: project_create(name=name) for name in ("Desktop", "Web")}


def claims(sub="abc-1", groups=("studio-leads",), name="alice"):
    return {"iss": ISSUER, "sub": sub, "preferred_username": name, "groups": list(groups)}


def member_of(user) -> set[str]:
    return set(user.memberships.values_list("project__name", flat=True))


@pytest.mark.django_db
def test_the_first_sign_in_makes_the_person_and_each_sign_in_sets_their_access(config, projects):
    user = oidc_sign_in_or_refuse(claims=claims(), config=config)
    assert user.username == "alice" and not user.has_usable_password()
    assert user_roles(user) == {Role.LEAD} and member_of(user) == {"Desktop"}
    again = oidc_sign_in_or_refuse(claims=claims(groups=["studio-annotators"], name="alice-renamed"), config=config)
    again = get_user_model().objects.get(pk=again.pk)
    assert again.pk == user.pk and again.username == "alice"  # the same sub is the same person
    assert user_roles(again) == {Role.ANNOTATOR} and member_of(again) == {"Desktop", "Web"}
    admin = oidc_sign_in_or_refuse(claims=claims(groups=["studio-admins"]), config=config)
    admin = get_user_model().objects.get(pk=admin.pk)
    assert admin.is_superuser and user_roles(admin) == {Role.ADMIN} and member_of(admin) == set()


@pytest.mark.django_db
def test_a_person_whose_groups_give_nothing_is_refused_and_keeps_nothing(config, projects):
    with pytest.raises(SignInRefused, match=r"no group that gives access .*your groups: unmapped"):
        oidc_sign_in_or_refuse(claims=claims(groups=["unmapped"]), config=config)
    assert not get_user_model().objects.exists() and not SignInIdentity.objects.exists()
    user = oidc_sign_in_or_refuse(claims=claims(groups=["studio-leads", "web-only"]), config=config)
    with pytest.raises(SignInRefused, match="your groups: none"):
        oidc_sign_in_or_refuse(claims=claims(groups=[]), config=config)
    user = get_user_model().objects.get(pk=user.pk)
    assert user_roles(user) == frozenset() and member_of(user) == set()


@pytest.mark.django_db
def test_a_mapping_naming_a_missing_project_changes_nothing(config, projects):
    user = oidc_sign_in_or_refuse(claims=claims(), config=config)
    projects["Web"].delete()
    with pytest.raises(SignInRefused, match="projects that do not exist: Web"):
        oidc_sign_in_or_refuse(claims=claims(groups=["studio-annotators"]), config=config)
    user = get_user_model().objects.get(pk=user.pk)
    assert user_roles(user) == {Role.LEAD} and member_of(user) == {"Desktop"}


@pytest.mark.django_db
def test_a_local_account_of_the_same_name_is_never_taken_over(config, projects, make_user):
    make_user("alice", Role.ANNOTATOR)
    with pytest.raises(SignInRefused, match="already exists in the studio and is not linked"):
        oidc_sign_in_or_refuse(claims=claims(groups=["studio-admins"]), config=config)
    assert not SignInIdentity.objects.exists() and not get_user_model().objects.get(username="alice").is_superuser


@pytest.mark.django_db
def test_a_name_no_account_may_have_and_a_switched_off_account_are_refused(config, projects):
    with pytest.raises(SignInRefused, match=r"'Alice Smith' cannot name a studio account"):
        oidc_sign_in_or_refuse(claims=claims(name="Alice Smith"), config=config)
    assert not get_user_model().objects.exists()
    user = oidc_sign_in_or_refuse(claims=claims(), config=config)
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    with pytest.raises(SignInRefused, match="switched off"):
        oidc_sign_in_or_refuse(claims=claims(groups=["studio-admins"]), config=config)
    assert not get_user_model().objects.get(pk=user.pk).is_superuser


@pytest.mark.django_db
def test_passwords_off_leave_the_break_glass_admin_and_api_tokens(settings, make_user, engineer):
    settings.OIDC = OidcConfig(
        **{
            **oidc_config(environment(), production=False).__dict__,
            "local_passwords": False,
            "break_glass_user": "root",
        }
    )
    make_user("root", superuser=True)
    assert Client().post("/login/", {"username": "eng", "password": TEST_PASSWORD}).status_code == 200
    assert Client().post("/login/", {"username": "root", "password": TEST_PASSWORD}).status_code == 302
    page = Client().get("/login/").content.decode()
    assert "Sign in with single sign-on" in page and "Administrator's password sign-in" in page
    from studio.security import api_token_issue

    key = api_token_issue(user=engineer)
    assert Client().get("/api/token/", HTTP_AUTHORIZATION=f"Token {key}").json() == {"has_token": True}


@pytest.mark.django_db
def test_without_single_sign_on_the_login_page_is_as_before(settings):
    settings.OIDC = None
    page = Client().get("/login/").content.decode()
    assert "Sign in with" not in page and "break-glass" not in page
    assert Client().get("/login/oidc/").status_code == 404

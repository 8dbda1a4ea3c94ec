"""Single sign-on through an OpenID Connect provider (configuration: studio.oidc_config, settings.OIDC).

The protocol is Authlib's (``authlib.integrations.django_client``): discovery, the authorization code flow with
PKCE, the state and nonce kept in the session, the token exchange, and the ID token's signature (the provider's
published keys), issuer, audience, expiry and nonce checked. What is the studio's: the state's lifetime (Authlib
keeps a state an hour and does not look at its age when it is used: here a state older than
``OidcConfig.state_ttl_s`` is refused), who a sign-in is (``SignInIdentity``: the issuer and ``sub``), and what the
groups give (``access_from_groups``, applied whole at every sign-in by ``oidc_user_sign_in``: a group the provider
no longer lists takes its role and projects away).

Errors: ``SignInRefused`` (a ``Forbidden``: the person may not come in, and why) and ``SignInFailed`` (an
``Invalid``: the round trip did not check out: a stale or replayed state, a token for another audience, the
provider's own error); ``ProviderUnavailable`` when the provider does not answer. The views show each on the login
page, never a 500.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.contrib.sessions.backends.base import SessionBase
from django.db import transaction
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils import timezone
from django.utils.translation import gettext

from studio.access import project_model
from studio.errors import Forbidden, Invalid
from studio.inputs import text_problem
from studio.models import SignInIdentity
from studio.oidc_config import GroupAccess, OidcConfig
from studio.permissions import GROUP_ROLES, Role

CLIENT_NAME = "studio"


class SignInRefused(Forbidden):
    """The provider vouched for the person, but the studio lets them in nowhere (the message says why)."""


class SignInFailed(Invalid):
    """The sign-in's round trip did not check out (the message says what to do: usually, sign in again)."""


class ProviderUnavailable(Exception):
    """The provider did not answer, or answered something that is not OpenID Connect."""


# --- what the groups give ------------------------------------------------------------------------


@dataclass(frozen=True)
class Access:
    roles: frozenset[str]
    projects: frozenset[str]
    groups: tuple[str, ...]  # the groups the mapping names, of those the person has

    @property
    def nothing(self) -> bool:
        return not self.roles and not self.projects


def groups_of(claims: dict, claim: str) -> list[str]:
    """The groups claim as a list of names: a list of strings, or one string (some providers send one group so)."""
    value = claims.get(claim)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise SignInFailed(
        gettext("The provider's %(claim)s claim is neither a group name nor a list of them.") % {"claim": repr(claim)}
    )


def access_from_groups(groups: list[str], mapping: Mapping[str, GroupAccess]) -> Access:
    """What ``groups`` give under ``mapping``: the union of the mapped groups' roles and projects."""
    mapped = tuple(sorted({g for g in groups if g in mapping}))
    roles = frozenset(r for g in mapped if (r := mapping[g].role))
    projects = frozenset(p for g in mapped for p in mapping[g].projects)
    return Access(roles=roles, projects=projects, groups=mapped)


# --- the sign-in: who, and with what access -------------------------------------------------------


def _username_from(claims: dict, config: OidcConfig) -> str:
    """The new account's name: the username claim (else the email), as the studio's own accounts are named (Django's
    username rules: letters, digits and @.+-_, 150 at most), so the person can be told apart and found."""
    from django.core.exceptions import ValidationError

    name = claims.get(config.username_claim) or claims.get("email") or ""
    if not isinstance(name, str) or not name.strip() or text_problem(name):
        raise SignInFailed(
            gettext(
                "The provider sent no usable %(claim)s claim; the studio names people by it "
                "(STUDIO_OIDC_USERNAME_CLAIM)."
            )
            % {"claim": repr(config.username_claim)}
        )
    name = name.strip()
    try:
        get_user_model()._meta.get_field("username").run_validators(name)
    except ValidationError as exc:
        raise SignInRefused(
            gettext(
                "The provider's %(claim)s claim %(name)s cannot name a studio account (%(problems)s); an admin can "
                "choose another claim (STUDIO_OIDC_USERNAME_CLAIM)."
            )
            % {"claim": repr(config.username_claim), "name": repr(name[:160]), "problems": " ".join(exc.messages)}
        ) from None
    return name


@transaction.atomic
def oidc_user_sign_in(*, claims: dict, config: OidcConfig) -> User | None:
    """The studio user the provider's ``claims`` (an ID token already checked) sign in as, made on the first
    sign-in, with the roles and projects of their groups now (``access_from_groups``), set whole: what a group the
    person lost gave is taken away. Refused, with nothing written, when no group of theirs is mapped for a new
    person, or when the mapping names a project that does not exist; a known person whose groups give nothing any
    more loses every role and project and is refused."""
    issuer, subject = str(claims.get("iss") or ""), str(claims.get("sub") or "")
    if not subject:
        raise SignInFailed(gettext("The provider's ID token names no subject (sub)."))
    groups = groups_of(claims, config.groups_claim)
    access = access_from_groups(groups, config.groups)
    Projects = project_model()
    projects: list[Any] = list(Projects._default_manager.filter(name__in=access.projects))
    missing = access.projects - {p.name for p in projects}
    if missing:
        raise SignInRefused(
            gettext(
                "The group mapping (STUDIO_OIDC_GROUPS) gives projects that do not exist: %(projects)s. "
                "An admin must create them or correct the mapping; nothing was changed."
            )
            % {"projects": ", ".join(sorted(missing))}
        )
    identity = SignInIdentity.objects.select_for_update().filter(issuer=issuer, subject=subject).first()
    User = get_user_model()
    if identity is None:
        if access.nothing:
            raise SignInRefused(_no_access_message(groups, config))
        username = _username_from(claims, config)
        if User._default_manager.filter(username=username).exists():
            raise SignInRefused(
                gettext(
                    "An account named %(name)s already exists in the studio and is not linked to this provider; "
                    "an admin must rename or remove it first. Nothing was changed."
                )
                % {"name": repr(username)}
            )
        user = User(username=username, email=claims.get("email") or "")
        user.set_unusable_password()  # signs in through the provider only
        user.save()
        identity = SignInIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    user = identity.user
    if not user.is_active:
        raise SignInRefused(gettext("Your studio account is switched off; ask an admin. Nothing was changed."))
    _access_set(user, access, projects)
    identity.groups = list(groups)
    identity.last_sign_in_at = timezone.now()
    identity.save(update_fields=["groups", "last_sign_in_at"])
    return None if access.nothing else user


def _no_access_message(groups: list[str], config: OidcConfig) -> str:
    listed = ", ".join(sorted(groups)) if groups else gettext("none")
    return gettext(
        "Your account at %(provider)s has no group that gives access to the studio (your groups: %(groups)s). "
        "Ask an admin to add you to one of the mapped groups."
    ) % {"provider": config.label, "groups": listed}


def _access_set(user: User, access: Access, projects: list) -> None:
    wanted_roles = {Role(r) for r in access.roles}
    admin = Role.ADMIN in wanted_roles
    if user.is_superuser != admin or user.is_staff != admin:
        user.is_superuser = user.is_staff = admin
        user.save(update_fields=["is_superuser", "is_staff"])
    role_groups = {role.value for role in GROUP_ROLES}
    wanted_groups = [Group.objects.get_or_create(name=r.value)[0] for r in wanted_roles if r.value in role_groups]
    user.groups.remove(*user.groups.filter(name__in=role_groups).exclude(pk__in=[g.pk for g in wanted_groups]))
    user.groups.add(*wanted_groups)
    user.memberships.exclude(project__in=projects).delete()
    have = set(user.memberships.values_list("project_id", flat=True))
    for project in projects:
        if project.pk not in have:
            user.memberships.create(project=project)


def oidc_sign_in_or_refuse(*, claims: dict, config: OidcConfig) -> User:
    """``oidc_user_sign_in``, raising ``SignInRefused`` after committing the removal of a known person's access."""
    user = oidc_user_sign_in(claims=claims, config=config)
    if user is None:
        raise SignInRefused(_no_access_message(groups_of(claims, config.groups_claim), config))
    return user


# --- the provider (Authlib) ----------------------------------------------------------------------

# Authlib is untyped: its client, integration and token are Any here.


def _state_store(config: OidcConfig) -> Any:
    from authlib.integrations.django_client import DjangoIntegration

    class StateStore(DjangoIntegration):
        """Authlib's session store of a sign-in's state, nonce and PKCE verifier, refusing one older than the
        configured lifetime (Authlib's own keeps one an hour and ignores its age when it is used)."""

        expires_in = config.state_ttl_s

        def get_state_data(self, session: SessionBase, state: str) -> Any:
            entry = session.get(f"_state_{self.name}_{state}")
            if not entry or entry.get("exp", 0) < time.time():
                return None
            return entry.get("data")

    return StateStore(CLIENT_NAME)


@functools.cache
def client_for(config: OidcConfig) -> Any:
    """Authlib's client of the provider (its metadata and keys fetched once per process, on first use)."""
    from authlib.integrations.django_client import DjangoOAuth2App

    return DjangoOAuth2App(
        _state_store(config),
        CLIENT_NAME,
        client_id=config.client_id,
        client_secret=config.client_secret,
        server_metadata_url=f"{config.issuer}/.well-known/openid-configuration",
        client_kwargs={
            "scope": config.scopes,
            "code_challenge_method": "S256",
            "default_timeout": config.timeout_s,
        },
    )


def configured() -> OidcConfig | None:
    return getattr(settings, "OIDC", None)


def _metadata(client: Any, config: OidcConfig) -> dict:
    import requests

    try:
        metadata = client.load_server_metadata()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(
            f"The sign-in provider at {config.issuer} did not answer ({type(exc).__name__}). "
            f"Try again in a while; an admin can check STUDIO_OIDC_ISSUER."
        ) from None
    if metadata.get("issuer", "").rstrip("/") != config.issuer or "authorization_endpoint" not in metadata:
        client.server_metadata = {}  # fetch again next time: the operator may fix the provider
        raise ProviderUnavailable(
            f"The address {config.issuer} does not describe itself as that OpenID Connect provider "
            f"(its discovery document names issuer {metadata.get('issuer')!r}); an admin must check "
            f"STUDIO_OIDC_ISSUER."
        )
    return metadata


def authorize_redirect(request: HttpRequest, *, redirect_uri: str, config: OidcConfig) -> HttpResponseBase:
    """The redirect to the provider's sign-in, the state, nonce and PKCE verifier kept in the session."""
    client = client_for(config)
    # Asked afresh at every start: a provider that went down since the last sign-in is a page saying so here, not
    # the browser's own error at the provider's address (and its keys are fetched again with it: rotated keys).
    client.server_metadata = {}
    _metadata(client, config)
    return client.authorize_redirect(request, redirect_uri)


def claims_from_callback(request: HttpRequest, *, config: OidcConfig) -> dict:
    """The checked ID token's claims of the provider's answer in ``request`` (the callback)."""
    import requests
    from authlib.integrations.base_client import MismatchingStateError, OAuthError
    from joserfc.errors import JoseError

    client = client_for(config)
    metadata = _metadata(client, config)
    if request.GET.get("error"):
        description = request.GET.get("error_description") or request.GET["error"]
        raise SignInFailed(
            gettext("The provider did not sign you in: %(description)s") % {"description": description[:300]}
        )
    try:
        # The audience first, by name: a token minted for another client is refused as that, not by a later rule.
        token = client.authorize_access_token(
            request,
            claims_options={
                "iss": {"essential": True, "values": [metadata["issuer"]]},
                "aud": {"essential": True, "values": [config.client_id]},
            },
        )
    except MismatchingStateError:
        raise SignInFailed(
            gettext("This sign-in link has expired or was already used. Sign in again from the login page.")
        ) from None
    except OAuthError as exc:
        raise SignInFailed(
            gettext("The provider refused the sign-in: %(reason)s") % {"reason": exc.description or exc.error}
        ) from None
    except JoseError as exc:
        raise SignInFailed(
            gettext("The provider's ID token did not check out (%(error)s); nobody was signed in.") % {"error": exc}
        ) from None
    except requests.RequestException as exc:
        raise ProviderUnavailable(
            f"The sign-in provider at {config.issuer} did not answer ({type(exc).__name__}). Try again in a while."
        ) from None
    claims = token.get("userinfo")
    if not claims:
        raise SignInFailed(gettext("The provider sent no ID token; nobody was signed in."))
    return _with_userinfo(client, token, dict(claims), config)


def _with_userinfo(client: Any, token: dict[str, Any], claims: dict, config: OidcConfig) -> dict:
    """The ID token's claims with the UserInfo endpoint's added: many providers (oidc-provider among them) put a
    scope's claims, the groups too, there rather than in the ID token. The endpoint must speak of the same ``sub``
    (OpenID Connect Core 5.3.2); the ID token's own claims (iss, sub, aud, ...) are never replaced."""
    import requests
    from authlib.integrations.base_client import OAuthError

    if not client.load_server_metadata().get("userinfo_endpoint"):
        return claims
    try:
        userinfo = dict(client.userinfo(token=token))
    except (OAuthError, requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(
            f"The sign-in provider's UserInfo endpoint did not answer ({type(exc).__name__}). Try again in a while."
        ) from None
    if userinfo.get("sub") != claims.get("sub"):
        raise SignInFailed(
            gettext("The provider's UserInfo names another subject than its ID token; nobody was signed in.")
        )
    return {**userinfo, **claims}

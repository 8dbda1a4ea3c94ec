"""Single sign-on's configuration (OpenID Connect), read from the environment by studio.settings and checked whole
at start: a studio that would sign people in wrongly refuses to start, naming the variable (docs/deploy.md,
"Single sign-on"). Pure: no Django beyond its configuration error, so settings can import it.

The group mapping (``STUDIO_OIDC_GROUPS``, JSON) says what each of the provider's groups gives::

    {"studio-leads": {"role": "lead", "projects": ["Desktop agents"]},
     "studio-admins": {"role": "admin"}}

A person's access is the union over their groups that the mapping names; groups it does not name give nothing.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

# The roles a group may give (studio.permissions.Role's values; admin is a superuser).
ROLE_NAMES = ("annotator", "lead", "engineer", "admin")
LOOPBACK_NAMES = {"localhost"}


@dataclass(frozen=True)
class GroupAccess:
    role: str | None
    projects: tuple[str, ...] = ()


@dataclass(frozen=True)
class OidcConfig:
    issuer: str
    client_id: str
    client_secret: str = field(repr=False)
    groups: Mapping[str, GroupAccess]
    label: str = "single sign-on"
    groups_claim: str = "groups"
    username_claim: str = "preferred_username"
    # Asked of the provider: its groups come with one of these (oidc-provider, Keycloak: a "groups" scope).
    scopes: str = "openid profile email groups"
    # False: only BREAK_GLASS_USER may sign in with a password; everyone else signs in through the provider.
    local_passwords: bool = True
    break_glass_user: str | None = None
    # Seconds a sign-in may take between leaving for the provider and coming back (its state and nonce live so long).
    state_ttl_s: int = 600
    # Seconds the studio waits for the provider (discovery, keys, the token exchange).
    timeout_s: float = 5.0

    def __hash__(self) -> int:  # the mapping is a dict; the client is cached per configuration
        return hash((self.issuer, self.client_id, self.client_secret, self.timeout_s))


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def issuer_problem(issuer: str, *, production: bool) -> str:
    """Why the studio cannot use ``issuer`` ("" when it can): https, or plain http to this machine outside
    production (the tests' provider on loopback)."""
    parts = urlsplit(issuer)
    if not parts.hostname or parts.scheme not in ("https", "http"):
        return f"STUDIO_OIDC_ISSUER must be the provider's https:// address, not {issuer!r}"
    if parts.scheme == "http" and (production or not is_loopback(parts.hostname)):
        where = "in production" if production else "(plain http only to a loopback address, outside production)"
        return f"STUDIO_OIDC_ISSUER must use https:// {where}: {issuer!r}"
    if parts.query or parts.fragment:
        return f"STUDIO_OIDC_ISSUER takes no query or fragment: {issuer!r}"
    return ""


def groups_parse(text: str) -> dict[str, GroupAccess]:
    """``STUDIO_OIDC_GROUPS`` read and checked; ImproperlyConfigured names the first problem."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise ImproperlyConfigured(f"STUDIO_OIDC_GROUPS is not JSON: {exc}") from None
    if not isinstance(raw, dict) or not raw:
        raise ImproperlyConfigured(
            'STUDIO_OIDC_GROUPS must be a JSON object of groups, e.g. {"studio-leads": {"role": "lead"}}'
        )
    groups = {}
    for name, entry in raw.items():
        where = f"STUDIO_OIDC_GROUPS[{name!r}]"
        if not name.strip():
            raise ImproperlyConfigured("STUDIO_OIDC_GROUPS names an empty group")
        if not isinstance(entry, dict):
            raise ImproperlyConfigured(f"{where} must be an object with a role and/or projects")
        unknown = set(entry) - {"role", "projects"}
        if unknown:
            raise ImproperlyConfigured(f"{where} has unknown keys: {', '.join(sorted(unknown))} (role, projects)")
        role = entry.get("role")
        if role is not None and role not in ROLE_NAMES:
            raise ImproperlyConfigured(f"{where}: role {role!r} is not one of {', '.join(ROLE_NAMES)}")
        projects = entry.get("projects", [])
        if not isinstance(projects, list) or not all(isinstance(p, str) and p.strip() for p in projects):
            raise ImproperlyConfigured(f"{where}: projects must be a list of project names")
        if role is None and not projects:
            raise ImproperlyConfigured(f"{where} gives nothing: name a role, projects or both")
        groups[name] = GroupAccess(role=role, projects=tuple(projects))
    return groups


def oidc_config(environ: Mapping[str, str], *, production: bool) -> OidcConfig | None:
    """The configuration from ``environ``; None when STUDIO_OIDC_ISSUER is unset (passwords only, as before)."""

    def get(name: str, default: str | None = None) -> str | None:
        value = environ.get(name)
        return default if value in (None, "") else value

    issuer = get("STUDIO_OIDC_ISSUER")
    if issuer is None:
        stray = sorted(name for name in environ if name.startswith("STUDIO_OIDC_") and environ[name])
        if stray:
            raise ImproperlyConfigured(f"{', '.join(stray)} set without STUDIO_OIDC_ISSUER")
        return None
    problem = issuer_problem(issuer, production=production)
    if problem:
        raise ImproperlyConfigured(problem)
    client_id, client_secret = get("STUDIO_OIDC_CLIENT_ID"), get("STUDIO_OIDC_CLIENT_SECRET")
    if not client_id or not client_secret:
        raise ImproperlyConfigured("STUDIO_OIDC_ISSUER needs STUDIO_OIDC_CLIENT_ID and STUDIO_OIDC_CLIENT_SECRET")
    mapping = get("STUDIO_OIDC_GROUPS")
    if mapping is None:
        raise ImproperlyConfigured(
            "STUDIO_OIDC_GROUPS is missing: the JSON that maps the provider's groups to roles and projects"
        )
    local = (get("STUDIO_OIDC_LOCAL_PASSWORDS") or "true").strip().lower()
    if local not in ("true", "false"):
        raise ImproperlyConfigured(f"STUDIO_OIDC_LOCAL_PASSWORDS must be true or false, not {local!r}")
    break_glass = get("STUDIO_OIDC_BREAK_GLASS_USER")
    if local == "false" and not break_glass:
        raise ImproperlyConfigured(
            "STUDIO_OIDC_LOCAL_PASSWORDS=false needs STUDIO_OIDC_BREAK_GLASS_USER: the one admin who may still sign "
            "in with a password when the provider is down"
        )
    try:
        state_ttl_s = int(get("STUDIO_OIDC_STATE_TTL_S", "600") or 600)
        timeout_s = float(get("STUDIO_OIDC_TIMEOUT_S", "5") or 5)
    except ValueError as exc:
        raise ImproperlyConfigured(f"STUDIO_OIDC_STATE_TTL_S / STUDIO_OIDC_TIMEOUT_S: {exc}") from None
    if state_ttl_s <= 0 or timeout_s <= 0:
        raise ImproperlyConfigured("STUDIO_OIDC_STATE_TTL_S and STUDIO_OIDC_TIMEOUT_S must be positive")
    scopes = " ".join((get("STUDIO_OIDC_SCOPES", "openid profile email groups") or "").split())
    if "openid" not in scopes.split():
        raise ImproperlyConfigured(f"STUDIO_OIDC_SCOPES must include openid: {scopes!r}")
    return OidcConfig(
        issuer=issuer.rstrip("/"),
        client_id=client_id,
        client_secret=client_secret,
        groups=groups_parse(mapping),
        label=get("STUDIO_OIDC_LABEL", "single sign-on") or "single sign-on",
        groups_claim=get("STUDIO_OIDC_GROUPS_CLAIM", "groups") or "groups",
        username_claim=get("STUDIO_OIDC_USERNAME_CLAIM", "preferred_username") or "preferred_username",
        scopes=scopes,
        local_passwords=local == "true",
        break_glass_user=break_glass,
        state_ttl_s=state_ttl_s,
        timeout_s=timeout_s,
    )

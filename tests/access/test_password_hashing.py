"""Tests hash passwords with a fast hasher (tests/settings.py); production never lists it, and the login form still
works with the production hasher: this file's form login is the one that runs it."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.contrib.auth.hashers import identify_hasher
from django.test import Client
from django.urls import reverse

from studio.demo import user_create_with_role
from studio.permissions import Role
from tests import settings as test_settings
from tests.conftest import REPO, TEST_PASSWORD

FAST = "django.contrib.auth.hashers.MD5PasswordHasher"


def test_the_test_processes_hash_with_the_fast_hasher_first():
    assert settings.SETTINGS_MODULE == "tests.settings"
    assert settings.PASSWORD_HASHERS[0] == FAST
    assert settings.PASSWORD_HASHERS[1:] == test_settings.PRODUCTION_PASSWORD_HASHERS


def test_the_production_settings_never_list_the_fast_hasher():
    production = importlib.import_module("studio.settings")
    hashers = test_settings.PRODUCTION_PASSWORD_HASHERS
    assert FAST not in hashers and hashers, hashers
    assert getattr(production, "PASSWORD_HASHERS", hashers) == hashers


@pytest.mark.django_db
def test_a_user_made_in_a_test_has_a_fast_hash():
    user = user_create_with_role(username="quick", password=TEST_PASSWORD, role=Role.ANNOTATOR)
    assert identify_hasher(user.password).algorithm == "md5"
    assert user.check_password(TEST_PASSWORD)


@pytest.mark.django_db
def test_the_login_form_logs_in_with_the_production_hasher(settings):
    """The one login through the form with the production hasher: the stored hash is the production algorithm's,
    a wrong password stays on the form, the right one lands on the project list."""
    settings.PASSWORD_HASHERS = test_settings.PRODUCTION_PASSWORD_HASHERS
    user = user_create_with_role(username="formuser", password=TEST_PASSWORD, role=Role.ANNOTATOR)
    production_algorithm = identify_hasher(user.password).algorithm
    assert production_algorithm != "md5"

    client = Client()
    refused = client.post(reverse("login"), {"username": "formuser", "password": "not-the-password"})
    assert refused.status_code == 200 and "_auth_user_id" not in client.session

    response = client.post(reverse("login"), {"username": "formuser", "password": TEST_PASSWORD})
    assert response.status_code == 302 and response.url == reverse("project-list")
    assert client.session["_auth_user_id"] == str(user.pk)
    assert client.get(reverse("project-list")).status_code == 200


@pytest.mark.subprocess
@pytest.mark.django_db(transaction=True)
def test_a_child_process_checks_the_hash_the_test_wrote():
    """A server or worker the tests start inherits DJANGO_SETTINGS_MODULE, so it checks the fast hash a test wrote;
    the production settings alone would not (the control)."""
    from tests.conftest import _worker_env

    user_create_with_role(username="child", password=TEST_PASSWORD, role=Role.ANNOTATOR)
    script = (
        "import django; django.setup(); from django.contrib.auth import authenticate; "
        f"print(authenticate(username='child', password={TEST_PASSWORD!r}) is not None)"
    )

    def child_authenticates(env: dict) -> bool:
        result = subprocess.run(
            [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout.strip().splitlines()[-1] == "True"

    env = _worker_env()
    assert env["DJANGO_SETTINGS_MODULE"] == os.environ["DJANGO_SETTINGS_MODULE"] == "tests.settings"
    assert child_authenticates(env)
    assert not child_authenticates(env | {"DJANGO_SETTINGS_MODULE": "studio.settings"})


@pytest.mark.django_db
def test_a_password_stored_by_pbkdf2_logs_in_and_is_stored_again_by_argon2id(settings):
    """Hashes stored before the studio chose Argon2id still log in, and that login stores the password by Argon2id
    at the studio's parameters; a wrong password changes nothing (the control)."""
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    settings.PASSWORD_HASHERS = test_settings.PRODUCTION_PASSWORD_HASHERS
    user = user_create_with_role(username="olduser", password=TEST_PASSWORD, role=Role.ANNOTATOR)
    user.password = PBKDF2PasswordHasher().encode(TEST_PASSWORD, PBKDF2PasswordHasher().salt())
    user.save(update_fields=["password"])
    client = Client()

    client.post(reverse("login"), {"username": "olduser", "password": "not-the-password"})
    user.refresh_from_db()
    assert identify_hasher(user.password).algorithm == "pbkdf2_sha256"

    response = client.post(reverse("login"), {"username": "olduser", "password": TEST_PASSWORD})
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.password.startswith("argon2$argon2id$v=19$m=19456,t=2,p=1$"), user.password[:40]
    assert user.check_password(TEST_PASSWORD)

"""`manage.py create_user`: the first lead, admin and people of a deployment without the admin
site, with the role the permission table knows, a validated password that never appears on the command line."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from studio.permissions import Role, user_roles

GOOD = "a-long-unusual-passphrase-42"


@pytest.mark.django_db
@pytest.mark.parametrize("role", list(Role))
def test_each_role_is_created_and_can_log_in(role, monkeypatch, capsys):
    monkeypatch.setenv("FIRST_PASSWORD", GOOD)
    call_command("create_user", f"first-{role.value}", "--role", role.value, "--password-from-env", "FIRST_PASSWORD")
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=f"first-{role.value}")
    assert user_roles(user) == {role}
    assert user.is_superuser == (role == Role.ADMIN)
    assert f"created {role.value}" in capsys.readouterr().out
    assert Client().post("/login/", {"username": user.username, "password": GOOD}).status_code == 302


@pytest.mark.django_db
def test_prompted_password_is_typed_twice(monkeypatch):
    answers = iter([GOOD, GOOD + "x"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    with pytest.raises(CommandError, match="differ"):
        call_command("create_user", "typist", "--role", "lead", "--prompt")
    answers = iter([GOOD, GOOD])
    call_command("create_user", "typist", "--role", "lead", "--prompt")


@pytest.mark.django_db
def test_weak_passwords_existing_names_and_missing_sources_are_refused(monkeypatch, lead):
    monkeypatch.setenv("WEAK", "password")
    with pytest.raises(CommandError, match="too common"):
        call_command("create_user", "weakling", "--role", "annotator", "--password-from-env", "WEAK")
    with pytest.raises(CommandError, match="not set"):
        call_command("create_user", "nobody", "--role", "annotator", "--password-from-env", "UNSET_VARIABLE_X")
    monkeypatch.setenv("FIRST_PASSWORD", GOOD)
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_user", lead.username, "--role", "admin", "--password-from-env", "FIRST_PASSWORD")
    lead.refresh_from_db()
    assert not lead.is_superuser and lead.check_password("correct-horse-battery-7")  # untouched
    with pytest.raises(CommandError):
        call_command("create_user", "bad\x00name", "--role", "lead", "--password-from-env", "FIRST_PASSWORD")
    # Bytes that are not UTF-8 on the command line or in the environment arrive as lone surrogates; an address
    # past its column PostgreSQL refuses: each is a refusal naming it, not a traceback.
    with pytest.raises(CommandError, match="valid email"):
        call_command(
            "create_user",
            "mailer",
            "--role",
            "lead",
            "--email",
            "a\udcff@example.org",
            "--password-from-env",
            "FIRST_PASSWORD",
        )
    with pytest.raises(CommandError, match="254"):
        call_command(
            "create_user",
            "mailer",
            "--role",
            "lead",
            "--email",
            "e" * 300 + "@example.org",
            "--password-from-env",
            "FIRST_PASSWORD",
        )
    monkeypatch.setenv("SURROGATE", GOOD + "\udcff")
    with pytest.raises(CommandError, match="password contains a lone surrogate"):
        call_command("create_user", "mailer", "--role", "lead", "--password-from-env", "SURROGATE")
    with pytest.raises(CommandError):  # neither --password-from-env nor --prompt
        call_command("create_user", "someone", "--role", "lead")

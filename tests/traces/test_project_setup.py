"""Setting a project up: `create_project`, `import_traces --create`, the project creation and
settings pages for leads and admins, `/admin/` answering a non-admin with a 403 page, `make compose-check` with no
environment."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Annotation
from studio.permissions import Role
from tests.conftest import REPO, login
from tests.fixtures_annotation import import_folder, write_native_trace
from traces.models import Membership, Project
from traces.services import ProjectRefused, project_save


@pytest.mark.django_db
def test_create_project_command_sets_platform_convention_window_and_members(annotator, capsys):
    call_command(
        "create_project",
        "Phones",
        "--platform",
        "mobile",
        "--coordinates",
        "smart-resize-pixels",
        "--history-window",
        "3",
        "--member",
        annotator.username,
    )
    project = Project.objects.get(name="Phones")
    assert (project.platform, project.coordinate_convention, project.history_window) == (
        "mobile",
        "smart-resize-pixels",
        3,
    )
    assert list(project.memberships.values_list("user__username", flat=True)) == [annotator.username]
    assert project.error_categories  # the shared vocabulary
    assert "created project 'Phones'" in capsys.readouterr().out

    with pytest.raises(CommandError, match=rf"already exists \(id {project.pk}\).*/projects/{project.pk}/settings/"):
        call_command("create_project", "Phones")
    with pytest.raises(CommandError, match="history_window: The history window is between 1 and 20"):
        call_command("create_project", "Wide", "--history-window", "0")
    with pytest.raises(CommandError, match="no active user named nobody"):
        call_command("create_project", "Lonely", "--member", "nobody")
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("create_project", "Odd", "--coordinates", "inches")
    call_command("create_project", "Plain")
    plain = Project.objects.get(name="Plain")
    assert (plain.platform, plain.coordinate_convention, plain.history_window) == ("desktop", "relative-1000", 5)


@pytest.mark.django_db
def test_import_traces_names_the_way_to_a_missing_project_and_creates_it_on_request(tmp_path, capsys):
    folder = write_native_trace(tmp_path / "t", steps=2, external_id="cli-create")
    with pytest.raises(CommandError) as refused:
        call_command("import_traces", str(folder), "--project", "Fresh start")
    message = str(refused.value)
    assert "no project named 'Fresh start'" in message
    assert "manage.py create_project 'Fresh start'" in message and "--create" in message
    assert not Project.objects.filter(name="Fresh start").exists()

    call_command("import_traces", str(folder), "--project", "Fresh start", "--create")
    project = Project.objects.get(name="Fresh start")
    assert project.traces.get().external_id == "cli-create"
    assert "created project 'Fresh start'" in capsys.readouterr().out
    call_command("import_traces", str(folder), "--project", "Fresh start", "--create")  # exists now: reused
    assert Project.objects.filter(name="Fresh start").count() == 1


@pytest.mark.django_db
def test_a_lead_creates_a_project_and_becomes_its_member(client, lead, annotator, engineer):
    for outsider in (annotator, engineer):
        client.force_login(outsider)
        assert client.get("/projects/new/").status_code == 403
        assert client.post("/projects/new/", {"name": "Sneaky"}).status_code == 403
    client.force_login(lead)
    page = client.get("/projects/new/").content.decode()
    assert 'name="coordinate_convention"' in page and 'name="members"' in page
    response = client.post(
        "/projects/new/",
        {
            "name": "Web shop",
            "platform": "web",
            "coordinate_convention": "screen-pixels",
            "history_window": 4,
            "error_categories": "wrong element\n\n wrong text \nwrong element",
            "members": [annotator.pk],
        },
    )
    project = Project.objects.get(name="Web shop")
    assert response.status_code == 302 and response["Location"] == f"/projects/{project.pk}/traces/"
    assert (project.platform, project.coordinate_convention, project.history_window) == ("web", "screen-pixels", 4)
    assert project.error_categories == ["wrong element", "wrong text"]
    assert set(project.memberships.values_list("user__username", flat=True)) == {lead.username, annotator.username}

    bad = client.post(
        "/projects/new/",
        {
            "name": "Web shop",
            "platform": "web",
            "coordinate_convention": "x",
            "history_window": 99,
            "error_categories": " \n ",
        },
    )
    assert bad.status_code == 400
    text = bad.content.decode()
    for expected in ("already exists", "Select a valid choice", "between 1 and 20", "at least one error category"):
        assert expected in text, expected


@pytest.mark.django_db
def test_project_settings_for_its_leads_with_the_rules_that_keep_data_right(
    client, project, tmp_path, lead, annotator, make_user
):
    other_lead = make_user("other-lead", Role.LEAD)
    client.force_login(other_lead)
    assert client.get(f"/projects/{project.pk}/settings/").status_code == 404  # not their project
    client.force_login(annotator)
    assert client.get(f"/projects/{project.pk}/settings/").status_code == 403

    client.force_login(lead)
    data = {
        "name": project.name,
        "platform": "desktop",
        "coordinate_convention": "smart-resize-pixels",
        "history_window": 2,
        "error_categories": "\n".join(project.error_categories + ["slow"]),
        "members": [],
    }
    response = client.post(f"/projects/{project.pk}/settings/", data)
    assert response.status_code == 302
    project.refresh_from_db()
    assert (project.coordinate_convention, project.history_window, project.error_categories[-1]) == (
        "smart-resize-pixels",
        2,
        "slow",
    )
    # Members: only the lead stays (the form cannot lock its own user out); annotator and engineer were removed.
    assert list(project.memberships.values_list("user__username", flat=True)) == [lead.username]

    import_folder(project, write_native_trace(tmp_path / "t", steps=2))
    page = client.get(f"/projects/{project.pk}/settings/").content.decode()
    assert "Fixed: the project holds 1 trace read in this convention" in page
    response = client.post(f"/projects/{project.pk}/settings/", {**data, "coordinate_convention": "relative-1000"})
    assert response.status_code == 302  # the disabled field keeps the stored convention
    project.refresh_from_db()
    assert project.coordinate_convention == "smart-resize-pixels"
    with pytest.raises(ProjectRefused, match="holds 1 trace whose points are read in smart-resize-pixels"):
        project_save(actor=lead, project=project, fields={"coordinate_convention": "relative-1000"})

    Membership.objects.create(project=project, user=annotator)
    trace = project.traces.get()
    Annotation.objects.create(trace=trace, project=project, annotator=annotator, error_category="slow")
    response = client.post(
        f"/projects/{project.pk}/settings/",
        {**data, "error_categories": "\n".join(project.error_categories[:-1]), "members": [annotator.pk]},
    )
    assert (
        response.status_code == 400
        and "Annotations use these categories; keep them: slow." in response.content.decode()
    )
    project.refresh_from_db()
    assert "slow" in project.error_categories


@pytest.mark.django_db
def test_admin_site_gives_a_signed_in_non_admin_a_403_page_not_a_loop(client, lead, annotator, admin_user):
    for user in (lead, annotator):
        client.force_login(user)
        response = client.get("/admin/", follow=True)
        assert response.status_code == 403 and len(response.redirect_chain) <= 1
        assert "You cannot open the admin site." in response.content.decode()
        assert "<nav" in response.content.decode() or "topbar" in response.content.decode()  # the studio's own page
        assert client.get("/admin/traces/project/").status_code == 403
    client.force_login(admin_user)
    assert client.get("/admin/").status_code == 200
    client.logout()
    anonymous = client.get("/admin/")
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]


def test_make_compose_check_needs_no_environment():
    if not shutil.which("docker-compose") or not shutil.which("make"):
        pytest.skip("docker-compose (Debian package) or make is not installed; .ci/run installs them")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("STUDIO_", "POSTGRES_", "MINIO_"))}
    result = subprocess.run(["make", "-s", "compose-check"], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    # The throwaway key is lent to the check only: the compose file itself still demands a real one.
    plain = subprocess.run(
        ["docker-compose", "-f", "docker-compose.yml", "config", "-q"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert plain.returncode != 0 and "STUDIO_SECRET_KEY" in plain.stderr


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_lead_sets_up_a_project_in_the_browser(browser, live_server, lead, annotator, artifacts_dir):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    failed = []
    expected_refusals = ("/projects/new/", "/admin/")  # the form's 400 and the admin's 403 are what is tested
    page.on(
        "response",
        lambda r: (
            failed.append(f"{r.status} {r.url}") if r.status >= 400 and not r.url.endswith(expected_refusals) else None
        ),
    )
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/projects/")
    page.click("#project-new")
    page.fill("#id_name", "Phone tasks")
    page.select_option("#id_platform", "mobile")
    page.select_option("#id_coordinate_convention", "smart-resize-pixels")
    page.fill("#id_history_window", "30")
    page.check(f"input[name=members][value='{annotator.pk}']")
    page.click("#project-form button[type=submit]")
    error = page.locator("[data-field-error=history_window]")
    assert "between 1 and 20" in error.inner_text()
    assert page.input_value("#id_name") == "Phone tasks"  # what was typed is kept
    page.screenshot(path=str(artifacts_dir / "project-create-error.png"), full_page=True)
    page.fill("#id_history_window", "3")
    page.click("#project-form button[type=submit]")
    page.wait_for_url("**/traces/")
    project = Project.objects.get(name="Phone tasks")
    assert (project.platform, project.coordinate_convention, project.history_window) == (
        "mobile",
        "smart-resize-pixels",
        3,
    )
    assert "Project Phone tasks created" in page.inner_text("p.notice")
    page.click(f"main a[href='/projects/{project.pk}/settings/']")  # the project's, not the account's settings
    page.wait_for_selector("#project-form")
    assert page.input_value("#id_history_window") == "3"
    assert page.is_checked(f"input[name=members][value='{annotator.pk}']")
    page.screenshot(path=str(artifacts_dir / "project-settings.png"), full_page=True)
    page.goto(f"{live_server.url}/admin/")
    assert "You cannot open the admin site." in page.inner_text("#forbidden")
    page.screenshot(path=str(artifacts_dir / "admin-forbidden.png"))
    assert not failed, failed
    context.close()

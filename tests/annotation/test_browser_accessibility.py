"""axe-core (tests/axe_core.py) on every page each role reaches, in English and in Chinese, and on the workspace's
editing states: no critical or serious finding (WCAG 2.1 A / AA and axe's best practices), Django's 404 and 403 pages
included, and the pages of a new member's qualification (its workspace and the feedback after an answer).

Each role's pages are found as a person finds them: from the project list, every link of the site a page shows is
followed (the admin site, the API and downloads aside), one page per shape of address (``/traces/7/`` stands for
every trace's page), so a new page is checked the day a link leads to it."""

from __future__ import annotations

import re
from collections import deque
from urllib.parse import urlsplit

import pytest

from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.quality import services as quality
from annotation.services import annotation_transition, lease_next_trace
from exports.services import export_job_create
from insights.services import slice_create
from studio.permissions import Role
from studio.services import account_settings_update
from tests.annotation.test_browser_workspace import open_next_trace
from tests.axe_core import NpmInstallError, axe_source, page_violations
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace
from tests.fixtures_export import accepted_error
from tests.fixtures_quality import error_fields, hand_in
from traces.models import Trace
from traces.services import membership_add

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

# Not the studio's pages: Django's admin, the API (and its Swagger page), files, and what a GET would change.
SKIPPED = re.compile(r"^/(admin|api|static|media|screenshots|logout)/|\.(csv|zip|png|jpg|json|parquet)$|/csv/$|/file/")
PAGES_PER_ROLE = 40
EXPORT_FORMAT = "trl"
LANGUAGES = ["en", "zh-hans"]


@pytest.fixture(scope="module")
def axe():
    try:
        return axe_source()
    except NpmInstallError as error:
        pytest.skip(f"axe-core could not be installed: {error}")


@pytest.fixture
def world(project, annotator, lead, engineer, make_user, tmp_path):
    """A project with a trace under review (an error and its correction), an accepted one made gold, a Chinese one and
    one left for the queue; an import's and an export's job; every role."""
    from django.db import transaction

    jobs = []
    for name, instruction, language in (
        ("review", "Open the display settings", None),
        ("accepted", "Open the sound settings", None),
        ("chinese", "打开显示设置", None),
        ("queued", "Open the network settings", "en"),
    ):
        folder = write_native_trace(
            tmp_path / name, steps=3, instruction=instruction, external_id=name, language=language
        )
        jobs.append(import_folder(project, folder))
    with transaction.atomic():
        answer = Annotation.objects.create(
            trace=Trace.objects.get(external_id="review"),
            project=project,
            annotator=annotator,
            verdict=Verdict.ERROR,
            tau=2,
            error_category=project.error_categories[0],
            corrected_thought="I should open Display first.",
            corrected_action="click(start_box='(300,260)')",
            reflection_thought="That was the wrong panel.",
            reflection_action="hotkey(key='alt left')",
        )
        annotation_transition(annotation=answer, to=AnnotationStatus.SUBMITTED, actor=annotator)
    reference = accepted_error(Trace.objects.get(external_id="accepted"), annotator=annotator, reviewer=lead, tau=2)
    quality.gold_mark_answer(annotation_id=reference.pk, user=lead)  # a gold trace: the quality pages have one
    export = export_job_create(project=project, user=engineer, fmt=EXPORT_FORMAT, enqueue=False)
    slice_create(project=project, user=lead, name="Display settings", query={"q": "display"})  # its page, linked
    return {
        "annotator": annotator,
        "lead": lead,
        "engineer": engineer,
        "admin": make_user("root", superuser=True),
        # Pages no link of the others leads to: a job's own page.
        "jobs": [f"/imports/{jobs[0].pk}/", f"/exports/{export.pk}/"],
    }


def shape(path: str) -> str:
    """The address with its ids as N: one page of each shape is enough."""
    return re.sub(r"/\d+(?=/|$)", "/N", path)


def crawl(page, base: str, axe: str, start: list[str]) -> tuple[list[str], list[str]]:
    """The pages reached from ``start`` by the links they show (one per shape) and axe's findings on them."""
    seen, visited, findings = set(), [], []
    queue = deque(start)
    while queue and len(visited) < PAGES_PER_ROLE:
        path = queue.popleft()
        if shape(path) in seen or SKIPPED.search(path):
            continue
        seen.add(shape(path))
        response = page.goto(base + path, wait_until="load")
        if response is None or "text/html" not in (response.headers.get("content-type") or ""):
            continue
        assert response.status < 500, f"{path}: {response.status}"
        page.wait_for_timeout(300)  # the page's scripts draw what they fetch
        visited.append(path)
        findings += page_violations(page, axe)
        for href in page.eval_on_selector_all("a[href]", "links => links.map((a) => a.href)"):
            parts = urlsplit(href)
            if parts.netloc == urlsplit(base).netloc and shape(parts.path) not in seen:
                queue.append(parts.path + (f"?{parts.query}" if parts.query and "page=" not in parts.query else ""))
    return visited, findings


def signed_in_page(browser, live_server, user, language: str):
    """A browser page of ``user``, whose account chose ``language``."""
    account_settings_update(user=user, language=language)
    context = browser.new_context(viewport={"width": 1366, "height": 900}, bypass_csp=True)
    page = context.new_page()
    login(page, live_server.url, user.username)
    return page


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("role", ["annotator", "lead", "engineer", "admin"])
def test_every_page_a_role_reaches_passes_axe(browser, live_server, world, axe, role, language, artifacts_dir):
    page = signed_in_page(browser, live_server, world[role], language)
    start = [
        "/projects/",
        "/queue/",
        "/reviews/",
        "/dashboard/",
        "/exports/",
        "/search/",
        "/account/settings/",
        *world["jobs"],
    ]
    visited, findings = crawl(page, live_server.url, axe, start)
    print(f"\n{role} ({language}): axe on {len(visited)} pages: {' '.join(visited)}")
    assert len(visited) >= 5, visited
    assert page.evaluate("document.documentElement.lang") == language
    if role == "lead":  # a slice's page is reached from the project's slices
        assert any(shape(path) == "/slices/N/" for path in visited), visited
    assert not findings, "\n".join(findings)
    page.context.close()


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_refusal_pages_pass_axe(browser, live_server, world, axe, language):
    page = signed_in_page(browser, live_server, world["annotator"], language)
    findings = []
    assert page.goto(f"{live_server.url}/traces/999999/").status == 404
    findings += page_violations(page, axe)
    assert page.goto(f"{live_server.url}/dashboard/").status == 403
    findings += page_violations(page, axe)
    assert page.goto(f"{live_server.url}/no-such-page/").status == 404
    findings += page_violations(page, axe)
    assert not findings, "\n".join(findings)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_workspace_passes_axe_in_each_editing_state(browser, live_server, world, axe, language, artifacts_dir):
    page = signed_in_page(browser, live_server, world["annotator"], language)
    open_next_trace(page, live_server.url)
    findings = page_violations(page, axe)  # step 1, nothing decided
    page.keyboard.press("j")
    page.keyboard.press("e")  # τ: the correction's form, the category focused
    page.wait_for_selector("#ws-correction:not([hidden])")
    page.keyboard.press("1")
    page.keyboard.type("I should open Display first.")
    findings += page_violations(page, axe)
    page.keyboard.press("Tab")
    page.keyboard.press("1")  # click: the keyboard cursor is out
    findings += page_violations(page, axe)
    page.keyboard.press("Enter")
    page.keyboard.press("j")  # o_{τ+1}: the post-reflection
    page.wait_for_selector("#ws-reflection:not([hidden])")
    findings += page_violations(page, axe)
    page.keyboard.press("?")  # the help, a dialog
    page.wait_for_selector("#ws-help:not([hidden])")
    findings += page_violations(page, axe)
    page.keyboard.press("Escape")
    page.keyboard.press("u")  # unusable: the reason's field
    page.wait_for_selector("#ws-unusable-wrap:not([hidden])")
    findings += page_violations(page, axe)
    page.screenshot(path=str(artifacts_dir / f"workspace-axe-unusable-{language}.png"))
    assert not findings, "\n".join(findings)


def test_the_review_passes_axe_with_its_edit_form_and_steps_open(browser, live_server, world, axe):
    context = browser.new_context(viewport={"width": 1366, "height": 900}, bypass_csp=True)
    page = context.new_page()
    login(page, live_server.url, world["lead"].username)
    review = Annotation.objects.get(status=AnnotationStatus.SUBMITTED)
    page.goto(f"{live_server.url}/reviews/{review.pk}/")
    page.click("#edit-accept > summary")
    page.wait_for_selector("#edit-accept[open]")
    page.wait_for_selector("#edit-accept[data-ready='1']")
    page.click("#all-steps > summary")
    findings = page_violations(page, axe)
    page.keyboard.press("j")  # the trace viewer's next screen
    findings += page_violations(page, axe)
    assert not findings, "\n".join(findings)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_new_members_qualification_passes_axe(browser, live_server, world, axe, project, make_user, language):
    """A newcomer's qualification page, its workspace and the feedback after their answer (no link of the crawl
    reaches them: the qualification takes the place of the queue)."""
    lead = world["lead"]
    quality.quality_settings_save(
        project=project, user=lead, fields={"qualification_size": 1, "qualification_pass_mark": 0.5}
    )
    newcomer = make_user("newcomer", Role.ANNOTATOR)
    membership_add(project=project, user=newcomer)
    page = signed_in_page(browser, live_server, newcomer, language)
    findings = []
    page.goto(f"{live_server.url}/projects/{project.pk}/qualification/", wait_until="load")
    findings += page_violations(page, axe)
    answer, _ = lease_next_trace(user=newcomer, project=project)
    page.goto(f"{live_server.url}/annotations/{answer.pk}/", wait_until="load")
    page.wait_for_selector("#ws[data-ready='1']")
    findings += page_violations(page, axe)
    hand_in(answer, newcomer, **error_fields(2, category=project.error_categories[0]))
    assert page.goto(f"{live_server.url}/annotations/{answer.pk}/feedback/", wait_until="load").status == 200
    page.wait_for_selector("#feedback-parts")
    findings += page_violations(page, axe)
    assert not findings, "\n".join(findings)

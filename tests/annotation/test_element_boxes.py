"""Element boxes: the box of an action's target element, beside its point, through the one action
check (workspace draft, check-action, submit, a lead's review edit) and into the exported samples."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, AnnotationStatus
from annotation.review import services as review
from exports.builders import BuildStats, ExportOptions, Skip, iter_samples
from exports.writers import ParquetWriter, llamafactory_record, trl_record
from tests.fixtures_annotation import make_traces
from traces import grammar

BOX = [400, 450, 600, 550]  # relative-1000, on a 1920x1080 screen


def take(api_client, user, project) -> tuple[int, object]:
    claim = api_client(user).post(f"/api/projects/{project.pk}/next-trace/").json()
    return claim["annotation"]["id"], api_client(user)


@pytest.fixture
def traces(project, tmp_path):
    return make_traces(project, tmp_path, count=1, steps=3)


def test_box_helpers_of_the_grammar():
    assert grammar.box_of([600, 550, 400, 450]) == (400, 450, 600, 550)  # any corner order
    assert grammar.box_centre((400, 450, 600, 550)) == (500, 500)
    # A centre is the integer a model emits, a tie to even: 2.5 -> 2, 3.5 -> 4.
    assert grammar.box_centre((0, 0, 5, 5)) == (2, 2)
    assert grammar.box_centre((0, 0, 7, 7)) == (4, 4)
    assert grammar.box_centre((0.5, 0, 5, 5.5)) == (3, 3)
    assert grammar.point_in_box((400, 550), (400, 450, 600, 550))  # edges count
    assert not grammar.point_in_box((399.5, 500), (400, 450, 600, 550))
    assert grammar.box_iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(1 / 3)
    assert grammar.box_iou((0, 0, 10, 10), (20, 20, 30, 30)) == 0.0
    with pytest.raises(TypeError):
        grammar.box_of([1, 2, 3])
    # Converted corner by corner like points: relative-1000 -> screen pixels of 1920x1080.
    assert grammar.convert_box(
        (400, 450, 600, 550), src="relative-1000", dst="screen-pixels", width=1920, height=1080
    ) == (768, 486, 1152, 594)
    click = grammar.Action("click", {"start_box": (700, 500)})
    problems = grammar.box_problems(click, BOX, convention="relative-1000", width=1920, height=1080)
    assert problems == [
        "the point (700, 500) lies outside its element box [400, 450, 600, 550]: "
        "move the point inside the box or redraw the box"
    ]
    typing = grammar.Action("hotkey", {"key": "ctrl c"})
    assert (
        "takes no element box"
        in grammar.box_problems(typing, BOX, convention="relative-1000", width=1920, height=1080)[0]
    )
    flat = grammar.box_problems(
        grammar.Action("click", {"start_box": (500, 500)}),
        [500, 400, 500, 600],
        convention="relative-1000",
        width=1920,
        height=1080,
    )
    assert flat == ["the element box has no area: drag across the element to draw it"]
    assert grammar.action_table_json()["target_box_key"] == "target_box"


def test_a_box_without_a_point_gives_the_point_its_centre_and_is_stored(project, traces, annotator, api_client):
    pk, client = take(api_client, annotator, project)
    saved = client.put(
        f"/api/annotations/{pk}/draft/",
        {
            "version": 1,
            "verdict": "error",
            "tau": 1,
            "editor_state": {"corrected": {"type": "click", "args": {}, "target_box": [600, 550, 400, 450]}},
        },
        format="json",
    )
    assert saved.status_code == 200, saved.json()
    body = saved.json()
    assert body["corrected_action"] == "click(start_box='<|box_start|>(500,500)<|box_end|>')"
    assert body["editor_state"]["corrected"]["target_box"] == BOX
    assert Annotation.objects.get(pk=pk).editor_state["corrected"] == {
        "type": "click",
        "args": {"start_box": [500, 500]},
        "style": "box",
        "target_box": BOX,
    }
    check = client.post(
        f"/api/annotations/{pk}/check-action/",
        {"slot": "corrected", "tau": 1, "action": {"type": "click", "args": {}, "target_box": BOX}},
        format="json",
    ).json()
    assert check["valid"] and check["action"]["args"]["start_box"] == [500, 500]


def test_a_point_outside_its_box_is_refused_everywhere_with_one_message(project, traces, annotator, api_client):
    pk, client = take(api_client, annotator, project)
    outside = {"type": "click", "args": {"start_box": [700, 500]}, "target_box": BOX}
    message = "lies outside its element box [400, 450, 600, 550]: move the point inside the box or redraw the box"
    check = client.post(
        f"/api/annotations/{pk}/check-action/", {"slot": "corrected", "tau": 1, "action": outside}, format="json"
    ).json()
    assert not check["valid"] and any(message in e for e in check["errors"])
    refused = client.put(
        f"/api/annotations/{pk}/draft/",
        {"version": 1, "verdict": "error", "tau": 1, "editor_state": {"corrected": outside}},
        format="json",
    )
    assert refused.status_code == 400 and message in refused.json()["detail"]
    assert Annotation.objects.get(pk=pk).version == 1  # nothing stored
    # A box off the screen is refused by the check as a point would be.
    off = {"type": "click", "args": {"start_box": [900, 500]}, "target_box": [800, 400, 1200, 600]}
    check = client.post(
        f"/api/annotations/{pk}/check-action/", {"slot": "corrected", "tau": 1, "action": off}, format="json"
    ).json()
    assert any("element box corner (1200, 600) is outside the screen" in e for e in check["errors"])


def test_moving_tau_takes_the_box_off_with_its_point(project, traces, annotator, api_client):
    pk, client = take(api_client, annotator, project)
    action = {"type": "click", "args": {"start_box": [450, 500]}, "target_box": BOX}
    client.put(
        f"/api/annotations/{pk}/draft/",
        {"version": 1, "verdict": "error", "tau": 1, "editor_state": {"corrected": action}},
        format="json",
    )
    moved = client.put(f"/api/annotations/{pk}/draft/", {"version": 2, "tau": 2}, format="json").json()
    assert moved["editor_state"]["corrected"] == {"type": "click", "args": {}, "style": "box"}


def _submitted_with_box(project, traces, annotator, api_client) -> Annotation:
    pk, client = take(api_client, annotator, project)
    state = {
        "corrected": {"type": "click", "args": {"start_box": [450, 480]}, "target_box": BOX},
        "reflection": {"type": "click", "args": {}, "target_box": [100, 100, 200, 160]},
    }
    client.put(
        f"/api/annotations/{pk}/draft/",
        {
            "version": 1,
            "verdict": "error",
            "tau": 1,
            "error_category": "wrong element / grounding",
            "corrected_thought": "Click Settings.",
            "reflection_thought": "Wrong item; go back.",
            "editor_state": state,
        },
        format="json",
    )
    done = client.post(f"/api/annotations/{pk}/submit/", {"version": 2}, format="json")
    assert done.status_code == 200, done.json()
    return Annotation.objects.get(pk=pk)


def test_a_leads_edit_keeps_the_box_and_may_not_leave_it(project, traces, annotator, lead, api_client):
    ann = _submitted_with_box(project, traces, annotator, api_client)
    with pytest.raises(review.ReviewError, match="corrected action: the point \\(700, 500\\) lies outside"):
        review.review_edit_and_accept(
            annotation_id=ann.pk, actor=lead, edits={"corrected_action": "click(start_box='(700,500)')"}
        )
    review.review_edit_and_accept(
        annotation_id=ann.pk, actor=lead, edits={"corrected_action": "click(start_box='(590,540)')"}
    )
    ann.refresh_from_db()
    assert ann.status == AnnotationStatus.ACCEPTED
    assert ann.editor_state["corrected"] == {
        "type": "click",
        "args": {"start_box": [590, 540]},
        "style": "box",
        "target_box": BOX,
    }


def test_exports_carry_the_box_of_every_target(project, traces, annotator, lead, api_client):
    ann = _submitted_with_box(project, traces, annotator, api_client)
    review.review_accept(annotation_id=ann.pk, actor=lead)
    samples = [
        s
        for s in iter_samples(project, ExportOptions(include_valid_prefix=False, validation_fraction=0), BuildStats())
        if not isinstance(s, Skip)
    ]
    boxes = {s.kind: s.target_box for s in samples}
    assert boxes == {"error_correction": BOX, "dpo": BOX, "post_reflection": [100, 100, 200, 160]}
    correction = next(s for s in samples if s.kind == "error_correction")
    # The trained text stays the UI-TARS action; the box is the record's metadata.
    assert "target_box" not in correction.completion and "(450,480)" in correction.completion
    assert trl_record(correction)["target_box"] == BOX
    assert llamafactory_record(correction)["target_box"] == BOX
    import pyarrow as pa

    row = {name: None for name in ParquetWriter.schema(False).names} | {"target_box": BOX}
    assert pa.Table.from_pylist([row], schema=ParquetWriter.schema(False)).column("target_box").to_pylist() == [BOX]


def test_a_box_counts_only_for_the_action_it_was_drawn_for(project, traces, annotator, lead, api_client):
    # An action text changed around the editor (an older row, a bulk fix) no longer matches the drawn box: no box.
    ann = _submitted_with_box(project, traces, annotator, api_client)
    review.review_accept(annotation_id=ann.pk, actor=lead)
    Annotation.objects.filter(pk=ann.pk).update(corrected_action="click(start_box='(10,10)')")
    samples = iter_samples(project, ExportOptions(validation_fraction=0), BuildStats())
    boxes = {s.kind: s.target_box for s in samples if not isinstance(s, Skip)}
    assert boxes["error_correction"] is None and boxes["post_reflection"] == [100, 100, 200, 160]


def test_agreement_reports_box_iou_between_double_annotations(project, traces, annotator, make_user):
    from annotation.agreement import agreement_report
    from annotation.services import annotation_transition
    from studio.permissions import Role
    from traces.services import membership_add

    second = make_user("ann2", Role.ANNOTATOR)
    membership_add(project=project, user=second)
    trace = traces[0]

    def answer(user, point, box):
        action = {"type": "click", "args": {"start_box": point}, "style": "box"}
        if box is not None:
            action["target_box"] = box
        ann = Annotation.objects.create(
            trace=trace,
            project=project,
            annotator=user,
            verdict="error",
            tau=1,
            error_category="wrong element / grounding",
            corrected_action=grammar.render_action(grammar.Action.from_json(action)),
            editor_state={"corrected": action, "reflection": None},
        )
        annotation_transition(annotation=ann, to=AnnotationStatus.SUBMITTED, actor=user)
        return ann

    answer(annotator, [450, 500], [400, 450, 600, 550])
    other = answer(second, [550, 500], [500, 450, 700, 550])
    # Overlap 100 x 100 of two 200 x 100 boxes: 10000 / (20000 + 20000 - 10000) = 1/3.
    report = agreement_report(project)
    assert report.box_pairs == 1 and report.box_iou_mean == pytest.approx(1 / 3)
    assert report.as_dict()["box_iou_median"] == pytest.approx(0.3333)
    # Without a box on one side the pair gives no IoU (the click distance still counts).
    Annotation.objects.filter(pk=other.pk).update(editor_state={"corrected": None, "reflection": None})
    report = agreement_report(project)
    assert report.box_pairs == 0 and report.box_iou_mean is None and report.click_pairs == 1


def test_a_leads_edit_may_replace_or_take_off_the_box(project, traces, annotator, lead, api_client):
    ann = _submitted_with_box(project, traces, annotator, api_client)
    with pytest.raises(review.ReviewError, match="corrected box: a box must be"):
        review.review_edit_and_accept(annotation_id=ann.pk, actor=lead, edits={"corrected_box": "[1, 2]"})
    # A new box must still hold the point.
    with pytest.raises(review.ReviewError, match="lies outside its element box \\[0, 0, 100, 100\\]"):
        review.review_edit_and_accept(annotation_id=ann.pk, actor=lead, edits={"corrected_box": "[0, 0, 100, 100]"})
    # Taken off (the review page's "clear"), the point may go anywhere on the screen.
    review.review_edit_and_accept(
        annotation_id=ann.pk,
        actor=lead,
        edits={"corrected_action": "click(start_box='(700,500)')", "corrected_box": ""},
    )
    ann.refresh_from_db()
    assert ann.status == AnnotationStatus.ACCEPTED
    assert ann.editor_state["corrected"] == {"type": "click", "args": {"start_box": [700, 500]}, "style": "box"}
    assert ann.editor_state["reflection"]["target_box"] == [100, 100, 200, 160]  # the other slot keeps its box

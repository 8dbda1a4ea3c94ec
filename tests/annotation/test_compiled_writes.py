"""The draft save's UPDATE and audit INSERT compiled once (studio.db.row_update / row_insert): the rows they store and
the signals they send are the ORM save's, field for field, and the receivers on the annotation see every save."""

from __future__ import annotations

import json

import pytest
from django.db import DatabaseError, transaction
from django.db.models.signals import post_save, pre_save
from django.forms.models import model_to_dict
from django.test import Client

from annotation.models import Annotation, AnnotationStatus, AuditEvent
from annotation.services.transitions import annotation_record_edit
from studio.db import row_insert, row_update
from tests.fixtures_annotation import make_traces


class Heard:
    """Every pre_save / post_save of the annotation and audit models, with its arguments and the instance's state."""

    def __init__(self):
        self.calls: list[dict] = []

    def __call__(self, signal, sender, instance, **kwargs):
        self.calls.append(
            {
                "signal": "pre_save" if signal is pre_save else "post_save",
                "sender": sender,
                "pk_set": instance.pk is not None,
                "version": instance.version,
                "note": getattr(instance, "note", None),
                **kwargs,
            }
        )

    def __enter__(self):
        for signal in (pre_save, post_save):
            for model in (Annotation, AuditEvent):
                signal.connect(self, sender=model, weak=False, dispatch_uid=f"heard-{id(self)}-{model.__name__}")
        return self

    def __exit__(self, *exc):
        for signal in (pre_save, post_save):
            for model in (Annotation, AuditEvent):
                signal.disconnect(sender=model, dispatch_uid=f"heard-{id(self)}-{model.__name__}")


def _stored(model, pk, leave_out: set[str]) -> dict:
    row = model_to_dict(model.objects.get(pk=pk))
    return {k: v for k, v in row.items() if k not in leave_out}


EDITS = [
    {"note": "first words", "verdict": "error", "tau": 2, "editor_state": {"corrected": None, "reflection": None}},
    {"note": "", "verdict": "no_error", "tau": None, "editor_state": {}},  # a None value: NULL written in the SQL
    {"note": "third", "corrected_thought": "t*", "tau": 1},
]


@pytest.mark.django_db(transaction=True)
def test_compiled_writes_store_the_orm_saves_rows_and_send_its_signals(project, annotator, tmp_path):
    first, second = make_traces(project, tmp_path, count=2, steps=3)
    compiled = Annotation.objects.create(trace=first, project_id=project.pk, annotator=annotator)
    by_orm = Annotation.objects.create(trace=second, project_id=project.pk, annotator=annotator)
    for edit in EDITS:
        heard = {}
        for annotation, compile_it in ((compiled, True), (by_orm, False)):
            changes = {name: [getattr(annotation, name), value] for name, value in edit.items()}
            for name, value in edit.items():
                setattr(annotation, name, value)
            annotation.version += 1
            update_fields = [*edit, "version", "updated_at"]
            with Heard() as heard[compile_it], transaction.atomic():
                if compile_it:
                    row_update(annotation, update_fields)
                    annotation_record_edit(annotation=annotation, actor=annotator, changes=changes)
                else:
                    annotation.save(update_fields=update_fields)
                    AuditEvent.objects.create(
                        annotation=annotation,
                        project_id=annotation.project_id,
                        annotator_id=annotation.annotator_id,
                        version=annotation.version,
                        actor=annotator,
                        kind="edit",
                        from_status=annotation.status,
                        to_status=annotation.status,
                        changes=changes,
                        comment="",
                    )
        assert heard[True].calls == heard[False].calls
        assert [(c["signal"], c["sender"]) for c in heard[True].calls] == [
            ("pre_save", Annotation),
            ("post_save", Annotation),
            ("pre_save", AuditEvent),
            ("post_save", AuditEvent),
        ]
        annotation_post, audit_pre, audit_post = heard[True].calls[1], heard[True].calls[2], heard[True].calls[3]
        assert annotation_post["update_fields"] == frozenset(edit) | {"version", "updated_at"}
        assert annotation_post["created"] is False and annotation_post["raw"] is False
        assert audit_pre["pk_set"] is False and audit_post["pk_set"] is True and audit_post["created"] is True
        leave_out = {"id", "trace", "created_at", "updated_at"}
        assert _stored(Annotation, compiled.pk, leave_out) == _stored(Annotation, by_orm.pk, leave_out)
        stored = Annotation.objects.get(pk=compiled.pk)
        assert stored.updated_at == compiled.updated_at  # the auto_now stamp on the instance is the stored one
        assert stored.version == compiled.version
        for field, value in edit.items():
            assert getattr(stored, field) == value
    audits = {
        which: list(AuditEvent.objects.filter(annotation=a).order_by("id"))
        for which, a in (("c", compiled), ("o", by_orm))
    }
    assert len(audits["c"]) == len(audits["o"]) == len(EDITS)
    for mine, theirs in zip(audits["c"], audits["o"], strict=True):
        leave_out = {"id", "annotation"}
        row, other = model_to_dict(mine), model_to_dict(theirs)
        assert {k: v for k, v in row.items() if k not in leave_out} == {
            k: v for k, v in other.items() if k not in leave_out
        }
        assert mine.at is not None and mine.version is not None


@pytest.mark.django_db(transaction=True)
def test_a_compiled_insert_gives_the_instance_its_stored_id_and_stamp(project, annotator, tmp_path):
    (trace,) = make_traces(project, tmp_path, count=1, steps=3)
    annotation = Annotation.objects.create(trace=trace, project_id=project.pk, annotator=annotator)
    events = []
    for k in range(3):
        event = AuditEvent(
            annotation=annotation,
            project_id=project.pk,
            annotator_id=annotator.pk,
            actor=annotator,
            kind="edit",
            changes={"note": ["", f"n{k}"]},
            version=k + 1,
        )
        row_insert(event)
        events.append(event)
    assert len({e.pk for e in events}) == 3
    for event in events:
        stored = AuditEvent.objects.get(pk=event.pk)
        assert stored.at == event.at and stored.changes == event.changes and stored.version == event.version
        assert not event._state.adding


@pytest.mark.django_db(transaction=True)
def test_a_compiled_update_of_a_row_gone_is_refused_as_the_orm_refuses_it(project, annotator, tmp_path):
    (trace,) = make_traces(project, tmp_path, count=1, steps=3)
    annotation = Annotation.objects.create(trace=trace, project_id=project.pk, annotator=annotator)
    Annotation.objects.filter(pk=annotation.pk).delete()
    annotation.note = "nowhere"
    with pytest.raises(DatabaseError, match="did not affect any rows"), transaction.atomic():
        row_update(annotation, ["note"])
    with pytest.raises(ValueError, match="do not exist"):
        row_update(annotation, ["no_such_field"])


@pytest.mark.django_db(transaction=True)
def test_the_receivers_on_the_annotation_see_an_api_draft_save(project, annotator, tmp_path):
    """The search index's receiver (insights.receivers) follows a rejected answer's edits: a draft save through the
    API, written by the compiled UPDATE, still reaches it, and the signals carry the saved values."""
    from insights.models import SearchEntry

    (trace,) = make_traces(project, tmp_path, count=1, steps=3)
    annotation = Annotation.objects.create(
        trace=trace,
        project_id=project.pk,
        annotator=annotator,
        status=AnnotationStatus.REJECTED,
        verdict="error",
        tau=1,
        error_category="",
        corrected_thought="t*",
    )
    client = Client()
    client.force_login(annotator)
    with Heard() as heard:
        response = client.put(
            f"/api/annotations/{annotation.pk}/draft/",
            data=json.dumps({"version": annotation.version, "note": "the zebra-striped banner"}),
            content_type="application/json",
        )
    assert response.status_code == 200, response.content
    saved = [c for c in heard.calls if c["signal"] == "post_save" and c["sender"] is Annotation]
    assert len(saved) == 1 and saved[0]["note"] == "the zebra-striped banner"
    assert saved[0]["version"] == response.json()["version"]
    assert [c["created"] for c in heard.calls if c["signal"] == "post_save" and c["sender"] is AuditEvent] == [True]
    entry = SearchEntry.objects.get(annotation_id=annotation.pk)
    assert "zebra-striped" in entry.document

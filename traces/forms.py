"""Forms of the trace pages: what a lead may type, validated once here (Django refuses NUL characters itself)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Field
from django.utils.text import format_lazy
from django.utils.translation import gettext, gettext_lazy

from traces.grammar import MIN_PIXELS
from traces.languages import language_problem
from traces.models import Project, default_error_categories
from traces.services import INSTRUCTION_MAX_CHARS


class TraceInstructionForm(forms.Form):
    instruction = forms.CharField(
        max_length=INSTRUCTION_MAX_CHARS,
        strip=True,
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": gettext_lazy("The task the agent was given, as it was given")}
        ),
        error_messages={"required": "Write the instruction: the task the agent was given."},
    )


HISTORY_WINDOW_MAX = 20
DOUBLE_ANNOTATORS_MIN, DOUBLE_ANNOTATORS_MAX = 2, 10
CATEGORY_MAX_CHARS = 80


class CategoriesField(forms.CharField):
    """Error categories typed one per line: trimmed, blank lines dropped, each kept once in the order typed."""

    widget = forms.Textarea(attrs={"rows": 8})

    def prepare_value(self, value):
        return "\n".join(value) if isinstance(value, (list, tuple)) else value

    def to_python(self, value):
        categories = []
        for line in (super().to_python(value) or "").splitlines():
            line = line.strip()
            if line and line not in categories:
                categories.append(line)
        return categories

    def validate(self, value):
        if not value:
            raise forms.ValidationError(gettext("Give at least one error category (one per line)."))
        too_long = [c for c in value if len(c) > CATEGORY_MAX_CHARS]
        if too_long:
            raise forms.ValidationError(
                gettext("Keep each category under %(max)s characters: %(category)s…")
                % {"max": CATEGORY_MAX_CHARS, "category": too_long[0][:40]}
            )


class UsersField(forms.ModelMultipleChoiceField):
    """People to choose, each shown by username."""

    def label_from_instance(self, obj: Any) -> str:
        return obj.username


class ProjectForm(forms.ModelForm):
    """A project's set-up, for leads and admins: what its traces are (platform, the coordinate convention exports
    write), how prompts are built (history window), what annotators choose from (error categories), and who works
    in it (members). Rules that need the stored project (a convention fixed once traces exist, categories in use)
    live in ``traces.services.project_save`` so the command line obeys them too."""

    error_categories = CategoriesField(
        initial=default_error_categories,  # a declared field takes no default from the model
        label=gettext_lazy("Error categories"),
        help_text=gettext_lazy("One per line. Annotators pick one for the first erroneous step."),
    )
    members = UsersField(
        queryset=None,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=gettext_lazy("Members"),
        help_text=gettext_lazy("Who may see and work in this project (admins see every project)."),
    )

    class Meta:
        model = Project
        fields = [
            "name",
            "description",
            "platform",
            "coordinate_convention",
            "history_window",
            "history_full_images",
            "history_max_pixels",
            "error_categories",
            "double_annotation_share",
            "double_annotation_annotators",
            "text_language",
        ]
        labels = {
            "name": gettext_lazy("Name"),
            "text_language": gettext_lazy("Language of the traces' text"),
            "description": gettext_lazy("Description"),
            "platform": gettext_lazy("Platform"),
            "coordinate_convention": gettext_lazy("Coordinate convention"),
            "history_window": gettext_lazy("History window"),
            "history_full_images": gettext_lazy("Screenshots at full size"),
            "history_max_pixels": gettext_lazy("Older screenshots' pixels"),
            "double_annotation_share": gettext_lazy("Share of traces annotated twice"),
            "double_annotation_annotators": gettext_lazy("Annotators per shared trace"),
        }
        help_texts = {
            "text_language": gettext_lazy(
                "A BCP 47 tag (zh, ja, ar, pt-BR): the pages mark the instructions, thoughts and corrections with it, "
                "so screen readers read them in that language. Empty: each trace's own, else the script of its "
                "instruction."
            ),
            "coordinate_convention": gettext_lazy("The point convention of this project's prompts and exports."),
            "history_window": format_lazy(
                gettext_lazy("Screenshots sent as images per prompt (1–{most})."), most=HISTORY_WINDOW_MAX
            ),
            "history_full_images": gettext_lazy(
                "The image budget: a prompt's last k screenshots (the current one among them) at full size, older "
                "ones smaller, each history action's points in the size of its screenshot as sent. 0: every "
                "screenshot at full size. A 1920×1080 screenshot is 2691 tokens at full size."
            ),
            "history_max_pixels": format_lazy(
                gettext_lazy(
                    "The older screenshots' pixel budget under the image budget (at least {least}; 200704 sends "
                    "1920×1080 as 588×336, 252 tokens)."
                ),
                least=MIN_PIXELS,
            ),
            "double_annotation_share": gettext_lazy(
                "0 to 1: 0.2 gives one trace in five to several annotators, never the same one twice; their "
                "answers make the quality dashboard's agreement. 0 turns double annotation off."
            ),
            "double_annotation_annotators": format_lazy(
                gettext_lazy("How many distinct annotators answer each shared trace ({least}–{most})."),
                least=DOUBLE_ANNOTATORS_MIN,
                most=DOUBLE_ANNOTATORS_MAX,
            ),
        }
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "double_annotation_share": forms.NumberInput(attrs={"min": 0, "max": 1, "step": 0.05}),
            "double_annotation_annotators": forms.NumberInput(
                attrs={"min": DOUBLE_ANNOTATORS_MIN, "max": DOUBLE_ANNOTATORS_MAX}
            ),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The image budget is optional on every form that sets a project up (a blank field keeps the default).
        for name in ("history_full_images", "history_max_pixels"):
            self.fields[name].required = False
        members = self.fields["members"]
        assert isinstance(members, UsersField)
        members.queryset = get_user_model().objects.filter(is_active=True).order_by("username")
        for name in self.DOUBLE_ANNOTATION:  # a form posted without them (a script's, an older page's) keeps them
            self.fields[name].required = False
        if self.instance.pk:
            self.fields["members"].initial = list(self.instance.memberships.values_list("user_id", flat=True))

    DOUBLE_ANNOTATION = ("double_annotation_share", "double_annotation_annotators")

    def general_fields(self):
        """The page's first column: every field but the members, the categories and double annotation's."""
        skip = {"members", "error_categories", *self.DOUBLE_ANNOTATION}
        return [self[name] for name in self.fields if name not in skip]

    def double_annotation_fields(self):
        return [self[name] for name in self.DOUBLE_ANNOTATION]

    def settings(self) -> dict:
        """The cleaned settings, as ``traces.services.project_save`` takes them."""
        return {name: self.cleaned_data[name] for name in self.Meta.fields}

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError(gettext("Give the project a name."))
        return name

    def _kept(self, name: str, value):
        """A double annotation field left out of the post keeps the project's value (a new project's: the default)."""
        if value is None:
            return getattr(self.instance, name) if self.instance.pk else project_default(name)
        return value

    def clean_text_language(self):
        if "text_language" not in self.data:  # a post that leaves it out keeps the project's
            return self.instance.text_language if self.instance.pk else ""
        tag = (self.cleaned_data["text_language"] or "").strip()
        problem = language_problem(tag)
        if problem:
            raise forms.ValidationError(problem[0].upper() + problem[1:] + ".")
        return tag

    def clean_double_annotation_share(self):
        share = self._kept("double_annotation_share", self.cleaned_data["double_annotation_share"])
        if not 0 <= share <= 1:
            raise forms.ValidationError(
                gettext("The share of traces annotated twice is between 0 (off) and 1 (every trace).")
            )
        return share

    def clean_double_annotation_annotators(self):
        count = self._kept("double_annotation_annotators", self.cleaned_data["double_annotation_annotators"])
        if not DOUBLE_ANNOTATORS_MIN <= count <= DOUBLE_ANNOTATORS_MAX:
            raise forms.ValidationError(
                gettext("A shared trace goes to %(min)s to %(max)s distinct annotators.")
                % {"min": DOUBLE_ANNOTATORS_MIN, "max": DOUBLE_ANNOTATORS_MAX}
            )
        return count

    def clean_history_full_images(self):
        full = self.cleaned_data["history_full_images"]
        if full is None:
            return Project._meta.get_field("history_full_images").default
        if not 0 <= full <= HISTORY_WINDOW_MAX:
            raise forms.ValidationError(
                gettext("Between 0 (every screenshot at full size) and %(max)s.") % {"max": HISTORY_WINDOW_MAX}
            )
        return full

    def clean_history_max_pixels(self):
        pixels = self.cleaned_data["history_max_pixels"]
        if pixels is None:
            return Project._meta.get_field("history_max_pixels").default
        if pixels < MIN_PIXELS:
            raise forms.ValidationError(
                gettext("At least %(min)s pixels (smart_resize's minimum).") % {"min": MIN_PIXELS}
            )
        return pixels

    def clean_history_window(self):
        window = self.cleaned_data["history_window"]
        if not 1 <= window <= HISTORY_WINDOW_MAX:
            raise forms.ValidationError(
                gettext("The history window is between 1 and %(max)s screenshots.") % {"max": HISTORY_WINDOW_MAX}
            )
        return window


def project_form_for_new(*, name: str, members=(), **settings) -> ProjectForm:
    """A bound ProjectForm for a new project (the command line's way in): unnamed settings take the model's
    defaults, so ``create_project`` and ``import_traces --create`` obey the page's rules."""
    data = {
        field: project_default(field)
        for field in (
            "platform",
            "coordinate_convention",
            "history_window",
            "history_full_images",
            "history_max_pixels",
            "double_annotation_share",
            "double_annotation_annotators",
        )
    }
    data.update({"name": name, "description": "", "error_categories": "\n".join(default_error_categories())})
    data.update({key: value for key, value in settings.items() if value is not None})
    data["members"] = [user.pk for user in members]
    return ProjectForm(data=data)


def project_form_for_change(project: Project, changes: dict) -> ProjectForm:
    """A bound ProjectForm for some settings of a stored project (the API's PATCH, the command line's way in): the
    settings not named keep their stored values, so the page's rules judge the project as it would be saved.
    Members are not part of it (``project_save`` keeps them when it gets none)."""
    data = {field: getattr(project, field) for field in ProjectForm.Meta.fields}
    data.update(changes)
    if isinstance(data["error_categories"], (list, tuple)):
        data["error_categories"] = "\n".join(str(c) for c in data["error_categories"])
    form = ProjectForm(data=data, instance=project)
    del form.fields["members"]
    return form


def form_errors_text(form: forms.BaseForm) -> str:
    return "; ".join(f"{field}: {' '.join(str(e) for e in errors)}" for field, errors in form.errors.items())


def project_default(name: str) -> Any:
    """The model's default of Project's field ``name`` (a form's declared field takes none from the model)."""
    field = Project._meta.get_field(name)
    assert isinstance(field, Field), f"{name} is a relation of Project, not a field"
    return field.default

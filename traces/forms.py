"""Forms of the trace pages: what a lead may type, validated once here (Django refuses NUL characters itself)."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from traces.grammar import MIN_PIXELS
from traces.models import Project, default_error_categories

INSTRUCTION_MAX_CHARS = 10_000


class TraceInstructionForm(forms.Form):
    instruction = forms.CharField(
        max_length=INSTRUCTION_MAX_CHARS,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "The task the agent was given, as it was given"}),
        error_messages={"required": "Write the instruction: the task the agent was given."},
    )


HISTORY_WINDOW_MAX = 20
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
            raise forms.ValidationError("Give at least one error category (one per line).")
        too_long = [c for c in value if len(c) > CATEGORY_MAX_CHARS]
        if too_long:
            raise forms.ValidationError(
                f"Keep each category under {CATEGORY_MAX_CHARS} characters: {too_long[0][:40]}…"
            )


class ProjectForm(forms.ModelForm):
    """A project's set-up, for leads and admins: what its traces are (platform, the coordinate convention exports
    write), how prompts are built (history window), what annotators choose from (error categories), and who works
    in it (members). Rules that need the stored project (a convention fixed once traces exist, categories in use)
    live in ``traces.services.project_save`` so the command line obeys them too."""

    error_categories = CategoriesField(
        initial=default_error_categories,  # a declared field takes no default from the model
        help_text="One per line. Annotators pick one for the first erroneous step.",
    )
    members = forms.ModelMultipleChoiceField(
        queryset=None,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Who may see and work in this project (admins see every project).",
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
        ]
        labels = {
            "coordinate_convention": "Coordinate convention",
            "history_window": "History window",
            "history_full_images": "Screenshots at full size",
            "history_max_pixels": "Older screenshots' pixels",
        }
        help_texts = {
            "coordinate_convention": "The point convention of this project's prompts and exports.",
            "history_window": f"Screenshots sent as images per prompt (1–{HISTORY_WINDOW_MAX}).",
            "history_full_images": "The image budget: a prompt's last k screenshots (the current one among them) at "
            "full size, older ones smaller, each history action's points in the size of its screenshot as sent. "
            "0: every screenshot at full size. A 1920×1080 screenshot is 2691 tokens at full size.",
            "history_max_pixels": f"The older screenshots' pixel budget under the image budget (at least "
            f"{MIN_PIXELS}; 200704 sends 1920×1080 as 588×336, 252 tokens).",
        }
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The image budget is optional on every form that sets a project up (a blank field keeps the default).
        for name in ("history_full_images", "history_max_pixels"):
            self.fields[name].required = False
        self.fields["members"].queryset = get_user_model().objects.filter(is_active=True).order_by("username")
        self.fields["members"].label_from_instance = lambda user: user.username
        if self.instance.pk:
            self.fields["members"].initial = list(self.instance.memberships.values_list("user_id", flat=True))

    def settings(self) -> dict:
        """The cleaned settings, as ``traces.services.project_save`` takes them."""
        return {name: self.cleaned_data[name] for name in self.Meta.fields}

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the project a name.")
        return name

    def clean_history_full_images(self):
        full = self.cleaned_data["history_full_images"]
        if full is None:
            return Project._meta.get_field("history_full_images").default
        if not 0 <= full <= HISTORY_WINDOW_MAX:
            raise forms.ValidationError(f"Between 0 (every screenshot at full size) and {HISTORY_WINDOW_MAX}.")
        return full

    def clean_history_max_pixels(self):
        pixels = self.cleaned_data["history_max_pixels"]
        if pixels is None:
            return Project._meta.get_field("history_max_pixels").default
        if pixels < MIN_PIXELS:
            raise forms.ValidationError(f"At least {MIN_PIXELS} pixels (smart_resize's minimum).")
        return pixels

    def clean_history_window(self):
        window = self.cleaned_data["history_window"]
        if not 1 <= window <= HISTORY_WINDOW_MAX:
            raise forms.ValidationError(f"The history window is between 1 and {HISTORY_WINDOW_MAX} screenshots.")
        return window


def project_form_for_new(*, name: str, members=(), **settings) -> ProjectForm:
    """A bound ProjectForm for a new project (the command line's way in): unnamed settings take the model's
    defaults, so ``create_project`` and ``import_traces --create`` obey the page's rules."""
    data = {
        field: Project._meta.get_field(field).default
        for field in (
            "platform",
            "coordinate_convention",
            "history_window",
            "history_full_images",
            "history_max_pixels",
        )
    }
    data.update({"name": name, "description": "", "error_categories": "\n".join(default_error_categories())})
    data.update({key: value for key, value in settings.items() if value is not None})
    data["members"] = [user.pk for user in members]
    return ProjectForm(data=data)


def form_errors_text(form: forms.Form) -> str:
    return "; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items())

"""What the prompt builder (traces.prompting) reads from a project, and its defaults: the project model's fields take
their defaults from here. Imports nothing of the studio, so the model and scripts without Django can read it."""

from __future__ import annotations

from dataclasses import dataclass

# The UI-TARS computer-use prompt (box-token action space); {instruction} and {language} are filled in.
DEFAULT_PROMPT_TEMPLATE = """You are a GUI agent. You are given a task and your action history, with screenshots. You need to perform the next action to complete the task.

## Output Format
```
Thought: ...
Action: ...
```

## Action Space

{action_space}

## Note
- Use {language} in `Thought` part.
- Write a small plan and finally summarize your next action (with its target element) in one sentence in `Thought` part.

## User Instruction
{instruction}
"""


@dataclass(frozen=True)
class PromptSettings:
    """What the builder reads from a project (``traces.models.Project`` has these fields, with these defaults):
    benchmarks and scripts that run without Django pass one of these instead of a project."""

    platform: str = "desktop"
    coordinate_convention: str = "relative-1000"
    max_pixels: int = 16384 * 28 * 28  # smart_resize's pixel budget (smart-resize-pixels projects)
    system_prompt: str = "You are a helpful assistant."
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE
    prompt_language: str = "English"
    history_window: int = 5  # screenshots sent as images (N)
    box_tokens: bool = True  # coordinates wrapped in <|box_start|>…<|box_end|>
    # The image budget: the last ``history_full_images`` screenshots of a prompt (o_i among them) at ``max_pixels``,
    # older ones smaller, at ``history_max_pixels`` (0: every screenshot at max_pixels).
    history_full_images: int = 0
    history_max_pixels: int = 256 * 28 * 28


PROMPT_DEFAULTS = PromptSettings()

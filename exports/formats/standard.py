"""The studio's own export formats (docs/formats.md describes each layout)."""

from __future__ import annotations

from exports import bundle
from exports.bundle import INTRO_PRM, INTRO_VERL, PRM_RULES, ReadmeText
from exports.formats import ExportFormat, register
from exports.writers import LlamaFactoryWriter, ParquetWriter, PrmWriter, TrlWriter, VerlWriter
from studio.catalog import gettext_noop

register(
    ExportFormat(
        name="trl",
        label=gettext_noop("TRL (JSONL, conversational)"),
        writer=TrlWriter,
        readme=ReadmeText(
            training=lambda facts: bundle.trl_section(facts.data_files, facts.pixels, facts.sequence),
            limit_goes="`max_length` of `SFTConfig` / `DPOConfig` (the code above sets it)",
        ),
    )
)
register(
    ExportFormat(
        name="llamafactory",
        label=gettext_noop("LLaMA-Factory (sharegpt JSON)"),
        writer=LlamaFactoryWriter,
        readme=ReadmeText(
            training=bundle.llamafactory_section,
            limit_goes="`cutoff_len` (`sft.yaml` and `dpo.yaml` set it)",
            bounds_go="LLaMA-Factory (`image_min_pixels`, `image_max_pixels`, already in the configs)",
        ),
    )
)
register(
    ExportFormat(
        name="parquet",
        label=gettext_noop("Parquet (images embedded)"),
        writer=ParquetWriter,
        readme=ReadmeText(
            training=lambda facts: bundle.parquet_section(facts.data_files),
            limit_goes="`max_length` of TRL's `SFTConfig` / `DPOConfig`",
        ),
    )
)
register(
    ExportFormat(
        name="prm",
        label=gettext_noop("Process supervision (TRL stepwise layout, JSONL)"),
        writer=PrmWriter,
        readme=ReadmeText(
            training=lambda facts: bundle.prm_section(facts.data_files),
            limit_goes="your trainer's sequence limit",
            title="Process-supervision dataset",
            intro=INTRO_PRM,
            rules=lambda options: PRM_RULES,
        ),
    )
)
register(
    ExportFormat(
        name="verl",
        label=gettext_noop("RL prompts with a reward (verl Parquet)"),
        writer=VerlWriter,
        readme=ReadmeText(
            training=lambda facts: bundle.verl_section(facts.data_files, facts.sections.get("reward")),
            limit_goes="`max_prompt_length` plus `max_response_length`",
            title="RL dataset",
            intro=INTRO_VERL,
            bounds_go="verl (every image of `images` carries them, and verl's image loader applies them)",
        ),
    )
)

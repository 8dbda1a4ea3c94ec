"""A TRL data file's line is ``trl_record``'s JSON, however the writer puts it together."""

import json
from types import SimpleNamespace

from exports.builders import Sample
from exports.writers import TrlWriter, _dumps, trl_record
from traces import prompting

SHOTS = [SimpleNamespace(sha256=f"{n:064x}", format="PNG") for n in range(3)]
ODD = "quotes \" and ' and \\ back\nnew\tline\x01\x1f, 中文, 😀, \u2028"


def _prompt(instruction: str) -> prompting.StatePrompt:
    return prompting.StatePrompt(
        (
            prompting.text_message("system", "You are a helpful assistant."),
            prompting.text_message("user", instruction),
            prompting.Message("user", (prompting.Part(prompting.IMAGE, image_index=0),)),
            prompting.text_message("assistant", ODD),
            prompting.Message("user", (prompting.Part(prompting.IMAGE, image_index=1),)),
        ),
        (SHOTS[0], SHOTS[1]),
    )


def test_each_line_is_the_records_json(tmp_path):
    """Pairs and single replies, sharing a prompt and not, with a box and without, text that JSON escapes and text it
    keeps: each line is ``_dumps(trl_record(sample))``."""
    shared, other = _prompt("Open the report"), _prompt(ODD)
    # One turn of a text and an image, and a history-less prompt: the parts of one turn are joined as json joins them.
    mixed = prompting.StatePrompt(
        (
            prompting.text_message("system", ODD),
            prompting.Message(
                "user", (prompting.Part(prompting.TEXT, text=ODD), prompting.Part(prompting.IMAGE, image_index=0))
            ),
        ),
        (SHOTS[2],),
    )
    samples = [
        Sample(
            "error_correction",
            "train",
            7,
            11,
            shared,
            completion="Thought: t\nAction: click()",
            target_box=[1, 2, 3, 4],
        ),
        Sample(
            "dpo", "train", 7, 11, shared, chosen="Thought: t\nAction: click()", rejected=ODD, target_box=[1, 2, 3, 4]
        ),
        Sample("dpo_on_policy", "validation", 8, 12, other, chosen=ODD, rejected="Action: wait()"),
        Sample("post_reflection", "validation", 8, 12, other, completion=""),
        Sample("error_correction", "train", 9, 13, shared, completion=ODD),
        Sample("dpo", "train", 10, 14, mixed, chosen="Action: wait()", rejected=ODD),
    ]
    writer = TrlWriter(tmp_path)
    assert [writer.line(sample) for sample in samples] == [_dumps(trl_record(sample)) + "\n" for sample in samples]
    # The controls: the samples differ in every part the line is made of, and their text tells JSON encoders apart
    # (escaping what is not ASCII, as json.dumps does by default, gives other lines).
    assert len({writer.line(sample) for sample in samples}) == len(samples)
    assert writer.line(samples[1]) != json.dumps(trl_record(samples[1]), separators=(",", ":")) + "\n"

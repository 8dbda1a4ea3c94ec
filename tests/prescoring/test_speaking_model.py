"""The tiny Qwen2-VL that speaks the grammar (prescoring.tiny, ``reply=``): saved to a directory and loaded like real
weights, its greedy reply through the product's scorer (both decoding paths, one prompt or a padded batch of
different ones) is the fixed reply, the grammar parses it, and the reply's own log-likelihood is that of a model that
is sure of it. The worker paths that use it are in test_prescore_worker.py, test_alternatives_e2e.py and
test_evaluation.py."""

from __future__ import annotations

import json

import pytest

from tests.fixtures_export import REPLIES, make_trace
from traces import grammar, prompting

pytest.importorskip("torch")
pytest.importorskip("transformers")

from prescoring import qwen2vl  # noqa: E402
from prescoring.services import image_inputs  # noqa: E402
from prescoring.tiny import MARGIN, Reply, build_tiny_qwen2vl  # noqa: E402

REPLY = Reply()


@pytest.fixture(scope="module")
def speaking_model(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("speaking") / "agent", reply=REPLY)


def requests_at(project, target: str = "") -> list[qwen2vl.ScoreRequest]:
    """Prompts that differ in their text, their screenshots (sizes, count) and their length."""
    first = make_trace(project, replies=REPLIES, external_id="one", image_seed=1)
    second = make_trace(
        project, replies=REPLIES[:2], external_id="two", image_seed=7, size=(120, 90), instruction="Turn on Wi-Fi"
    )
    out = []
    for key, (trace, index) in enumerate(((first, 1), (first, 4), (second, 2))):
        prompt = prompting.build_state_messages(trace, index, project=project)
        out.append(qwen2vl.ScoreRequest(key, prompting.to_chat_messages(prompt), image_inputs(prompt), target))
    return out


@pytest.mark.django_db
@pytest.mark.parametrize("static_decode", [False, True], ids=["dynamic", "static"])
@pytest.mark.parametrize("max_batch", [1, 3], ids=["one", "padded-batch"])
def test_greedy_decoding_writes_the_reply_the_grammar_parses_whatever_the_prompt(
    speaking_model, project, static_decode, max_batch
):
    scorer = qwen2vl.Qwen2VLScorer(speaking_model, device="cpu", static_decode=static_decode)
    requests = requests_at(project, target="Thought: Scroll.\nAction: scroll(start_box='(5,6)', direction='down')")
    assert len({len(r.images) for r in requests}) > 1
    results = scorer.score(requests, max_batch=max_batch, max_new_tokens=8)
    for result in results:
        assert result.error is None
        # thought, action, <|im_end|>: the decoding stops at the end token, well before max_new_tokens.
        assert (result.generated, result.generated_tokens) == (REPLY.text(), 3)
        parsed = grammar.parse_response(result.generated)
        assert parsed.thought == "The item I need is in the middle of the screen."
        assert [a.to_json() for a in parsed.actions] == [
            {"type": "click", "args": {"start_box": [500, 500]}, "style": "box"}
        ]
        # The recorded reply is one the model does not write: its first token alone costs about MARGIN nats.
        assert result.loglik_sum < -MARGIN / 2


@pytest.mark.django_db
def test_the_reply_scored_as_a_target_is_certain_and_the_checkpoint_says_what_it_speaks(speaking_model, project):
    scorer = qwen2vl.load_scorer(speaking_model)
    results = scorer.score(requests_at(project, target=REPLY.text()), generate=False)
    for result in results:
        assert result.error is None and result.n_tokens == 3
        assert -1e-4 < result.loglik_sum <= 0.0
    described = json.loads((speaking_model / "tiny_model.json").read_text())
    assert described["reply"] == {"thought": REPLY.thought, "actions": list(REPLY.actions)}
    assert described["random_weights"] is True


def test_a_reply_the_chain_cannot_write_or_the_grammar_cannot_parse_is_refused(tmp_path):
    with pytest.raises(ValueError, match="does not parse"):
        build_tiny_qwen2vl(tmp_path / "a", reply=Reply(actions=("click(start_box='(500,500)'",)))
    with pytest.raises(ValueError, match="distinct"):
        build_tiny_qwen2vl(tmp_path / "b", reply=Reply(actions=("wait()", "wait()")))
    with pytest.raises(ValueError, match="ties the LM head"):
        build_tiny_qwen2vl(tmp_path / "d", size="2b", reply=REPLY)
    assert not any(tmp_path.glob("*/*.safetensors"))

"""Qwen2-VL scoring with a tiny random-weight checkpoint saved to disk and loaded like real weights."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from prescoring.models import StepSuggestion, TraceSuggestion
from tests.conftest import REPO
from tests.factories import native_trace_folder
from traces import prompting
from traces.models import Trace

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from prescoring import qwen2vl, services  # noqa: E402
from prescoring.selectors import traces_by_suspicion  # noqa: E402
from prescoring.tiny import build_tiny_qwen2vl  # noqa: E402

pytestmark = pytest.mark.heavy


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny-qwen2vl") / "model")


def import_native(project, folder):
    from traces import services as trace_services

    job = trace_services.import_job_create(
        project=project, user=None, upload_name=str(folder), server_path=True, fmt="native", enqueue=False
    )
    job = trace_services.import_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.errors


@pytest.fixture
def scored_project(project, tmp_path):
    project.history_window = 3
    project.save()
    for n, steps in ((1, 4), (2, 2)):
        native_trace_folder(
            tmp_path / "src" / f"t{n}", external_id=f"t{n}", steps=steps, size=(448, 252), thought=f"Step thought {n}."
        )
    import_native(project, tmp_path / "src")
    return project


def requests_for(project):
    requests = []
    for trace in Trace.objects.filter(project=project).order_by("id"):
        steps = list(trace.steps.select_related("screenshot").order_by("index"))
        for step in steps:
            prompt = prompting.build_state_messages(trace, step.index, project=project, steps=steps)
            images = [qwen2vl.ImageInput(s.sha256, services._image_loader(s)) for s in prompt.images]
            requests.append(
                qwen2vl.ScoreRequest(
                    step.pk,
                    prompting.to_chat_messages(prompt),
                    images,
                    prompting.render_step(step, project=project, convention=trace.coordinate_convention),
                )
            )
    return requests


def test_loglik_equals_a_direct_computation_from_the_logits(scored_project, tiny_model):
    scorer = qwen2vl.load_scorer(tiny_model)
    assert qwen2vl.load_scorer(tiny_model) is scorer  # loaded once per process
    request = requests_for(scored_project)[3]  # step 4: three images in its window
    assert len(request.images) == 3
    result = scorer.score([request], generate=False)[0]
    assert result.error is None

    # The scorer's recipe (prescoring/qwen2vl.py): full forward pass, log-softmax over all positions, the reply's slice.
    encoded = scorer.encode(request)
    tensors = scorer._batch_tensors([encoded])
    with torch.no_grad():
        logits = scorer.model(**tensors).logits
    ids = tensors["input_ids"][0]
    logprobs = torch.log_softmax(logits[0, :-1].float(), -1).gather(-1, ids[1:, None])[:, 0]
    reply = logprobs[encoded.n_prompt - 1 :]
    assert result.n_tokens == reply.numel()
    assert result.loglik_sum == pytest.approx(float(reply.sum()), abs=1e-4)
    assert result.loglik_mean == pytest.approx(float(reply.mean()), abs=1e-6)
    # The reply scored is exactly the recorded step, as the export renders it, closed by <|im_end|>.
    tail = scorer.tokenizer.decode(ids[encoded.n_prompt :])
    assert tail == request.target + "<|im_end|>"


def test_batched_and_unbatched_scores_agree(scored_project, tiny_model):
    scorer = qwen2vl.load_scorer(tiny_model)
    requests = requests_for(scored_project)
    lengths = {scorer.encode(r).length for r in requests}
    assert len(lengths) > 1  # padding is exercised
    batched = scorer.score(requests, generate=False, max_batch=16)
    single = [scorer.score([r], generate=False)[0] for r in requests]
    for a, b in zip(batched, single):
        assert a.key == b.key and a.n_tokens == b.n_tokens
        assert abs(a.loglik_sum - b.loglik_sum) < 1e-4
        assert abs(a.loglik_mean - b.loglik_mean) < 1e-4


def test_length_batches_group_similar_lengths():
    items = [qwen2vl.Encoded(i, [0] * n, 1) for i, n in enumerate([100, 5000, 120, 4900, 110])]
    batches = qwen2vl.length_batches(items, batch_tokens=9000, max_batch=8)
    assert [[e.length for e in b] for b in batches] == [[100, 110, 120], [4900], [5000]]


def test_model_job_stores_tagged_suggestions_and_reports_a_failed_step(scored_project, tiny_model, lead):
    trace = Trace.objects.get(project=scored_project, external_id="t1")
    broken = trace.steps.get(index=2)
    broken.screenshot = None  # no observation: this step cannot be scored, the others can
    broken.save()
    job = services.prescore_job_create(
        project=scored_project,
        user=lead,
        scorer="qwen2vl",
        model_path=str(tiny_model),
        settings={"max_new_tokens": 8},
        enqueue=False,
    )
    job = services.prescore_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    assert (job.steps_scored, job.steps_failed) == (5, 1)
    assert [e["step"] for e in job.errors] == [2] and "no observation" in job.errors[0]["error"]
    assert job.weights_hash == qwen2vl.weights_sha256(tiny_model)
    rows = StepSuggestion.objects.filter(job=job)
    assert rows.count() == 5
    for row in rows:
        assert row.scorer == "qwen2vl" and row.weights_hash == job.weights_hash and row.settings["max_new_tokens"] == 8
        assert row.loglik_sum < 0 and row.n_tokens > 0 and 0 <= row.suspicion <= 1
    assert TraceSuggestion.objects.filter(job=job).count() == 2


def test_queue_order_by_suspicion(scored_project, lead, annotator):
    job = services.prescore_job_run(
        job_id=services.prescore_job_create(project=scored_project, user=lead, scorer="rules", enqueue=False).pk
    )
    t1, t2 = Trace.objects.filter(project=scored_project).order_by("id")
    TraceSuggestion.objects.filter(job=job, trace=t2).update(max_suspicion=0.9)
    TraceSuggestion.objects.filter(job=job, trace=t1).update(max_suspicion=0.2)
    ordered = list(traces_by_suspicion(Trace.objects.filter(project=scored_project), user=annotator))
    assert [t.pk for t in ordered] == [t2.pk, t1.pk] and ordered[0].suspicion == pytest.approx(0.9)
    scored_project.blind_prescoring = True
    scored_project.save()
    # Blind: hidden from annotators (prescore.view), still there for the lead.
    blind = Trace.objects.filter(project=scored_project)
    assert [t.suspicion for t in traces_by_suspicion(blind, user=annotator)] == [None, None]
    assert [t.pk for t in traces_by_suspicion(blind, user=lead)] == [t2.pk, t1.pk]


def test_api_start_status_suggestions_and_blind(scored_project, lead, annotator, api_client):
    from rest_framework.test import APIClient

    url = f"/api/projects/{scored_project.pk}/prescore/"
    assert api_client(annotator).post(url, {"scorer": "rules"}, format="json").status_code == 403
    bad = api_client(lead).post(url, {"scorer": "rules", "settings": {"speed": 1}}, format="json")
    assert bad.status_code == 400 and "unknown setting 'speed'" in bad.json()["detail"]
    response = api_client(lead).post(url, {"scorer": "rules"}, format="json")
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    services.prescore_job_run(job_id=job_id)  # what the worker does (test_prescore_worker runs a real one)
    status = api_client(annotator).get(f"/api/prescore/jobs/{job_id}/").json()
    assert status["status"] == "succeeded" and status["progress_done"] == 6
    trace = Trace.objects.get(project=scored_project, external_id="t1")
    data = api_client(annotator).get(f"/api/traces/{trace.pk}/suggestions/").json()
    assert data["hidden"] is False and [s["index"] for s in data["scorers"]["rules"]["steps"]] == [1, 2, 3, 4]
    scored_project.blind_prescoring = True
    scored_project.save()
    hidden = api_client(annotator).get(f"/api/traces/{trace.pk}/suggestions/").json()
    assert hidden == {"trace": trace.pk, "hidden": True, "scorers": {}, "history": []}
    assert api_client(lead).get(f"/api/traces/{trace.pk}/suggestions/").json()["scorers"]["rules"]
    assert APIClient().get(f"/api/traces/{trace.pk}/suggestions/").status_code in (401, 403)


@pytest.mark.subprocess
def test_web_process_does_not_import_torch():
    code = (
        "import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'studio.settings'); django.setup(); "
        "import studio.urls, prescoring.api, prescoring.services, traces.tasks; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


@pytest.mark.parametrize("generate", [False, True])
def test_out_of_memory_halves_the_batch_and_the_scorer_keeps_the_smaller_size(
    scored_project, tiny_model, monkeypatch, generate
):
    """A GPU's out-of-memory error, injected (no GPU here): batches of more than 3 raise torch's OutOfMemoryError
    as CUDA would, in the decoder pass of either kind of scoring (with generation, the shared prefill). The batch is
    halved and scored, nothing fails, and later batches start at the size that fit."""
    scorer = qwen2vl.load_scorer(tiny_model)
    requests = requests_for(scored_project)
    assert len(requests) == 6
    options = dict(generate=generate, max_new_tokens=4)
    expected = {r.key: r for r in scorer.score(requests, max_batch=1, **options)}
    name = "prefill_batch" if generate else "loglik_batch"
    real = getattr(scorer, name)
    sizes = []

    def fits_three(batch):
        sizes.append(len(batch))
        if len(batch) > 3:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(batch)

    monkeypatch.setattr(scorer, name, fits_three)
    try:
        first = scorer.score(requests, max_batch=16, batch_tokens=10**6, **options)
        assert sizes == [6, 3, 3] and scorer.batch_limit == 3
        assert all(r.error is None for r in first)
        assert all(abs(r.loglik_sum - expected[r.key].loglik_sum) < 1e-4 for r in first)
        assert all(r.generated == expected[r.key].generated for r in first)
        sizes.clear()
        again = scorer.score(requests, max_batch=16, batch_tokens=10**6, **options)
        assert sizes == [3, 3]  # no second out-of-memory: the worker remembers what fits
        assert all(r.error is None for r in again)
    finally:
        scorer.batch_limit = None


def test_screenshots_are_preprocessed_once_on_the_pool_and_a_broken_one_fails_only_its_step(scored_project, tiny_model):
    """score() preprocesses every distinct screenshot once (on the thread pool) for all the windows it is in;
    an image that cannot be read fails its own steps and no other."""
    import threading

    scorer = qwen2vl.load_scorer(tiny_model)
    scorer._image_cache.clear()
    scorer._feature_cache.clear()
    requests = requests_for(scored_project)
    loads: dict[str, int] = {}
    threads = set()
    lock = threading.Lock()

    def counted(image):
        def load():
            with lock:
                loads[image.key] = loads.get(image.key, 0) + 1
                threads.add(threading.get_ident())
            return image.load()

        return qwen2vl.ImageInput(image.key, load)

    broken_key = requests[-1].images[-1].key  # the last step's own screenshot: in no earlier window

    def broken():
        raise OSError("truncated PNG")

    for request in requests:
        request.images = [
            qwen2vl.ImageInput(i.key, broken) if i.key == broken_key else counted(i) for i in request.images
        ]
    distinct = {i.key for r in requests for i in r.images}
    results = scorer.score(requests, generate=False)
    assert set(loads) == distinct - {broken_key} and set(loads.values()) == {1}
    assert sum(len(r.images) for r in requests) > len(distinct)  # windows share screenshots
    assert threading.get_ident() not in threads  # read on the pool, not in the caller's thread
    failed = [r for r in results if r.error]
    assert [r.key for r in failed] == [requests[-1].key] and "truncated PNG" in failed[0].error
    assert all(r.loglik_sum is not None for r in results if not r.error)


@pytest.fixture(scope="session")
def sharp_scorer(tiny_model):
    """The tiny model with its queries and keys scaled up 8×. Random initial weights attend almost uniformly, so
    their greedy replies hardly depend on the rotary positions (a shift of one position changes no token): a
    comparison on them could not tell right positions from wrong. A separate instance, not load_scorer's."""
    scorer = qwen2vl.Qwen2VLScorer(tiny_model)
    with torch.no_grad():
        for layer in scorer.model.model.language_model.layers:
            layer.self_attn.q_proj.weight.mul_(8)
            layer.self_attn.k_proj.weight.mul_(8)
    return scorer


def two_pass_reference(scorer, batch, *, max_new_tokens):
    """The path the shared prefill replaced, kept to compare with: the log-likelihood pass (right padding, no cache),
    then the prompts alone, left-padded, through transformers' ``generate`` (its own prefill and rope deltas).
    Returns the results and each reply's token ids."""
    scored = scorer.loglik_batch(batch)
    prompts = [
        qwen2vl.Encoded(e.key, e.input_ids[: e.n_prompt], e.n_prompt, e.pixel_values, e.image_grid_thw, e.image_keys)
        for e in batch
    ]
    tensors = scorer._batch_tensors(prompts, align_prompts=True)  # prompts without replies: left padding
    with torch.inference_mode():
        out = scorer.model.generate(
            **tensors,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            eos_token_id=scorer.eos_token_id,
            pad_token_id=scorer.pad_token_id,
        )
    replies = []
    for result, row in zip(scored, out[:, tensors["input_ids"].shape[1] :].tolist()):
        end = row.index(scorer.eos_token_id) + 1 if scorer.eos_token_id in row else len(row)
        result.generated = scorer.tokenizer.decode(row[:end], skip_special_tokens=True).strip()
        result.generated_tokens = end
        replies.append(row[:end])
    return scored, replies


def mixed_batch(scorer, project):
    """The six steps, their replies lengthened by different amounts: prompts of 1 to 3 screenshots and replies
    shorter and longer than others', so both the left and the right padding of the shared prefill are exercised."""
    requests = requests_for(project)
    extra = ["", " Then I check the result twice.", "", " And wait.", " Then I scroll down to the end of the page.", ""]
    for request, more in zip(requests, extra):
        thought, action = request.target.split("\n", 1)
        request.target = f"{thought}{more}\n{action}"
    batch = sorted((scorer.encode(r) for r in requests), key=lambda e: e.length)
    replies = [e.length - e.n_prompt for e in batch]
    prompts = [e.n_prompt for e in batch]
    assert len(set(prompts)) > 1
    # The longest prompt's reply is not the longest: rope deltas taken over the padded width would be wrong for it.
    assert replies[prompts.index(max(prompts))] < max(replies)
    return requests, batch


def assert_same_scores(new, old):
    assert [a.key for a in new] == [b.key for b in old]
    for a, b in zip(new, old):
        assert a.error is None and b.error is None
        assert a.n_tokens == b.n_tokens
        assert abs(a.loglik_sum - b.loglik_sum) < 1e-4 and abs(a.loglik_mean - b.loglik_mean) < 1e-4
        assert max(abs(x - y) for x, y in zip(a.token_logprobs, b.token_logprobs)) < 1e-4
        assert (a.generated, a.generated_tokens) == (b.generated, b.generated_tokens)


def test_shared_prefill_gives_the_two_pass_scores_and_greedy_replies(scored_project, sharp_scorer, monkeypatch):
    scorer = sharp_scorer
    requests, batch = mixed_batch(scorer, scored_project)
    expected, _ = two_pass_reference(scorer, batch, max_new_tokens=12)
    assert all(r.generated_tokens == 12 for r in expected)  # random weights: no early <|im_end|>
    assert len({r.generated for r in expected}) > 1  # the replies depend on the prompt
    by_key = {r.key: r for r in expected}

    batched = scorer.score(requests, max_batch=16, batch_tokens=10**6, max_new_tokens=12)
    assert_same_scores(batched, [by_key[r.key] for r in requests])

    # One row alone: no padding at all, and the same numbers again.
    one = scorer.score([requests[2]], max_batch=1, max_new_tokens=12)
    assert_same_scores(one, [by_key[requests[2].key]])

    # The comparison can tell right positions from wrong: new tokens placed as if each row's reply had filled
    # the padded width (positions counted over the full width) change the replies of the rows with shorter ones.
    real_prefill = scorer.prefill_batch

    def full_width_positions(batch):
        prefill = real_prefill(batch)
        longest = max(e.length - e.n_prompt for e in batch)
        shift = torch.tensor([longest - (e.length - e.n_prompt) for e in batch])
        prefill.next_positions = prefill.next_positions + shift
        return prefill

    monkeypatch.setattr(scorer, "prefill_batch", full_width_positions)
    wrong = scorer.score(requests, max_batch=16, batch_tokens=10**6, max_new_tokens=12)
    assert any(r.generated != by_key[r.key].generated for r in wrong)


def test_greedy_replies_take_the_checkpoints_repetition_penalty(scored_project, sharp_scorer, monkeypatch):
    """A checkpoint's generation_config may set a repetition_penalty, which transformers' generate applied to greedy
    decoding too: both decodings apply it as generate did, to the prompt's tokens but not its left padding
    (counting the padding changed two of the six batched replies here), and to the reply so far. A strong penalty,
    so that it shows."""
    scorer = sharp_scorer
    requests, batch = mixed_batch(scorer, scored_project)
    plain, _ = two_pass_reference(scorer, batch, max_new_tokens=12)
    monkeypatch.setattr(scorer.model.generation_config, "repetition_penalty", 3.0)
    expected, _ = two_pass_reference(scorer, batch, max_new_tokens=12)
    assert any(a.generated != b.generated for a, b in zip(expected, plain))  # the penalty changes these replies
    by_key = {r.key: r for r in expected}
    for static_decode in (False, True):
        monkeypatch.setattr(scorer, "static_decode", static_decode)
        batched = scorer.score(requests, max_batch=16, batch_tokens=10**6, max_new_tokens=12)
        assert_same_scores(batched, [by_key[r.key] for r in requests])


@pytest.mark.parametrize("static_decode", [False, True])
def test_decoding_stops_at_im_end_per_row_and_at_max_new_tokens(
    scored_project, sharp_scorer, monkeypatch, static_decode
):
    """A random model hardly ever says <|im_end|>: the stop token is set, on both paths, to a token the greedy
    replies do produce, so that rows stop at different steps and the loop ends when the last row has stopped.
    Both decodings: the prefill's growing cache, and the static cache (``static_decode``)."""
    scorer = sharp_scorer
    monkeypatch.setattr(scorer, "static_decode", static_decode)
    _, batch = mixed_batch(scorer, scored_project)
    assert [n for _, n in scorer.decode_batch(scorer.prefill_batch(batch), max_new_tokens=5)] == [5] * len(batch)

    _, greedy = two_pass_reference(scorer, batch, max_new_tokens=40)
    # The 3rd token of the first row: it stops there, the other rows wherever they produce it, if they do.
    monkeypatch.setattr(scorer, "eos_token_id", greedy[0][2])
    expected, _ = two_pass_reference(scorer, batch, max_new_tokens=40)
    steps = []
    hook = scorer.model.model.language_model.register_forward_hook(lambda *args: steps.append(1))
    try:
        replies = scorer.decode_batch(scorer.prefill_batch(batch), max_new_tokens=40)
    finally:
        hook.remove()
    assert replies == [(r.generated, r.generated_tokens) for r in expected]
    counts = [n for _, n in replies]
    assert counts[0] == 3 and len(set(counts)) > 1
    # The prefill is one decoder call and gives the first token; then one call per further token of the longest.
    assert len(steps) == 1 + max(counts) - 1


def test_static_decode_gives_the_default_decodings_scores_and_replies(scored_project, sharp_scorer, monkeypatch):
    """The static decoding (``static_decode``: a preallocated cache of a fixed width, a padding mask over all of it,
    the same shapes every step) gives the default decoding's log-likelihoods, greedy replies and token counts: for
    the mixed batch (prompts of 1 to 3 screenshots, replies of different lengths: left and right padding) and for
    one row alone. On the CPU it runs uncompiled; the CUDA-graph wrapping (torch.compile mode="reduce-overhead",
    on CUDA only) cannot run here (no GPU): docs/reliability.md gives the bench a GPU session runs for it."""
    scorer = sharp_scorer
    requests, _ = mixed_batch(scorer, scored_project)
    batched = dict(max_batch=16, batch_tokens=10**6)
    expected = scorer.score(requests, max_new_tokens=12, **batched)
    expected_one = scorer.score([requests[2]], max_batch=1, max_new_tokens=12)
    expected_short = scorer.score(requests, max_new_tokens=5, **batched)
    assert len({r.generated for r in expected}) > 1 and all(r.generated_tokens == 12 for r in expected)

    monkeypatch.setattr(scorer, "static_decode", True)
    scorer._free_memory()
    assert scorer.compile_decode is False  # the CPU: the static path as it is
    assert_same_scores(scorer.score(requests, max_new_tokens=12, **batched), expected)
    rows, width = scorer._static_cache_shape
    assert rows == len(requests) and width % qwen2vl.STATIC_CACHE_COLUMNS == 0
    kept = scorer._static_cache
    # The next batch of the same shape writes into the same cache (CUDA graphs replay on its addresses).
    assert_same_scores(scorer.score(requests, max_new_tokens=12, **batched), expected)
    assert scorer._static_cache is kept

    assert_same_scores(scorer.score([requests[2]], max_batch=1, max_new_tokens=12), expected_one)
    assert scorer._static_cache_shape[0] == 1  # another shape: the six-row cache was replaced

    short = scorer.score(requests, max_new_tokens=5, **batched)
    assert all(r.generated_tokens == 5 for r in short)
    assert_same_scores(short, expected_short)


def step_logits(scorer, batch, tokens, *, static):
    """The decoding step's logits for ``tokens`` (steps × rows) fed one step at a time after a prefill of ``batch``."""
    prefill = scorer.prefill_batch(batch)
    rows = len(batch)
    with torch.inference_mode():
        if static:
            run_step = scorer._static_steps(prefill, max_new_tokens=len(tokens) + 1)
        else:
            run_step = scorer._dynamic_steps(prefill)
        out = []
        for step, chosen in enumerate(tokens):
            positions = (prefill.next_positions + step).view(1, rows, 1).expand(3, rows, 1)
            out.append(run_step(chosen[:, None], positions))
    return torch.stack(out)


@pytest.mark.parametrize("sharp", [True, False])
def test_static_decode_step_logits_equal_the_default_steps(scored_project, sharp_scorer, tiny_model, sharp):
    """Each step's logits, not only the argmax: the same tokens (random ones, so no step repeats a prompt's pattern)
    fed to both decodings give the same logits within 1e-5 at every step and row. The greedy replies alone could
    miss an error that changes logits but no argmax in twelve tokens (a new token kept from its predecessors). Both
    the sharp model and the plain one: a column of zeros left visible (a cache position one too far) takes almost
    no weight from sharp attention, and its share of the plain model's near-uniform attention."""
    scorer = sharp_scorer if sharp else qwen2vl.load_scorer(tiny_model)
    _, batch = mixed_batch(scorer, scored_project)
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, scorer.model.config.text_config.vocab_size, (10, len(batch)), generator=generator)
    default = step_logits(scorer, batch, tokens, static=False)
    static = step_logits(scorer, batch, tokens, static=True)
    assert default.shape == static.shape == (10, len(batch), scorer.model.config.text_config.vocab_size)
    # float32, logits of magnitude < 1: the two agree within 2e-7 here; the zeros column above moves them by 1e-4.
    assert float((default - static).abs().max()) < 1e-5


def test_the_static_decode_setting_reaches_the_workers_scorer(scored_project, tiny_model, lead, settings):
    """STUDIO_PRESCORE_STATIC_DECODE (settings.PRESCORE_STATIC_DECODE) picks the scorer a job loads; its suggestions
    (greedy replies; the log-likelihoods, from the same prefill, to the bit) are those of the default decoding."""

    def run_job():
        job = services.prescore_job_create(
            project=scored_project,
            user=lead,
            scorer="qwen2vl",
            model_path=str(tiny_model),
            settings={"max_new_tokens": 6},
            enqueue=False,
        )
        job = services.prescore_job_run(job_id=job.pk)
        assert job.status == "succeeded", job.message
        rows = StepSuggestion.objects.filter(job=job).order_by("step_id")
        return [(r.step_id, r.model_action, r.loglik_sum, r.n_tokens) for r in rows]

    default = run_job()
    settings.PRESCORE_STATIC_DECODE = True
    static = run_job()
    assert qwen2vl.load_scorer(tiny_model, static_decode=True).static_decode is True
    assert qwen2vl.load_scorer(tiny_model, static_decode=True)._static_cache_shape is not None  # it decoded
    assert static == default and len(static) == 6


@pytest.mark.compiler
@pytest.mark.skipif(not (shutil.which("g++") or shutil.which("c++")), reason="inductor's CPU code needs a C++ compiler")
def test_the_compiled_static_step_gives_the_same_replies(scored_project, tiny_model):
    """The static step through torch.compile(mode="reduce-overhead"), as on CUDA, but on the CPU: dynamo traces the
    decoder with the static cache and inductor compiles it (about 20 s here with a warm compile cache, minutes in a fresh one); there are no CUDA graphs to capture
    on the CPU, so their capture and replay are left to a GPU run (docs/reliability.md). Two batches of three rows
    (one cache, kept and reused), then one row alone (another shape: the compiled step recompiled for it)."""
    requests = requests_for(scored_project)
    default = qwen2vl.load_scorer(tiny_model)
    expected = default.score(requests, max_new_tokens=6, max_batch=3, batch_tokens=10**6)
    expected_one = default.score(requests[:1], max_new_tokens=6, max_batch=1)
    scorer = qwen2vl.Qwen2VLScorer(tiny_model, static_decode=True, compile_decode=True)
    caches = []
    real = scorer._static_cache_for

    def recorded(rows, width):
        caches.append(real(rows, width))
        return caches[-1]

    scorer._static_cache_for = recorded
    assert_same_scores(scorer.score(requests, max_new_tokens=6, max_batch=3, batch_tokens=10**6), expected)
    assert len(caches) == 2 and caches[0] is caches[1]
    assert_same_scores(scorer.score(requests[:1], max_new_tokens=6, max_batch=1), expected_one)
    assert scorer._static_cache_shape[0] == 1 and scorer._compiled_step is not None


def test_out_of_memory_in_the_static_cache_halves_the_batch(scored_project, tiny_model, monkeypatch):
    """The static decoding's own allocation (its cache: rows × width of every layer's keys and values) running out of
    memory, injected as in the test above: the batch is halved like any out-of-memory error, the halves decode into
    caches of their own size, and every step is scored as the default decoding scores it."""
    requests = requests_for(scored_project)
    expected = qwen2vl.load_scorer(tiny_model).score(requests, max_batch=1, max_new_tokens=4)
    scorer = qwen2vl.Qwen2VLScorer(tiny_model, static_decode=True)
    real = scorer._static_cache_for
    shapes = []

    def fits_three(rows, width):
        shapes.append(rows)
        if rows > 3:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")
        return real(rows, width)

    monkeypatch.setattr(scorer, "_static_cache_for", fits_three)
    results = scorer.score(requests, max_batch=16, batch_tokens=10**6, max_new_tokens=4)
    assert shapes == [6, 3, 3] and scorer.batch_limit == 3
    assert_same_scores(results, expected)

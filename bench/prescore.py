"""Pre-scoring benchmark: steps/s of the batched Qwen2-VL scorer against a naive one-step-at-a-time loop.

    .venv/bin/python bench/prescore.py [--steps 500] [--naive-steps 100] [--size tiny|2b] [--device cpu|cuda]
                                       [--history 5] [--max-new-tokens 32] [--no-generate] [--static-decode]
                                       [--speaking]

Synthetic traces of 1920×1080 UI-like PNG screenshots (decoded on use, as from storage) are turned into
prompts by THE prompt builder (traces.prompting, a default project: history window 5, box tokens) and
scored through the same loading path as real weights (a random-weight checkpoint written to a temporary
folder by prescoring.tiny). Each step: log-likelihood of the recorded reply + the model's greedy reply.

- batched: ``Qwen2VLScorer.score`` — length-sorted batches under a token budget, each screenshot
  preprocessed once and shared by the windows it appears in.
- naive: the same scorer, one request per call, image cache cleared before each step. Its rate is
  measured on the first ``--naive-steps`` steps (a rate, so comparable; say so when reporting).

``--static-decode``: the scorer's static greedy decoding (``Qwen2VLScorer(static_decode=True)``: a preallocated
KV cache, the same shapes every step; on CUDA the step is compiled with torch.compile(mode="reduce-overhead") and
replayed as CUDA graphs; on the CPU it runs uncompiled). Compiled, its warm-up runs every step once, so that each
batch shape is compiled and recorded before the timed runs (a worker keeps them for its life); the warm-up's time
is printed. The naive loop's one-row batches are shapes of their own, recorded during its timing.

``--speaking``: the tiny checkpoint that speaks the grammar (``prescoring.tiny``, ``reply=Reply()``) instead of the
random one: every greedy reply must be its fixed reply (3 new tokens), a check of the decoding path on the device
(bf16, CUDA graphs with ``--static-decode``); the run exits 1 when one is not. Its replies end after 3 tokens, so
its decoding rate is not the random model's (which writes ``--max-new-tokens`` every step).

FLOPs (forward), printed two ways: "linear", 2 × parameters × tokens per part — vision tower × image patches,
decoder (no embeddings) × every token run, LM head × the positions whose logits are computed; and "with
attention", adding attention's score and weighted-sum products, which grow with the square of the sequence (the
decoder's causal attention, the vision tower's within each screenshot; see ``Meter``). On a 13,000-token prompt
they are a large share of the work, so the linear figure alone understates the device's share. On CUDA each
achieved TFLOP/s is compared with the H200's bf16 dense peak (~790 TFLOP/s without sparsity; taken as the
brief's figure).
"""

from __future__ import annotations

import argparse
import io
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
H200_BF16_PEAK_TFLOPS = 790.0


def screen_png(seed: int, size=(1920, 1080)) -> bytes:
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    image = Image.new("RGB", size, (236, 239, 244))
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 0, size[0], 48], fill=(40, 44, 60))
    for _ in range(25):  # windows, buttons, text lines
        x, y = rng.randrange(0, size[0] - 300), rng.randrange(60, size[1] - 100)
        draw.rectangle(
            [x, y, x + rng.randrange(80, 600), y + rng.randrange(20, 300)],
            fill=tuple(rng.randrange(60, 250) for _ in range(3)),
            outline=(30, 30, 30),
        )
        draw.text((x + 8, y + 4), f"Button {rng.randrange(1000)}", fill=(0, 0, 0))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def build_requests(n_steps: int, steps_per_trace: int, history: int):
    from PIL import Image

    from prescoring.qwen2vl import ImageInput, ScoreRequest
    from traces import prompting

    # A default project's prompt settings, without Django: the benchmark needs torch and transformers only.
    project = prompting.PromptSettings(history_window=history)
    pngs = {}
    requests = []
    rng = random.Random(0)
    n_traces = -(-n_steps // steps_per_trace)
    for t in range(n_traces):
        length = min(steps_per_trace, n_steps - t * steps_per_trace)
        keys = [f"t{t}s{i}" for i in range(length)]
        for k, key in enumerate(keys):
            pngs[key] = screen_png(t * 1000 + k)
        replies = [
            f"Thought: I click the button labelled {rng.randrange(1000)} to go on with the task.\n"
            f"Action: click(start_box='<|box_start|>({rng.randrange(1000)},{rng.randrange(1000)})<|box_end|>')"
            for _ in keys
        ]
        for i, key in enumerate(keys):
            history_steps = [prompting.HistoryStep(keys[j], replies[j]) for j in range(i)]
            prompt = prompting.build_prompt(
                project=project, instruction=f"Benchmark task {t}", history=history_steps, current_image=key
            )
            images = [ImageInput(k, (lambda k=k: Image.open(io.BytesIO(pngs[k])))) for k in prompt.images]
            requests.append(ScoreRequest(f"{t}/{i}", prompting.to_chat_messages(prompt), images, replies[i]))
    return requests


class Meter:
    """Times and counts what the scorer runs, by wrapping its entry points for one run.

    FLOPs (forward), counted twice. ``flops``: 2 × parameters × tokens per part, for the work actually done: the vision tower over the patches of the screenshots it encodes (a
    screenshot cached from an earlier window is not counted again), the decoder over every token of each
    pass (one pass over prompt + reply, shared by the log-likelihood and the generation; then one token per
    decoding step after the first, which the prefill's logits give), the LM head over the positions whose
    logits are computed (the reply's positions in the prefill, the last one in each decoding step).
    ``attention_flops``: attention's own products (scores Q·Kᵀ and the weighted sum of V: 2 × 2 × keys × width
    per query and layer), which hold no parameters and grow with the square of the sequence: the decoder's causal
    attention over a pass of L tokens (L(L+1)/2 query-key pairs; a decoding step at position P: P pairs), and the
    vision tower's full attention within each encoded screenshot (n² pairs for n patches). Both are printed, the
    linear count alone and the total with attention, so a figure is never compared with the other's.

    Phases (GPU synchronised at each boundary, so times are the device's): ``preprocess`` (decode, resize
    and patching on the CPU thread pool), ``vision`` (the vision tower), ``tensors`` (padding the token ids
    and their host-to-device copies), ``prefill`` (the decoder pass over prompt + reply and the reply's
    log-likelihood: ``prefill_batch``, or ``loglik_batch`` with --no-generate), ``decode`` (the greedy decoding
    loop); vision and tensors are excluded from the phases they run in.
    ``padding`` is the share of the padded batch tensors' positions that hold no token."""

    WRAPPED = (
        "preprocess_images",
        "_vision_features",
        "_batch_tensors",
        "loglik_batch",
        "prefill_batch",
        "decode_batch",
    )

    def __init__(self, scorer, generate: bool):
        self.scorer = scorer
        self.generate = generate
        self.params = scorer.parameter_counts()
        self.sync = _sync(scorer.device)
        self.flops = 0.0
        self.attention_flops = 0.0
        self.widths = scorer.attention_widths()
        self.seconds = dict.fromkeys(("preprocess", "vision", "tensors", "prefill", "decode"), 0.0)
        self.images_encoded = 0
        self.image_references = 0
        self.positions = 0
        self.tokens = 0
        self.generated_tokens = 0
        self._nested: list[float] = []  # per open phase: seconds of the phases run inside it
        self._pass_lengths: list[int] = []

    def attention_pairs_flops(self, part: str, pairs: int) -> float:
        """Forward FLOPs of attention's two products over ``pairs`` query-key pairs in every layer of ``part``."""
        return 2 * 2 * pairs * self.widths[f"{part}_width"] * self.widths[f"{part}_layers"]

    def _timed(self, phase, call):
        """Run ``call`` as ``phase``; time spent in phases nested inside it is counted there, not here."""
        self.sync()
        start = time.perf_counter()
        self._nested.append(0.0)
        try:
            result = call()
        finally:
            self.sync()
            elapsed = time.perf_counter() - start
            self.seconds[phase] += elapsed - self._nested.pop()
            if self._nested:
                self._nested[-1] += elapsed
        return result

    def wrap(self):
        s, p = self.scorer, self.params
        originals = {name: getattr(s, name) for name in self.WRAPPED}

        def preprocess_images(*args, **kwargs):
            return self._timed("preprocess", lambda: originals["preprocess_images"](*args, **kwargs))

        def vision_features(batch):
            missing = {}
            for e in batch:
                for key, grid in zip(e.image_keys, e.image_grid_thw):
                    if key not in s._feature_cache:
                        missing[key] = int(grid.prod())
            self.images_encoded += len(missing)
            self.flops += 2 * p["vision"] * sum(missing.values())
            self.attention_flops += sum(self.attention_pairs_flops("vision", n * n) for n in missing.values())
            return self._timed("vision", lambda: originals["_vision_features"](batch))

        def batch_tensors(batch, **layout):
            tensors = self._timed("tensors", lambda: originals["_batch_tensors"](batch, **layout))
            # Whatever the layout (right padding, or prompts aligned on one column): columns × rows vs tokens.
            self.positions += tensors["input_ids"].numel()
            self.tokens += int(tensors["attention_mask"].sum())
            return tensors

        def decoder_pass(name):
            def wrapper(batch):
                # The one decoder pass per batch, over prompt + reply; the LM head over the reply's positions.
                self.image_references += sum(len(e.image_keys) for e in batch)
                self.flops += sum(2 * (p["decoder"] * e.length + p["lm_head"] * (e.length - e.n_prompt)) for e in batch)
                self.attention_flops += sum(
                    self.attention_pairs_flops("decoder", e.length * (e.length + 1) // 2) for e in batch
                )
                self._pass_lengths = [e.length for e in batch]  # the decoding that follows continues these rows
                return self._timed("prefill", lambda: originals[name](batch))

            return wrapper

        def decode_batch(prefill, *, max_new_tokens):
            replies = self._timed("decode", lambda: originals["decode_batch"](prefill, max_new_tokens=max_new_tokens))
            for length, (_, n_new) in zip(self._pass_lengths, replies):
                # The first token comes from the prefill's logits; one decoder step per token after it, the k-th
                # attending to the pass's tokens and the k new ones before it.
                self.flops += 2 * (p["decoder"] + p["lm_head"]) * max(0, n_new - 1)
                steps = max(0, n_new - 1)
                pairs = steps * length + steps * (steps + 1) // 2
                self.attention_flops += self.attention_pairs_flops("decoder", pairs)
                self.generated_tokens += n_new
            return replies

        wrappers = (
            preprocess_images,
            vision_features,
            batch_tensors,
            decoder_pass("loglik_batch"),
            decoder_pass("prefill_batch"),
            decode_batch,
        )
        for name, wrapper in zip(self.WRAPPED, wrappers):
            setattr(s, name, wrapper)
        return lambda: [setattr(s, name, original) for name, original in originals.items()]

    def report(self, label: str, wall: float) -> str:
        parts = ", ".join(f"{k} {v:.2f}s" for k, v in self.seconds.items())
        other = wall - sum(self.seconds.values())
        padding = 1 - self.tokens / self.positions if self.positions else 0.0
        return (
            f"  {label} profile: {parts}, other (encode, tokenizer, python) {other:.2f}s\n"
            f"  {label}: vision tower ran on {self.images_encoded} screenshots for {self.image_references} "
            f"image references ({self.image_references / max(1, self.images_encoded):.1f} windows each); "
            f"{1000 * self.seconds['vision'] / max(1, self.images_encoded):.1f} ms per screenshot; "
            f"padding {100 * padding:.1f} % of batch positions; {self.generated_tokens} tokens generated"
        )


def run(scorer, requests, *, naive: bool, generate: bool, max_new_tokens: int, batch_tokens: int, max_batch=None):
    meter = Meter(scorer, generate)
    scorer._image_cache.clear()
    scorer._feature_cache.clear()
    restore = meter.wrap()
    try:
        meter.sync()
        start = time.perf_counter()
        if naive:
            results = []
            for request in requests:
                # Nothing carried over from the step before: the naive loop preprocesses and encodes every image.
                scorer._image_cache.clear()
                scorer._feature_cache.clear()
                results += scorer.score([request], generate=generate, max_new_tokens=max_new_tokens, max_batch=1)
        else:
            results = scorer.score(
                requests,
                generate=generate,
                max_new_tokens=max_new_tokens,
                batch_tokens=batch_tokens,
                max_batch=max_batch,
            )
        meter.sync()
        return time.perf_counter() - start, results, meter
    finally:
        restore()


def vision_cost(scorer, png: bytes, repeats: int = 5) -> str:
    """The vision tower alone on one 1920×1080 screenshot: ms and TFLOP/s (warm, synchronised)."""
    import torch

    from prescoring.qwen2vl import ImageInput

    min_pixels, max_pixels = scorer.default_pixels
    pixels, grid = scorer._preprocess(ImageInput("probe", lambda: _open(png)), min_pixels, max_pixels)
    pixels, grid = pixels.to(scorer.device, scorer.dtype), grid.to(scorer.device)
    sync = _sync(scorer.device)
    with torch.inference_mode():
        for _ in range(2):
            scorer.model.model.get_image_features(pixels, grid, return_dict=True)
        sync()
        start = time.perf_counter()
        for _ in range(repeats):
            scorer.model.model.get_image_features(pixels, grid, return_dict=True)
        sync()
    seconds = (time.perf_counter() - start) / repeats
    patches = int(grid.prod())
    flops = 2 * scorer.parameter_counts()["vision"] * patches
    return (
        f"vision tower, one 1920x1080 screenshot ({patches} patches, {patches // scorer.merge**2} tokens): "
        f"{1000 * seconds:.1f} ms, {flops / seconds / 1e12:.1f} TFLOP/s (linear layers only)"
    )


def _open(png: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(png))


def _sync(device: str):
    import torch

    return torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--naive-steps", type=int, default=100, help="steps timed in the naive loop (a rate)")
    parser.add_argument("--steps-per-trace", type=int, default=25)
    parser.add_argument("--history", type=int, default=5, help="screenshots per prompt (project.history_window)")
    parser.add_argument("--size", choices=["tiny", "2b"], default="tiny")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--no-generate", action="store_true", help="log-likelihood only")
    parser.add_argument("--model-dir", default=None, help="reuse a checkpoint folder instead of building one")
    parser.add_argument(
        "--batch-tokens",
        type=lambda text: [int(v) for v in text.split(",")],
        default=[16384],
        help="padded-token budget of a batch; several (comma-separated) are each timed",
    )
    parser.add_argument("--max-batch", type=int, default=None, help="sequences per batch at most (scorer default)")
    parser.add_argument(
        "--static-decode",
        action="store_true",
        help="greedy decoding into a static KV cache (CUDA graphs on cuda); off: the scorer's default decoding",
    )
    parser.add_argument(
        "--speaking",
        action="store_true",
        help="the tiny checkpoint that speaks the grammar: check that every greedy reply is its reply",
    )
    args = parser.parse_args()
    if args.speaking and (args.size != "tiny" or args.model_dir or args.no_generate):
        parser.error(
            "--speaking builds the tiny checkpoint and checks its greedy replies: no --size 2b, --model-dir "
            "or --no-generate"
        )

    sys.path.insert(0, str(REPO))
    import torch

    from prescoring.qwen2vl import Qwen2VLScorer, default_device
    from prescoring.tiny import Reply, build_tiny_qwen2vl

    device = args.device or default_device()
    dtype = "bfloat16" if args.size == "2b" or device.startswith("cuda") else "float32"
    t0 = time.perf_counter()
    model_dir = (
        Path(args.model_dir)
        if args.model_dir
        else build_tiny_qwen2vl(
            Path(tempfile.mkdtemp(prefix="bench-prescore-model-")) / args.size,
            size=args.size,
            dtype=dtype,
            device=device,
            reply=Reply() if args.speaking else None,
        )
    )
    scorer = Qwen2VLScorer(model_dir, device=device, dtype=dtype, static_decode=args.static_decode)
    decoding = (
        f"static decoding ({'compiled, CUDA graphs' if scorer.compile_decode else 'not compiled'})"
        if args.static_decode
        else "default decoding"
    )
    print(
        f"model {args.size} ({sum(scorer.parameter_counts().values()) / 1e6:.2f} M params without embeddings, "
        f"{dtype}) on {device}, {decoding}, ready in {time.perf_counter() - t0:.1f}s",
        flush=True,
    )

    t0 = time.perf_counter()
    requests = build_requests(args.steps, args.steps_per_trace, args.history)
    print(
        f"{len(requests)} steps of 1920x1080 screenshots, history window {args.history}, "
        f"built in {time.perf_counter() - t0:.1f}s",
        flush=True,
    )
    generate = not args.no_generate
    machine = (
        torch.cuda.get_device_name(0)
        if device.startswith("cuda")
        else f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"
    )
    print(f"machine: {machine}; torch {torch.__version__}; transformers {_version('transformers')}", flush=True)
    print(vision_cost(scorer, screen_png(99)), flush=True)

    def rate_line(label, n, seconds, meter):
        def rate(flops, what):
            tflops = flops / seconds / 1e12
            share = (
                f" = {100 * tflops / H200_BF16_PEAK_TFLOPS:.1f} % of the bf16 peak" if device.startswith("cuda") else ""
            )
            return f"{tflops:.3f} TFLOP/s {what}{share}"

        return (
            f"{label}: {n} steps in {seconds:.1f}s = {n / seconds:.2f} steps/s, "
            f"{rate(meter.flops, 'linear')}, {rate(meter.flops + meter.attention_flops, 'with attention')}"
            f" (attention {100 * meter.attention_flops / max(1.0, meter.flops + meter.attention_flops):.0f} % of the"
            f" work)" + (f"; peak {H200_BF16_PEAK_TFLOPS:.0f} TFLOP/s" if device.startswith("cuda") else "")
        )

    options = dict(generate=generate, max_new_tokens=args.max_new_tokens, max_batch=args.max_batch)
    # Warm-up (kernel selection, allocator): not timed. The compiled static decoding's: every step with each budget, so
    # that the timed runs' batch shapes are compiled and their graphs recorded (timed here, apart).
    if scorer.static_decode and scorer.compile_decode:
        for budget in args.batch_tokens:
            warm_s = run(scorer, requests, naive=False, batch_tokens=budget, **options)[0]
            print(f"warm-up (compiles, graph recordings; batch_tokens {budget}): {warm_s:.1f}s", flush=True)
    else:
        run(scorer, requests[: min(8, len(requests))], naive=False, batch_tokens=args.batch_tokens[0], **options)
    best = None
    for budget in args.batch_tokens:
        seconds, results, meter = run(scorer, requests, naive=False, batch_tokens=budget, **options)
        print(rate_line(f"batched (batch_tokens {budget})", len(requests), seconds, meter), flush=True)
        print(meter.report("batched", seconds), flush=True)
        if best is None or seconds < best[0]:
            best = (seconds, results, budget)
    batched_s, batched, budget = best

    naive_requests = requests[: args.naive_steps]
    naive_s, naive, naive_meter = run(scorer, naive_requests, naive=True, batch_tokens=budget, **options)
    print(rate_line("naive (one step at a time)", len(naive_requests), naive_s, naive_meter), flush=True)
    print(naive_meter.report("naive", naive_s), flush=True)

    errors = [r for r in batched + naive if r.error]
    by_key = {r.key: r for r in batched}
    worst = max((abs(by_key[r.key].loglik_sum - r.loglik_sum) for r in naive if not r.error), default=0.0)
    batched_rate, naive_rate = len(requests) / batched_s, len(naive_requests) / naive_s
    print(
        f"speed-up (best batched, batch_tokens {budget}, over naive): {batched_rate / naive_rate:.2f}x; "
        f"max |loglik batched - naive| = {worst:.2e}; errors: {len(errors)}"
    )
    if device.startswith("cuda"):
        print(f"peak GPU memory allocated: {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
    for r in errors[:3]:
        print("error:", r.key, r.error)
    if args.speaking:
        spoken = Reply().text()
        other = [r for r in batched + naive if not r.error and (r.generated, r.generated_tokens) != (spoken, 3)]
        print(f"greedy replies other than the checkpoint's: {len(other)} of {len(batched) + len(naive)}")
        for r in other[:3]:
            print("other reply:", r.key, repr(r.generated), r.generated_tokens)
        if other or errors:
            sys.exit(1)


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    main()

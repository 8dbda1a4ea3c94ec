"""Pre-scoring benchmark: steps/s of the batched Qwen2-VL scorer against a naive one-step-at-a-time loop.

    .venv/bin/python bench/prescore.py [--steps 500] [--naive-steps 100] [--size tiny|2b] [--device cpu|cuda]
                                       [--history 5] [--max-new-tokens 32] [--no-generate]

Synthetic traces of 1920×1080 UI-like PNG screenshots (decoded on use, as from storage) are turned into
prompts by THE prompt builder (traces.prompting, a default project: history window 5, box tokens) and
scored through the same loading path as real weights (a random-weight checkpoint written to a temporary
folder by traces.prescoring.tiny). Each step: log-likelihood of the recorded reply + the model's greedy reply.

- batched: ``Qwen2VLScorer.score`` — length-sorted batches under a token budget, each screenshot
  preprocessed once and shared by the windows it appears in.
- naive: the same scorer, one request per call, image cache cleared before each step. Its rate is
  measured on the first ``--naive-steps`` steps (a rate, so comparable; say so when reporting).

FLOPs (forward, honest lower bound): 2 × parameters × tokens, per part — vision tower × image patches,
decoder (no embeddings) × every token run, LM head × the positions whose logits are computed; attention's
quadratic term is not counted. On CUDA the achieved TFLOP/s is compared with the H200's bf16 dense peak
(~790 TFLOP/s without sparsity; taken as the brief's figure).
"""

from __future__ import annotations

import argparse
import io
import os
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

    from traces import prompting
    from traces.models import Project
    from traces.prescoring.qwen2vl import ImageInput, ScoreRequest

    project = Project(name="bench", history_window=history)
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


class FlopCounter:
    """Counts forward FLOPs of what the scorer runs, by wrapping its two entry points."""

    def __init__(self, scorer):
        self.scorer = scorer
        self.params = scorer.parameter_counts()
        self.flops = 0.0

    def batch(self, batch, results, generate: bool):
        p = self.params
        for e, r in zip(batch, results):
            patches = sum(int(g.prod()) for g in e.image_grid_thw)
            # Log-likelihood pass: vision + decoder over the whole sequence, LM head over the reply.
            self.flops += 2 * (p["vision"] * patches + p["decoder"] * e.length + p["lm_head"] * (e.length - e.n_prompt))
            if generate and r.error is None:
                # Generation: prefill of the prompt (vision again), then one token at a time.
                self.flops += 2 * (p["vision"] * patches + p["decoder"] * e.n_prompt + p["lm_head"])
                self.flops += 2 * (p["decoder"] + p["lm_head"]) * max(0, r.generated_tokens - 1)


def run(scorer, requests, *, naive: bool, generate: bool, max_new_tokens: int, counter: FlopCounter):
    original = scorer._score_batch

    def counted(batch, **kwargs):
        results = original(batch, **kwargs)
        counter.batch(batch, results, generate)
        return results

    scorer._score_batch = counted
    sync = _sync(scorer.device)
    try:
        scorer._image_cache.clear()
        sync()
        start = time.perf_counter()
        if naive:
            results = []
            for request in requests:
                scorer._image_cache.clear()
                results += scorer.score([request], generate=generate, max_new_tokens=max_new_tokens, max_batch=1)
        else:
            results = scorer.score(requests, generate=generate, max_new_tokens=max_new_tokens)
        sync()
        return time.perf_counter() - start, results
    finally:
        scorer._score_batch = original


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
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ.setdefault("STUDIO_DATA_DIR", tempfile.mkdtemp(prefix="bench-prescore-data-"))
    import django

    django.setup()
    import torch

    from traces.prescoring.qwen2vl import Qwen2VLScorer, default_device
    from traces.prescoring.tiny import build_tiny_qwen2vl

    device = args.device or default_device()
    dtype = "bfloat16" if args.size == "2b" or device.startswith("cuda") else "float32"
    t0 = time.perf_counter()
    model_dir = (
        Path(args.model_dir)
        if args.model_dir
        else build_tiny_qwen2vl(
            Path(tempfile.mkdtemp(prefix="bench-prescore-model-")) / args.size, size=args.size, dtype=dtype
        )
    )
    scorer = Qwen2VLScorer(model_dir, device=device, dtype=dtype)
    print(
        f"model {args.size} ({sum(scorer.parameter_counts().values()) / 1e6:.2f} M params without embeddings, "
        f"{dtype}) on {device}, ready in {time.perf_counter() - t0:.1f}s",
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

    batched_counter = FlopCounter(scorer)
    batched_s, batched = run(
        scorer, requests, naive=False, generate=generate, max_new_tokens=args.max_new_tokens, counter=batched_counter
    )
    naive_requests = requests[: args.naive_steps]
    naive_counter = FlopCounter(scorer)
    naive_s, naive = run(
        scorer, naive_requests, naive=True, generate=generate, max_new_tokens=args.max_new_tokens, counter=naive_counter
    )

    errors = [r for r in batched + naive if r.error]
    by_key = {r.key: r for r in batched}
    worst = max((abs(by_key[r.key].loglik_sum - r.loglik_sum) for r in naive if not r.error), default=0.0)
    batched_rate, naive_rate = len(requests) / batched_s, len(naive_requests) / naive_s
    machine = (
        torch.cuda.get_device_name(0)
        if device.startswith("cuda")
        else f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"
    )
    print(f"machine: {machine}")
    print(
        f"batched: {len(requests)} steps in {batched_s:.1f}s = {batched_rate:.2f} steps/s "
        f"({batched_counter.flops / batched_s / 1e12:.3f} TFLOP/s)"
    )
    print(
        f"naive:   {len(naive_requests)} steps in {naive_s:.1f}s = {naive_rate:.2f} steps/s "
        f"({naive_counter.flops / naive_s / 1e12:.3f} TFLOP/s)"
    )
    print(
        f"speed-up: {batched_rate / naive_rate:.2f}x; max |loglik batched - naive| = {worst:.2e}; errors: {len(errors)}"
    )
    if device.startswith("cuda"):
        print(
            f"batched achieves {100 * batched_counter.flops / batched_s / 1e12 / H200_BF16_PEAK_TFLOPS:.1f} % "
            f"of the H200 bf16 peak ({H200_BF16_PEAK_TFLOPS:.0f} TFLOP/s)"
        )
    for r in errors[:3]:
        print("error:", r.key, r.error)


if __name__ == "__main__":
    main()

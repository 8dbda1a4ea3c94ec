"""Qwen2-VL / Qwen2.5-VL scoring: log-likelihood of a recorded reply, the model's own greedy reply, and k sampled
replies from one prefill (on-policy alternatives).

torch and transformers are imported inside functions only: the web process imports this module's
names (for settings and types) without loading torch.

Inputs are built without ``Qwen2VLProcessor`` (it needs torchvision, which the CPU torch build here
lacks): the tokenizer's chat template renders the messages, the image processor
turns each screenshot into patches, and each ``<|image_pad|>`` is expanded to its grid's token
count, as the processor would. ``mm_token_type_ids`` (1 on image tokens) is passed, as 5.x needs.

Batching: requests are encoded, sorted by length and cut into batches under a token budget, so
padding stays small. Scoring with generation runs the decoder once per batch over prompt + recorded
reply, laid out so that every prompt ends at the same column: the reply's log-likelihood comes from
that pass (the LM head only at the reply's positions), and its KV cache, cut at that column, is the
prefill the greedy decoding continues from (:meth:`Qwen2VLScorer.prefill_batch`). Without generation
the decoder pass is the same with right padding and no cache (:meth:`Qwen2VLScorer.loglik_batch`).
With ``static_decode`` (off by default; settings.PRESCORE_STATIC_DECODE on the workers) the greedy decoding
runs on a preallocated cache with the same shapes every step, compiled into CUDA graphs on CUDA
(:meth:`Qwen2VLScorer.decode_batch`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def gettext(message: str) -> str:
    """The words in the language of the request or job being served where the studio runs; as written where only
    torch and transformers are (bench/prescore.py on a GPU machine loads this module without Django)."""
    if "django" not in sys.modules:
        return message
    from django.utils.translation import gettext as translated

    return translated(message)


log = logging.getLogger(__name__)

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
MODEL_TYPES = ("qwen2_vl", "qwen2_5_vl")
PREPROCESS_THREADS = min(8, os.cpu_count() or 1)
# Batch defaults per device (Qwen2VLScorer.score says why).
GPU_MAX_BATCH = 48
GPU_BATCH_TOKENS = 327_680
CPU_BATCH_TOKENS = 16_384
# Text embeddings (Qwen2VLScorer.text_embeddings): texts a forward pass, and tokens kept of each text; a corrected
# thought and note fit in 256 tokens, so the padded batch is at most 32 × 256 tokens on any device.
EMBEDDING_BATCH = 32
EMBEDDING_MAX_TOKENS = 256
# The static decoding's KV cache width (prompt + new tokens) is rounded up to a multiple of this
# (Qwen2VLScorer._static_steps says why).
STATIC_CACHE_COLUMNS = 256


class ModelLoadError(Exception):
    """The model directory is missing, incomplete or not a Qwen2-VL / Qwen2.5-VL checkpoint."""


@dataclass
class ImageInput:
    """A screenshot for the prompt: ``key`` (its sha256) caches its patches, ``load()`` gives a PIL image."""

    key: str
    load: Callable[[], Any]


@dataclass
class ScoreRequest:
    key: Any  # the caller's id for the result (a step's pk)
    messages: list[dict]  # chat-template messages; image parts are {"type": "image"}, in ``images`` order
    images: list[ImageInput]
    target: str  # the reply whose likelihood is scored, e.g. "Thought: ...\nAction: ..."


@dataclass
class ScoreResult:
    key: Any
    loglik_sum: float | None = None
    loglik_mean: float | None = None
    n_tokens: int | None = None
    generated: str | None = None
    generated_tokens: int = 0  # new tokens up to and including <|im_end|> (for FLOP counts)
    error: str | None = None
    token_logprobs: list[float] = field(default_factory=list, repr=False)


@dataclass
class Encoded:
    key: Any
    input_ids: list[int]
    n_prompt: int  # tokens before the target (the generation prompt included)
    # Per image, shared with the image cache (a screenshot in five steps' windows is held once).
    pixel_values: list = field(default_factory=list)  # torch.Tensor (patches × patch_dim) each
    image_grid_thw: list = field(default_factory=list)  # torch.LongTensor (1 × 3) each
    image_keys: list = field(default_factory=list)  # cache keys of the images' vision features

    @property
    def length(self) -> int:
        return len(self.input_ids)


@dataclass
class Prefill:
    """The shared prefill of a batch (:meth:`Qwen2VLScorer.prefill_batch`), for the greedy decoding to continue."""

    results: list[ScoreResult]  # the recorded replies' log-likelihoods, one per row
    cache: Any  # KV cache of the prompt columns only (the recorded replies' columns are cut off)
    logits: Any  # (rows × vocabulary) float logits at each prompt's last token: the first new token's
    attention_mask: Any  # (rows × prompt columns): 0 on the left padding of shorter prompts
    next_positions: Any  # (rows,) rotary position of each row's first new token
    prompt_ids: Any = None  # (rows × prompt columns) token ids: what the repetition penalty counts


def image_processor_class():
    """The Pillow image processor: the default one needs torchvision."""
    from transformers.models.qwen2_vl import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil


def weights_sha256(model_dir: str | Path) -> str:
    """sha256 over the weight files (name and bytes, in name order): what makes two scorings comparable."""
    digest = hashlib.sha256()
    files = sorted(p for p in Path(model_dir).iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    if not files:
        raise ModelLoadError(
            gettext("%(dir)s: no weight files (%(suffixes)s)")
            % {"dir": model_dir, "suffixes": ", ".join(WEIGHT_SUFFIXES)}
        )
    for path in files:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as handle:
            while chunk := handle.read(8 * 1024 * 1024):
                digest.update(chunk)
    return digest.hexdigest()


def read_model_config(model_dir: str | Path) -> dict:
    """config.json of a local checkpoint, checked without importing torch (the API validates with it)."""
    path = Path(model_dir)
    if not path.is_dir():
        raise ModelLoadError(gettext("model directory %(dir)s does not exist") % {"dir": model_dir})
    try:
        config = json.loads((path / "config.json").read_text())
    except FileNotFoundError:
        raise ModelLoadError(gettext("%(dir)s has no config.json") % {"dir": model_dir}) from None
    except ValueError as exc:
        raise ModelLoadError(
            gettext("%(dir)s/config.json is not JSON: %(error)s") % {"dir": model_dir, "error": exc}
        ) from None
    if config.get("model_type") not in MODEL_TYPES:
        raise ModelLoadError(
            gettext("%(dir)s: model_type %(type)s is not one of %(types)s")
            % {"dir": model_dir, "type": repr(config.get("model_type")), "types": ", ".join(MODEL_TYPES)}
        )
    return config


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class Qwen2VLScorer:
    """One loaded model with its tokenizer and image processor. Build it with :func:`load_scorer`."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        device: str | None = None,
        dtype: str | None = None,
        static_decode: bool = False,
        compile_decode: bool | None = None,
    ):
        """``static_decode``: greedy decoding into a preallocated KV cache with the same shapes at every step
        (:meth:`decode_batch`), which CUDA graphs need. ``compile_decode``: wrap that step in
        ``torch.compile(mode="reduce-overhead")`` (CUDA graphs); None: on CUDA only. On the CPU the static path runs
        as it is: there are no CUDA graphs to capture, and inductor's CPU code would only add compile time."""
        import torch
        from transformers import AutoTokenizer, Qwen2_5_VLForConditionalGeneration, Qwen2VLForConditionalGeneration

        self.model_dir = Path(model_dir)
        config = read_model_config(self.model_dir)
        self.model_type = config["model_type"]
        self.device = device or default_device()
        # bf16 on GPU (the models' training dtype); float32 on CPU, where bf16 matmuls are slow and inexact.
        self.dtype = (
            getattr(torch, dtype) if dtype else (torch.bfloat16 if self.device.startswith("cuda") else torch.float32)
        )
        model_class = (
            Qwen2_5_VLForConditionalGeneration if self.model_type == "qwen2_5_vl" else Qwen2VLForConditionalGeneration
        )
        # transformers annotates the loaded model's configs and the tokenizer's outputs as unions of every form they
        # can take (dicts, lists, batches); the ones read here are known: Qwen2-VL configs, one text's ids.
        self.tokenizer: Any
        self.model: Any
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_dir, local_files_only=True)
            processor_cls = image_processor_class()
            if (self.model_dir / "preprocessor_config.json").is_file():
                self.image_processor = processor_cls.from_pretrained(self.model_dir, local_files_only=True)
            else:
                self.image_processor = processor_cls()
            # safetensors only: a pickled .bin checkpoint could run code when loaded.
            self.model = model_class.from_pretrained(
                self.model_dir, local_files_only=True, use_safetensors=True, dtype=self.dtype
            )
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"{self.model_dir}: {exc}") from exc
        self.model.to(self.device).eval()
        self.chat_template = self.tokenizer.chat_template or self._template_file()
        self.image_token_id = self.model.config.image_token_id
        self.eos_token_id = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.pad_token_id = (
            self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.eos_token_id
        )
        self.merge = self.model.config.vision_config.spatial_merge_size
        self.model_name = config.get("_name_or_path") or self.model_dir.name
        self._image_cache: OrderedDict = OrderedDict()
        self._feature_cache: OrderedDict = OrderedDict()
        self._weights_hash: str | None = None
        # The largest batch that fit after the device ran out of memory: the worker keeps the model, and keeps this.
        self.batch_limit: int | None = None
        self.static_decode = static_decode
        self.compile_decode = self.device.startswith("cuda") if compile_decode is None else compile_decode
        # The static decoding's KV cache, kept for the next batch of the same rows and width (_static_steps says why),
        # and its step, compiled once per scorer.
        self._static_cache: Any = None
        self._static_cache_shape: tuple[int, int] | None = None
        self._compiled_step: Callable | None = None
        self.lock = threading.Lock()

    def _template_file(self) -> str:
        for name in ("chat_template.jinja", "chat_template.json"):
            path = self.model_dir / name
            if path.is_file():
                text = path.read_text()
                return json.loads(text)["chat_template"] if name.endswith(".json") else text
        from prescoring.chat_template import QWEN2VL_CHAT_TEMPLATE

        return QWEN2VL_CHAT_TEMPLATE

    @property
    def weights_hash(self) -> str:
        if self._weights_hash is None:
            self._weights_hash = weights_sha256(self.model_dir)
        return self._weights_hash

    @property
    def default_pixels(self) -> tuple[int, int]:
        size = self.image_processor.size
        get = size.get if isinstance(size, dict) else lambda k, d=None: getattr(size, k, d)
        return int(get("shortest_edge") or 3136), int(get("longest_edge") or 1003520)

    def parameter_counts(self) -> dict[str, int]:
        """Parameters by part, for the FLOP count: vision tower, decoder (no embeddings), LM head."""
        vision = sum(p.numel() for p in self.model.model.visual.parameters())
        embed = self.model.model.language_model.embed_tokens.weight.numel()
        decoder = sum(p.numel() for p in self.model.model.language_model.parameters()) - embed
        head = self.model.lm_head.weight.numel()
        return {"vision": vision, "decoder": decoder, "lm_head": head}

    def attention_widths(self) -> dict[str, int]:
        """Layers and the width of their attention (heads × head size), for the FLOP count of attention's score and
        weighted-sum products, which grow with the square of the sequence and hold no parameters: the decoder's
        (causal, over a whole prompt + reply) and the vision tower's (full, within each screenshot)."""
        text, vision = self.model.config.text_config, self.model.config.vision_config
        head = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
        return {
            "decoder_layers": text.num_hidden_layers,
            "decoder_width": text.num_attention_heads * head,
            "vision_layers": vision.depth,
            "vision_width": vision.embed_dim,
        }

    # --- encoding -------------------------------------------------------------------------------

    def _preprocess(self, image: ImageInput, min_pixels: int, max_pixels: int):
        """Decode and patch one screenshot (CPU: Pillow decode and resize, numpy normalisation)."""
        pil = image.load().convert("RGB")
        out = self.image_processor(
            images=[pil], size={"shortest_edge": min_pixels, "longest_edge": max_pixels}, return_tensors="pt"
        )
        return out["pixel_values"], out["image_grid_thw"]

    def preprocess_images(self, requests: Sequence[ScoreRequest], min_pixels: int, max_pixels: int) -> dict:
        """Every distinct screenshot of ``requests`` not yet cached, preprocessed on a thread pool: Pillow's decode
        and resize release the GIL, so a many-core worker does this several images at once instead of one by one
        (about 0.1 s per 1920×1080 screenshot). Returns {cache key: (pixel_values, image_grid_thw)}; an image
        that fails is left out, and fails again, on its own request, when that request is encoded."""
        from concurrent.futures import ThreadPoolExecutor

        todo: dict[tuple, ImageInput] = {}
        for request in requests:
            for image in request.images:
                key = (image.key, min_pixels, max_pixels)
                if key not in self._image_cache:
                    todo.setdefault(key, image)
        if len(todo) < 2:
            return {}

        def attempt(image):
            try:
                return self._preprocess(image, min_pixels, max_pixels)
            except Exception:
                return None

        with ThreadPoolExecutor(max_workers=min(PREPROCESS_THREADS, len(todo))) as pool:
            done = dict(zip(todo, pool.map(attempt, todo.values())))
        return {key: patches for key, patches in done.items() if patches is not None}

    def _image_patches(self, image: ImageInput, min_pixels: int, max_pixels: int, prepared: dict | None = None):
        cache_key = (image.key, min_pixels, max_pixels)
        hit = self._image_cache.get(cache_key)
        if hit is not None:
            self._image_cache.move_to_end(cache_key)
            return hit
        hit = (prepared or {}).get(cache_key) or self._preprocess(image, min_pixels, max_pixels)
        self._image_cache[cache_key] = hit
        while len(self._image_cache) > 32:  # a trace's window of screenshots, several traces deep
            self._image_cache.popitem(last=False)
        return hit

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def encode(
        self,
        request: ScoreRequest,
        *,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
        prepared: dict | None = None,
    ) -> Encoded:
        default_min, default_max = self.default_pixels
        min_pixels, max_pixels = min_pixels or default_min, max_pixels or default_max
        n_slots = sum(
            1
            for m in request.messages
            for part in m["content"]
            if isinstance(part, dict) and part.get("type") == "image"
        )
        if n_slots != len(request.images):
            raise ValueError(f"{n_slots} image slots in the messages but {len(request.images)} images")
        prompt = self.tokenizer.apply_chat_template(
            request.messages, chat_template=self.chat_template, tokenize=False, add_generation_prompt=True
        )
        prompt_ids = self._ids(prompt)
        full_ids = self._ids(prompt + request.target + "<|im_end|>")
        if full_ids[: len(prompt_ids)] != prompt_ids:
            raise ValueError(
                "the prompt's tokens are not a prefix of prompt+reply (tokenizer merges across the boundary)"
            )
        patches = [self._image_patches(image, min_pixels, max_pixels, prepared) for image in request.images]
        counts = [int(grid.prod()) // self.merge**2 for _, grid in patches]
        ids: list[int] = []
        n_prompt = 0
        seen = 0
        for position, token in enumerate(full_ids):
            if position == len(prompt_ids):
                n_prompt = len(ids)
            if token == self.image_token_id:
                if seen >= len(counts):
                    raise ValueError("more <|image_pad|> tokens than images")
                ids.extend([token] * counts[seen])
                seen += 1
            else:
                ids.append(token)
        if seen != len(counts):
            raise ValueError(f"{len(counts)} images but {seen} <|image_pad|> tokens in the rendered prompt")
        if n_prompt == 0 or n_prompt >= len(ids):
            raise ValueError("empty reply to score")
        keys = [(image.key, min_pixels, max_pixels) for image in request.images]
        return Encoded(request.key, ids, n_prompt, [p for p, _ in patches], [g for _, g in patches], keys)

    # --- batches --------------------------------------------------------------------------------

    def _vision_features(self, batch: Sequence[Encoded]) -> list:
        """Vision-tower output per image of the batch, in order. A screenshot sits in up to N steps'
        windows: its features are computed once (all missing images in one vision pass) and reused."""
        import torch

        missing: dict = {}
        for e in batch:
            for key, pixels, grid in zip(e.image_keys, e.pixel_values, e.image_grid_thw):
                if key not in self._feature_cache and key not in missing:
                    missing[key] = (pixels, grid)
        if missing:
            pixels = torch.cat([p for p, _ in missing.values()]).to(self.device, self.dtype)
            grids = torch.cat([g for _, g in missing.values()]).to(self.device)
            with torch.inference_mode():
                out = self.model.model.get_image_features(pixels, grids, return_dict=True).pooler_output
            for key, features in zip(missing, out):
                self._feature_cache[key] = features
        features = []
        for e in batch:
            for key in e.image_keys:
                self._feature_cache.move_to_end(key)
                features.append(self._feature_cache[key])
        while len(self._feature_cache) > 64:
            self._feature_cache.popitem(last=False)
        return features

    def _batch_tensors(self, batch: Sequence[Encoded], *, align_prompts: bool = False) -> dict:
        """The batch's padded token ids, attention mask and image inputs. Right padding by default: every sequence
        starts at column 0 and keeps the positions it has alone. ``align_prompts``: each row starts
        (longest prompt − its prompt) columns in, so that every prompt ends at the same column and its reply
        follows — [left padding][prompt][reply][right padding], the shared prefill's layout; for prompts
        without a reply, left padding. Its width, longest prompt + longest reply, can pass the longest sequence
        by the difference between replies (tens of tokens; the batches are cut by sequence length)."""
        import torch

        if align_prompts:
            prompt_end = max(e.n_prompt for e in batch)
            starts = [prompt_end - e.n_prompt for e in batch]
            width = prompt_end + max(e.length - e.n_prompt for e in batch)
        else:
            starts = [0] * len(batch)
            width = max(e.length for e in batch)
        input_ids = torch.full((len(batch), width), self.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (e, start) in enumerate(zip(batch, starts)):
            input_ids[row, start : start + e.length] = torch.tensor(e.input_ids)
            attention[row, start : start + e.length] = 1
        tensors: dict[str, Any] = {
            "input_ids": input_ids.to(self.device),
            "attention_mask": attention.to(self.device),
            "mm_token_type_ids": (input_ids == self.image_token_id)
            .to(torch.int32)
            .mul(attention.to(torch.int32))
            .to(self.device),
        }
        grids = [g for e in batch for g in e.image_grid_thw]
        if grids:
            from transformers.modeling_outputs import BaseModelOutputWithPooling

            # The grids place the image tokens' rotary positions; the vision tower's output comes from the
            # per-screenshot cache, so a window's pixels are not copied to the device again for every step.
            tensors["image_grid_thw"] = torch.cat(grids).to(self.device)
            tensors["mm_encoder_outputs"] = {
                # One features tensor per screenshot, as Qwen2-VL reads them; the annotation says a single tensor.
                "image": BaseModelOutputWithPooling(pooler_output=self._vision_features(batch))  # type: ignore[arg-type]
            }
        return tensors

    def _reply_score(self, e: Encoded, states, targets) -> tuple[ScoreResult, Any]:
        """log p(reply | prompt) of one sequence from the decoder's output at the positions that predict the reply's
        tokens (position t predicts token t+1); also returns those positions' float logits."""
        import torch

        logits = self.model.lm_head(states).float()
        logprobs = torch.log_softmax(logits, -1).gather(-1, targets[:, None])[:, 0]
        result = ScoreResult(
            e.key,
            float(logprobs.sum()),
            float(logprobs.mean()),
            int(logprobs.numel()),
            token_logprobs=logprobs.tolist(),
        )
        return result, logits

    def loglik_batch(self, batch: Sequence[Encoded]) -> list[ScoreResult]:
        """log p(reply | prompt) per sequence: the sum and the per-token mean over the reply's tokens. The scoring
        without generation: no KV cache is kept (scoring with generation uses :meth:`prefill_batch`)."""
        import torch

        tensors = self._batch_tensors(batch)
        with torch.inference_mode():
            hidden = self.model.model(**tensors, use_cache=False).last_hidden_state
            results = []
            for row, e in enumerate(batch):
                # The reply's tokens n_prompt..L-1 are predicted at positions n_prompt-1..L-2.
                states = hidden[row, e.n_prompt - 1 : e.length - 1]
                targets = tensors["input_ids"][row, e.n_prompt : e.length]
                results.append(self._reply_score(e, states, targets)[0])
        return results

    def prefill_batch(self, batch: Sequence[Encoded]) -> Prefill:
        """One decoder pass over prompt + recorded reply that serves both the log-likelihood and the greedy reply.

        The prompt (about 6,400 tokens with five screenshots) is most of the work; run once for the score and once
        more as the generation's prefill, it went through the decoder twice. Here every prompt ends at the same
        column P ([left padding][prompt][reply][right padding]): the reply's log-likelihood is read from this pass
        (the same numbers as :meth:`loglik_batch`: masks and rotary positions make padding invisible), and its KV
        cache, cut to the first P columns, holds what a pass over the left-padded prompts alone would (attention is
        causal: no prompt column sees a reply), which the decoding continues from (:meth:`decode_batch`)."""
        import torch

        tensors = self._batch_tensors(batch, align_prompts=True)
        prompt_end = max(e.n_prompt for e in batch)
        input_ids = tensors["input_ids"]
        with torch.inference_mode():
            # The multimodal rotary positions (3 × rows × columns), computed here rather than inside the model so
            # that each row's next position can be read off below; padding columns are ignored.
            positions, _ = self.model.model.get_rope_index(
                input_ids,
                mm_token_type_ids=tensors["mm_token_type_ids"],
                image_grid_thw=tensors.get("image_grid_thw"),
                attention_mask=tensors["attention_mask"],
            )
            out = self.model.model(**tensors, position_ids=positions, use_cache=True)
            hidden = out.last_hidden_state
            cache = out.cache if getattr(out, "cache", None) is not None else out.past_key_values
            results, first_logits = [], []
            for row, e in enumerate(batch):
                # The reply's tokens sit at columns P..P+n-1 and are predicted at columns P-1..P+n-2; the logits
                # at P-1 (the prompt's last token) also choose the first generated token.
                n_reply = e.length - e.n_prompt
                states = hidden[row, prompt_end - 1 : prompt_end - 1 + n_reply]
                targets = input_ids[row, prompt_end : prompt_end + n_reply]
                result, logits = self._reply_score(e, states, targets)
                results.append(result)
                first_logits.append(logits[0])
            # The recorded replies' keys and values go: generation continues from the prompt alone.
            cache.crop(prompt_end - input_ids.shape[1])
            # A new token follows its own prompt's last position (a text token: its three rotary components are
            # equal). Not what the model derives by itself from the cache's length and the rope deltas of the padded
            # sequence: that is off by each row's padding (and, counted over the full width, by its reply's).
            next_positions = positions[:, :, prompt_end - 1].amax(0) + 1
        return Prefill(
            results,
            cache,
            torch.stack(first_logits),
            tensors["attention_mask"][:, :prompt_end],
            next_positions,
            input_ids[:, :prompt_end],
        )

    def decode_batch(self, prefill: Prefill, *, max_new_tokens: int) -> list[tuple[str, int]]:
        """The model's own greedy reply at each prompt of a :meth:`prefill_batch`, and its new tokens up to and
        including <|im_end|>. Greedy is the argmax of the logits after the checkpoint's own repetition penalty
        (``generation_config.repetition_penalty``, when the checkpoint sets one): what transformers' ``generate`` did
        with ``do_sample=False``, so the reply is the one the model's authors' decoding settings give. No sampling. The prefill's cache is consumed.

        A lean loop rather than transformers' ``generate`` (decoding is bound by kernel launches and Python, so
        its per-token machinery counts): one token per row per step, through the text decoder and the LM head
        only, at explicit rotary positions; a row that emitted <|im_end|> is fed padding until all rows have,
        or ``max_new_tokens`` are out. Each step runs in :meth:`_dynamic_steps` (the prefill's cache grows by a
        column a step) or, with ``static_decode``, :meth:`_static_steps` (a preallocated cache: every step has the
        same shapes, so on CUDA it is captured once as a CUDA graph and replayed)."""
        import torch

        rows = prefill.logits.shape[0]
        if max_new_tokens < 1:
            return [("", 0)] * rows
        logits = prefill.logits
        finished = torch.zeros(rows, dtype=torch.bool, device=logits.device)
        chosen_steps = []
        penalty = float(getattr(self.model.generation_config, "repetition_penalty", None) or 1.0)
        seen = None
        if penalty != 1.0 and prefill.prompt_ids is not None:
            # Every token of the prompt (not its left padding, which generate leaves out too) and of the reply so
            # far; a mask of the vocabulary's width keeps the step's shapes fixed. Padding goes to an extra column.
            vocabulary = logits.shape[-1]
            ids = prefill.prompt_ids.to(logits.device).masked_fill(prefill.attention_mask == 0, vocabulary)
            seen = torch.zeros((rows, vocabulary + 1), dtype=torch.bool, device=logits.device)
            seen.scatter_(1, ids, True)
            seen = seen[:, :vocabulary].contiguous()
        with torch.inference_mode():
            run_step = (
                self._static_steps(prefill, max_new_tokens=max_new_tokens)
                if self.static_decode
                else self._dynamic_steps(prefill)
            )
            for step in range(max_new_tokens):
                if seen is not None:
                    logits = _repetition_penalized(logits, seen, penalty)
                chosen = logits.argmax(-1)
                chosen = torch.where(finished, torch.full_like(chosen, self.pad_token_id), chosen)
                chosen_steps.append(chosen)
                if seen is not None:
                    seen.scatter_(1, chosen[:, None], True)
                finished |= chosen == self.eos_token_id
                if step + 1 == max_new_tokens or bool(finished.all()):
                    break
                positions = (prefill.next_positions + step).view(1, rows, 1).expand(3, rows, 1)
                logits = run_step(chosen[:, None], positions)
        replies = []
        for row in torch.stack(chosen_steps, dim=1).tolist():
            end = row.index(self.eos_token_id) + 1 if self.eos_token_id in row else len(row)
            replies.append((self.tokenizer.decode(row[:end], skip_special_tokens=True).strip(), end))
        return replies

    def _decode_step(self, input_ids, positions, attention_mask, cache):
        """One new token per row through the text decoder (its keys and values written to ``cache``), and the LM
        head's float logits after it."""
        out = self.model.model.language_model(
            input_ids=input_ids, position_ids=positions, attention_mask=attention_mask, cache=cache, use_cache=True
        )
        return self.model.lm_head(out.last_hidden_state[:, -1]).float()

    def _dynamic_steps(self, prefill: Prefill) -> Callable:
        """The decoding step on the prefill's own cache: its keys and values are concatenated with each new
        column, and the padding mask grows with them — new shapes every step."""
        import torch

        state = {"attention": prefill.attention_mask}

        def run_step(input_ids, positions):
            attention = state["attention"]
            state["attention"] = attention = torch.cat([attention, attention.new_ones(attention.shape[0], 1)], dim=1)
            return self._decode_step(input_ids, positions, attention, prefill.cache)

        return run_step

    def _static_steps(self, prefill: Prefill, *, max_new_tokens: int) -> Callable:
        """The decoding step on a static cache: transformers' ``StaticCache`` of a fixed width, holding the
        prefill's prompt columns, each step writing its column at the cache's own position counter (a tensor the
        step advances in place) and attending over the whole width through a padding mask that does not change
        during the decoding; columns past the current one are cut off by the causal mask, which the model derives
        from that counter. Every step has the same shapes and tensor addresses, which CUDA graphs need.

        The width is rounded up to a multiple of ``STATIC_CACHE_COLUMNS``: each distinct (rows, width) is its own
        CUDA graph (and, until torch.compile marks the dimensions dynamic, its own compile), and prompts with the
        same number of screenshots differ by tens of tokens; 256 masked columns add little to a step's attention
        over thousands. The cache is kept for the next batch of the same shape: a new cache has new addresses, and
        torch.compile would record the graph again (and stop doing so after
        ``torch._inductor.config.triton.cudagraph_unexpected_rerecord_limit`` times, 128, running it without a
        graph from then on)."""
        import torch

        rows, prompt_columns = prefill.attention_mask.shape
        width = _static_cache_width(prompt_columns, max_new_tokens)
        cache = self._static_cache_for(rows, width)
        # The prompt's columns move over one layer at a time, each dynamic layer dropped once copied, so that the
        # device holds the two caches whole at no moment (at 48 rows of 6,400 tokens a 2B model's cache is ~9 GB).
        dynamic_layers = prefill.cache.layers
        for index in range(len(dynamic_layers)):
            layer = dynamic_layers[index]
            cache.update(layer.keys, layer.values, index)
            dynamic_layers[index] = None
        dynamic_layers.clear()
        attention = torch.zeros(rows, width, dtype=torch.bool, device=prefill.attention_mask.device)
        attention[:, :prompt_columns] = prefill.attention_mask.bool()
        attention[:, prompt_columns:] = True  # the new tokens' columns, each visible from the step that writes it
        step = self._decode_step
        if self.compile_decode:
            if self._compiled_step is None:
                # reduce-overhead: inductor's kernels, captured as CUDA graphs and replayed (one launch per step
                # instead of hundreds). Compiled once per scorer; new shapes add graphs, not scorers.
                self._compiled_step = torch.compile(self._decode_step, mode="reduce-overhead")
            step = self._compiled_step

        def run_step(input_ids, positions):
            if self.compile_decode:
                # A new decoding step: the previous step's output buffers may be overwritten.
                torch.compiler.cudagraph_mark_step_begin()
            return step(input_ids, positions, attention, cache)

        return run_step

    def _static_cache_for(self, rows: int, width: int):
        """An empty ``StaticCache`` of ``rows`` × ``width`` columns: the one kept from the last batch if it has that
        shape, else a new one (the old one is dropped first, so the two are never held together)."""
        from transformers import StaticCache

        if self._static_cache_shape == (rows, width):
            self._static_cache.reset()
            return self._static_cache
        self._static_cache = self._static_cache_shape = None
        cache = StaticCache(config=self.model.config, max_cache_len=width)
        self._static_cache, self._static_cache_shape = cache, (rows, width)
        return cache

    def sample_replies(
        self,
        request: ScoreRequest,
        *,
        k: int,
        temperature: float,
        top_p: float,
        max_new_tokens: int,
        seed: int,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
    ) -> list[tuple[str, int]]:
        """k sampled replies at one prompt (``request.target`` is ignored): the prompt is prefilled once, its KV
        cache is repeated k times, and the k continuations are decoded together, each token drawn with
        ``temperature`` and nucleus ``top_p`` from a generator seeded with ``seed`` (same inputs, same replies).
        Returns (text, new tokens up to and including <|im_end|>) per sample."""
        import torch

        encoded = self.encode(
            ScoreRequest(request.key, request.messages, request.images, ""),
            min_pixels=min_pixels,
            max_pixels=max_pixels,
        )
        prompt = Encoded(
            encoded.key,
            encoded.input_ids[: encoded.n_prompt],
            encoded.n_prompt,
            encoded.pixel_values,
            encoded.image_grid_thw,
            encoded.image_keys,
        )
        tensors = self._batch_tensors([prompt])
        generator = torch.Generator(device=self.device).manual_seed(seed)
        with torch.inference_mode():
            # The one prefill: the prompt (images included) runs through the decoder once, for all k samples.
            out = self.model(**tensors, use_cache=True, logits_to_keep=1)
            cache = out.cache if getattr(out, "cache", None) is not None else out.past_key_values
            cache.batch_repeat_interleave(k)
            logits = out.logits[:, -1, :].float().expand(k, -1)
            tokens: list[list[int]] = [[] for _ in range(k)]
            finished = torch.zeros(k, dtype=torch.bool, device=self.device)
            for drawn in range(1, max_new_tokens + 1):
                chosen = _sample_next(logits, temperature=temperature, top_p=top_p, generator=generator)
                chosen = torch.where(finished, torch.full_like(chosen, self.pad_token_id), chosen)
                for sample_index, token in enumerate(chosen.tolist()):
                    if not finished[sample_index]:
                        tokens[sample_index].append(token)
                finished |= chosen == self.eos_token_id
                if bool(finished.all()) or drawn == max_new_tokens:
                    break
                # One new token per sample; positions follow from the cache length and the prompt's rope deltas.
                # The cache grows in place.
                step = self.model(input_ids=chosen[:, None], cache=cache, use_cache=True)
                logits = step.logits[:, -1, :].float()
        replies = []
        for row in tokens:
            end = row.index(self.eos_token_id) + 1 if self.eos_token_id in row else len(row)
            replies.append((self.tokenizer.decode(row[:end], skip_special_tokens=True).strip(), end))
        return replies

    def score(
        self,
        requests: Sequence[ScoreRequest],
        *,
        batch_tokens: int | None = None,
        max_batch: int | None = None,
        generate: bool = True,
        max_new_tokens: int = 128,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
    ) -> list[ScoreResult]:
        """Score requests in length-sorted batches; a request that fails is returned with ``error`` set. Each batch
        runs the decoder once over prompt + recorded reply: the reply's log-likelihood, and with ``generate`` the
        prefill the greedy decoding continues from (:meth:`prefill_batch`, :meth:`decode_batch`).

        None picks the device's defaults. GPU: batches of up to 48 sequences and 327,680 padded tokens — the
        greedy decoding costs about the same per token for one sequence as for 48 (it is bound by kernel
        launches, not arithmetic), so wide batches are what make it fast (bench/prescore.py on an H100, a
        2B model, 1920×1080 screenshots, with the earlier scoring that ran each prompt through the decoder twice:
        0.97 steps/s with 16,384 tokens, 2.95 with these; 36 GiB at peak. The shared prefill, which also keeps
        the KV cache of the whole batch, is not yet measured on a GPU). CPU: one sequence per batch, where
        attention with a padding mask falls back to a materialised-mask kernel slower than unpadded sequences
        one by one (the shared image preprocessing and vision features still apply), and 16,384 tokens."""
        on_gpu = self.device.startswith("cuda")
        if max_batch is None:
            max_batch = GPU_MAX_BATCH if on_gpu else 1
        if batch_tokens is None:
            batch_tokens = GPU_BATCH_TOKENS if on_gpu else CPU_BATCH_TOKENS
        results: dict[Any, ScoreResult] = {}
        encoded: list[Encoded] = []
        default_min, default_max = self.default_pixels
        prepared = self.preprocess_images(requests, min_pixels or default_min, max_pixels or default_max)
        for request in requests:
            try:
                encoded.append(self.encode(request, min_pixels=min_pixels, max_pixels=max_pixels, prepared=prepared))
            except Exception as exc:  # one bad step (image, template) must not stop the others
                results[request.key] = ScoreResult(request.key, error=f"{type(exc).__name__}: {exc}")
        remaining = sorted(encoded, key=lambda e: e.length)
        while remaining:
            # Batches are cut one at a time, so a limit learned from an out-of-memory error applies to the next one.
            limit = min(max_batch, self.batch_limit or max_batch)
            batch = length_batches(remaining, batch_tokens=batch_tokens, max_batch=limit)[0]
            remaining = remaining[len(batch) :]
            for result in self._score_batch(batch, generate=generate, max_new_tokens=max_new_tokens):
                results[result.key] = result
        return [results[request.key] for request in requests]

    def text_embeddings(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = EMBEDDING_BATCH,
        max_tokens: int = EMBEDDING_MAX_TOKENS,
    ):
        """One vector per text: the decoder's last hidden state averaged over the text's tokens (the plain text, no
        chat template, its first ``max_tokens`` tokens), L2-normalised, as a float32 numpy array (texts × hidden).
        A text without tokens gets zeros. Texts are sorted by length and run ``batch_size`` at a time, right-padded:
        a token attends only to the tokens before it, so padding changes no row (batched equals one by one up to
        float rounding), and the result does not depend on how the texts were batched."""
        import numpy as np
        import torch

        if batch_size < 1 or max_tokens < 1:
            raise ValueError("batch_size and max_tokens must be positive")
        hidden_size = self.model.config.get_text_config().hidden_size
        out = np.zeros((len(texts), hidden_size), dtype=np.float32)
        ids = [self._ids(text)[:max_tokens] if text else [] for text in texts]
        order = sorted((i for i in range(len(texts)) if ids[i]), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            width = len(ids[rows[-1]])
            input_ids = torch.full((len(rows), width), self.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for row, i in enumerate(rows):
                input_ids[row, : len(ids[i])] = torch.tensor(ids[i])
                mask[row, : len(ids[i])] = 1
            with torch.inference_mode():
                hidden = self.model.model(
                    input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device), use_cache=False
                ).last_hidden_state.float()
                weights = mask.to(hidden.device, torch.float32)[:, :, None]
                pooled = (hidden * weights).sum(1) / weights.sum(1)
                pooled = torch.nn.functional.normalize(pooled, dim=-1)
            out[rows] = pooled.cpu().numpy()
        return out

    def _score_and_generate(self, batch: list[Encoded], *, max_new_tokens: int) -> list[ScoreResult]:
        width = _static_cache_width(max(e.n_prompt for e in batch), max_new_tokens)
        if self._static_cache_shape not in (None, (len(batch), width)):
            # A kept static cache this batch will not use goes before the prefill, which may need its memory.
            self._static_cache = self._static_cache_shape = None
        prefill = self.prefill_batch(batch)
        replies = self.decode_batch(prefill, max_new_tokens=max_new_tokens)
        for result, (text, n_new) in zip(prefill.results, replies):
            result.generated, result.generated_tokens = text, n_new
        return prefill.results

    def _score_batch(self, batch: list[Encoded], *, generate: bool, max_new_tokens: int) -> list[ScoreResult]:
        try:
            if generate:
                return self._score_and_generate(batch, max_new_tokens=max_new_tokens)
            return self.loglik_batch(batch)
        except Exception as exc:
            if len(batch) == 1:
                log.warning("scoring %s failed", batch[0].key, exc_info=True)
                return [ScoreResult(batch[0].key, error=f"{type(exc).__name__}: {exc}")]
            out_of_memory = _out_of_memory(exc)
        # The halves are scored past the except block: inside it, the exception's traceback keeps the failed
        # pass's frames alive, and with them its activations and KV cache on the device, out of reach of the
        # halves and of the cache release below.
        # Out of memory: halve the batch, for this batch and every later one (the scorer keeps the limit).
        # Any other error: find the request that fails by scoring the halves.
        self._free_memory()
        middle = len(batch) // 2
        if out_of_memory:
            self.batch_limit = min(self.batch_limit or len(batch), max(1, middle))
            log.warning(
                "out of memory with %s sequences; batches of at most %s from now on", len(batch), self.batch_limit
            )
        halves = (batch[:middle], batch[middle:])
        return [r for half in halves for r in self._score_batch(half, generate=generate, max_new_tokens=max_new_tokens)]

    def _free_memory(self) -> None:
        """After a failed batch: the kept static cache goes too (the halves may need its memory; the next batch
        allocates one again), then the allocator's unused blocks go back to the device."""
        import torch

        self._static_cache = self._static_cache_shape = None
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()


def _static_cache_width(prompt_columns: int, max_new_tokens: int) -> int:
    """Columns of the static decoding's cache: the prompt's and the new tokens' (the last token chosen is never fed
    back, so max_new_tokens − 1 of them), rounded up to a multiple of STATIC_CACHE_COLUMNS."""
    needed = prompt_columns + max(0, max_new_tokens - 1)
    return -(-needed // STATIC_CACHE_COLUMNS) * STATIC_CACHE_COLUMNS


def _repetition_penalized(logits, seen, penalty: float):
    """The CTRL repetition penalty (as transformers applies it): a seen token's logit divided by ``penalty`` when
    positive, multiplied when negative, so it is always made less likely."""
    import torch

    return torch.where(seen, torch.where(logits > 0, logits / penalty, logits * penalty), logits)


def _sample_next(logits, *, temperature: float, top_p: float, generator):
    """One token per row: softmax at ``temperature``, cut to the smallest set of tokens whose probability reaches
    ``top_p`` (the most likely token is always kept), drawn with ``generator``."""
    import torch

    probs = torch.softmax(logits / max(temperature, 1e-5), dim=-1)
    ordered, order = probs.sort(dim=-1, descending=True)
    before = ordered.cumsum(dim=-1) - ordered  # probability of the tokens ranked above each one
    ordered = ordered.masked_fill(before >= top_p, 0.0)
    picked = torch.multinomial(ordered, 1, generator=generator)
    return order.gather(-1, picked)[:, 0]


def _out_of_memory(exc: BaseException) -> bool:
    import torch

    oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    return isinstance(exc, oom) or "out of memory" in str(exc).lower()


def length_batches(encoded: Sequence[Encoded], *, batch_tokens: int, max_batch: int) -> list[list[Encoded]]:
    """Group sequences of similar length: sort by length, then fill each batch while
    (batch size × longest length) stays under ``batch_tokens`` — the padded tensor's size."""
    batches: list[list[Encoded]] = []
    current: list[Encoded] = []
    for e in sorted(encoded, key=lambda e: e.length):
        if current and (len(current) + 1 > max_batch or (len(current) + 1) * e.length > batch_tokens):
            batches.append(current)
            current = []
        current.append(e)
    if current:
        batches.append(current)
    return batches


_SCORERS: dict[tuple, Qwen2VLScorer] = {}
_SCORERS_LOCK = threading.Lock()


def load_scorer(
    model_dir: str | Path, *, device: str | None = None, dtype: str | None = None, static_decode: bool = False
) -> Qwen2VLScorer:
    """The scorer for ``model_dir``, loaded once per process (a gpu worker keeps it between jobs). Its callers in a
    worker pass the same ``static_decode`` (settings.PRESCORE_STATIC_DECODE), so they share one loaded model."""
    path = Path(model_dir).resolve()
    # Files replaced in place (new weights under the same path) give a new scorer, and a new hash.
    stamp = max((p.stat().st_mtime_ns for p in path.iterdir() if p.is_file()), default=0) if path.is_dir() else 0
    key = (str(path), stamp, device, dtype, static_decode)
    with _SCORERS_LOCK:
        scorer = _SCORERS.get(key)
        if scorer is None:
            scorer = _SCORERS[key] = Qwen2VLScorer(model_dir, device=device, dtype=dtype, static_decode=static_decode)
            # What a worker's log needs to tell one deployment's decoding from another's.
            log.info(
                "loaded %s on %s (%s, %s greedy decoding)",
                path,
                scorer.device,
                str(scorer.dtype).removeprefix("torch."),
                "static" if static_decode else "dynamic",
            )
        return scorer

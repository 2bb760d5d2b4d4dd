"""The images of a recorded sample as veRL's processor expects them: ``multi_modal_data =
{"images": [PIL.Image, ...]}``, RGB, in the order they appear in the sample's tokens (the last
call's request), one entry per occurrence. veRL's worker re-runs the HF processor over them to
rebuild ``pixel_values`` / ``image_grid_thw`` for the recorded image tokens; the bytes are the
ones the harness sent, so the processor sizes them as the serving engine did.

Sources: ``forge export`` writes each referenced image to ``<batch>.blobs/<sha256>`` (replay);
the proxy's trajectory route can inline them (online, ``?images=1``).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
from typing import Optional


def image_from_bytes(data: bytes, ref: str = "?"):
    """A PIL RGB image from a Blob's bytes, checked against its sha256."""
    from PIL import Image  # type: ignore[import-not-found]

    digest = hashlib.sha256(data).hexdigest()
    if digest != ref:
        raise ValueError(f"image blob {ref}: its bytes hash to {digest} (a corrupt or foreign blob)")
    with Image.open(io.BytesIO(data)) as image:
        return image.convert("RGB")


class BlobDir:
    """Blobs written by ``forge export`` beside a batch (``<batch>.blobs/<sha256>``), cached per process."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._cache: dict[str, object] = {}

    def images(self, refs: Optional[list]) -> Optional[list]:
        if refs is None or len(refs) == 0:
            return None
        out = []
        for ref in refs:
            ref = str(ref)
            if ref not in self._cache:
                file = os.path.join(self.path, ref)
                if not os.path.exists(file):
                    raise FileNotFoundError(f"{file}: image {ref} of the batch is missing (forge export writes <batch>.blobs/ beside the batch; copy it with the batch)")
                with open(file, "rb") as f:
                    self._cache[ref] = image_from_bytes(f.read(), ref)
            out.append(self._cache[ref])
        return out


def inline_images(refs: Optional[list], blobs: dict) -> Optional[list]:
    """Images from a trajectory response that inlines its Blobs (``{sha256: {media_type, data}}``, base64)."""
    if refs is None or len(refs) == 0:
        return None
    out = []
    for ref in refs:
        blob = blobs.get(ref)
        if blob is None:
            raise ValueError(f"image {ref}: not in the trajectory's blobs (was it fetched with ?images=1?)")
        out.append(image_from_bytes(base64.b64decode(blob["data"]), ref))
    return out


def image_token_runs(ids: list, image_token_id: int) -> list:
    """The runs of image pads in a sample's ids, as (start, length), in order: an engine-expanded
    Qwen-VL prompt holds one run per image, its length the image's merged patch count."""
    runs: list = []
    for i, t in enumerate(ids):
        if t != image_token_id:
            continue
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    return runs


def processor_image_tokens(processor, image) -> Optional[int]:
    """The image tokens ``processor`` gives ``image`` (transformers' Qwen2-VL image processor:
    smart_resize's patches over merge_size²), or None for a processor that does not say."""
    ip = getattr(processor, "image_processor", None)
    patches = getattr(ip, "get_number_of_image_patches", None)
    merge = getattr(ip, "merge_size", None)
    if patches is None or not merge:
        return None
    width, height = image.size
    return int(patches(height, width, {})) // (int(merge) ** 2)


def check_image_tokens(sample_id: str, ids: list, images: Optional[list], processor) -> None:
    """Refuses an output whose images do not pair with its image-pad runs, naming the sample.

    veRL's worker pairs the k-th run of ``<|image_pad|>`` in the ids with the k-th image it hands
    the processor (``image_grid_thw`` row k, ``get_rope_index``); a missing, extra or reordered
    image does not fail there but walks ``get_rope_index`` off its grid or scatters embeddings
    into the wrong tokens (verl/workers/rollout/utils.py). Checked only where veRL has a
    processor (a vision model): without one it trains on the ids alone."""
    image_token_id = getattr(processor, "image_token_id", None) if processor is not None else None
    if image_token_id is None:
        return
    runs = image_token_runs(ids, int(image_token_id))
    images = images or []
    if len(runs) != len(images):
        raise ValueError(
            f"sample {sample_id}: {len(runs)} image-token runs in its ids but {len(images)} images "
            f"(image_refs); veRL pairs them in order, so the row cannot train (re-export it from the records)"
        )
    for k, ((start, length), image) in enumerate(zip(runs, images)):
        want = processor_image_tokens(processor, image)
        if want is not None and want != length:
            raise ValueError(
                f"sample {sample_id}: image {k} ({image.size[0]}x{image.size[1]}) is {want} tokens for "
                f"veRL's processor but its run at token {start} holds {length}: the processor "
                f"(preprocessor_config.json: min_pixels, max_pixels, patch_size, merge_size) is not the "
                f"one the serving engine ran, or the images are out of order"
            )


def vision_ids(processor) -> Optional[tuple]:
    """``(<|vision_start|>, <|image_pad|>, <|vision_end|>)`` of a Qwen-VL processor veRL hands the
    loop, or None (a text model, or a processor without an image token)."""
    pad = getattr(processor, "image_token_id", None) if processor is not None else None
    tokenizer = getattr(processor, "tokenizer", None)
    if pad is None or tokenizer is None:
        return None
    start, end = tokenizer.convert_tokens_to_ids("<|vision_start|>"), tokenizer.convert_tokens_to_ids("<|vision_end|>")
    unknown = getattr(tokenizer, "unk_token_id", None)
    if not isinstance(start, int) or not isinstance(end, int) or unknown in (start, end):
        return None
    return (start, int(pad), end)

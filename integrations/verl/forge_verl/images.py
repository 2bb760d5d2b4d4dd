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

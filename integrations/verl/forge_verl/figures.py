"""Forge's per-iteration figures as TensorBoard scalars beside veRL's.

    python -m forge_verl.figures

Reads ``$FORGE_FIGURES`` (written by forge before each training step: workflows/local/figures.ts)
and adds each figure (``forge/pass@1``, ``forge/mean_reward``, ...) as a scalar at its
``global_step`` to ``$TENSORBOARD_DIR``, with the writer veRL's own tracker uses
(``torch.utils.tensorboard.SummaryWriter``, verl/utils/tracking.py), so one TensorBoard run holds
veRL's loss and KL and forge's reward and pass@k at the same steps. Forge writes the file while
the trainer starts: this waits for it (``$FORGE_FIGURES_WAIT_SECONDS``, default 600). Figures that
are undefined (null, e.g. pass@k with no task scored) are left out. Exits 2 naming what is missing.
"""

import json
import math
import os
import sys
import time


def main() -> int:
    path = os.environ.get("FORGE_FIGURES")
    logdir = os.environ.get("TENSORBOARD_DIR")
    if not path or not logdir:
        print("forge_verl.figures: needs FORGE_FIGURES and TENSORBOARD_DIR (forge run sets both for training.localCommand)", file=sys.stderr)
        return 2
    # Forge scores the iteration while the trainer starts and writes the file whole (a rename).
    wait = float(os.environ.get("FORGE_FIGURES_WAIT_SECONDS", "600"))
    deadline = time.monotonic() + wait
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        step = int(data["global_step"])
        figures = data["figures"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"forge_verl.figures: {path}: {error}", file=sys.stderr)
        return 2
    from torch.utils.tensorboard import SummaryWriter

    os.makedirs(logdir, exist_ok=True)
    writer = SummaryWriter(logdir)
    written = 0
    for tag, value in figures.items():
        if isinstance(value, (int, float)) and math.isfinite(value):
            writer.add_scalar(tag, float(value), step)
            written += 1
    writer.close()
    print(f"forge_verl.figures: {written} figure(s) of iteration {data.get('iteration')} at step {step} in {logdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Recorded Qwen2.5-VL image samples through veRL 0.9.1's own vision path.

What the trainer gets from a recorded image sample: the prompt ids as the engine ran them (each
image expanded into its run of ``<|image_pad|>``), the images in order (``multi_modal_data``),
and nothing else, because veRL recomputes the rest: its V1 worker (``AgentLoopWorkerTQ.
_agent_loop_postprocess``, trainer/ppo/v1/agent_loop_tq.py) runs, per output,
``_compute_multi_modal_inputs`` (the HF processor over the images: ``pixel_values``,
``image_grid_thw``) and ``_compute_position_ids`` (the model's ``get_rope_index``, which
``hf_processor`` binds to the processor: M-RoPE positions from the ids and the grid). Here those
two methods of veRL's class run on every output ForgeAgentLoop replays from the exported batch,
with the processor veRL's ``hf_processor`` builds for a Qwen2.5-VL directory; the result is
checked against the records and against Qwen2.5-VL's M-RoPE layout.

Run through ``bun test tests/verl/vision.test.ts`` (it records the rollouts, exports
them and sets FORGE_TEST_VISION_SETUP)."""

from __future__ import annotations

import asyncio
import inspect
import unittest
from types import SimpleNamespace

import torch

from tests import verl_harness as vh

SETUP = vh.env_json("FORGE_TEST_VISION_SETUP")
IMAGE_PAD = 151655

#: Qwen2-VL's image processor (transformers' defaults): max_pixels 1,003,520, so a 1920x1080
#: screenshot is fewer tokens than Qwen2.5-VL's (12,845,056) gave it when it was served.
QWEN2_VL_PREPROCESSOR = {**vh.QWEN2_5_VL_PREPROCESSOR, "max_pixels": 1003520}


def replay(batch: str, rollout_id: str, processor, response_length: int = 16384) -> list:
    """ForgeAgentLoop built as veRL's worker builds it (hydra, the processor veRL hands it) and
    run on a group row standing for one rollout: all of its outputs."""
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    yaml_path = vh.agent_loop_yaml([{"name": "forge_agent", "_target_": "forge_verl.agent_loop.ForgeAgentLoop", "mode": "replay", "batch_path": batch, "drop_single_session_groups": False}])
    cfg = vh.compose([f"actor_rollout_ref.model.path={vh.tiny_model_dir()}", f"actor_rollout_ref.rollout.agent.agent_loop_config_path={yaml_path}", "data.max_prompt_length=16384", f"data.max_response_length={response_length}"])
    for entry in OmegaConf.load(yaml_path):
        _agent_loop_registry[entry.name] = entry

    async def go():
        loop = hydra.utils.instantiate(
            config=_agent_loop_registry["forge_agent"],
            trainer_config=DictConfigWrap(config=cfg),
            server_manager=None,
            tokenizer=processor.tokenizer,
            processor=processor,
            hf_model_type="qwen2_5_vl",
            dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(cfg.data),
            tools=ToolListWrap([]),
        )
        return await loop.run({"temperature": 1.0}, uid=f"u-{rollout_id}", session_id=0, global_steps=1, extra_info={"group": "gv", "rollout_ids": [rollout_id], "index": 0}, raw_prompt=[])

    return asyncio.run(go())


def verl_postprocess(processor, output) -> tuple[dict, torch.Tensor, torch.Tensor]:
    """What veRL's V1 worker computes for one output (agent_loop_tq.py, _agent_loop_postprocess):
    its own two methods, called on a worker holding only the processor and tokenizer."""
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

    worker = SimpleNamespace(processor=processor, tokenizer=processor.tokenizer, _get_mm_processor_kwargs=lambda audio=None: {})
    input_ids = torch.tensor([*output.prompt_ids, *output.response_ids], dtype=torch.int64)
    attention_mask = torch.ones_like(input_ids)
    inputs = inspect.unwrap(AgentLoopWorkerTQ._compute_multi_modal_inputs)(worker, output, input_ids)
    positions = inspect.unwrap(AgentLoopWorkerTQ._compute_position_ids)(worker, input_ids.unsqueeze(0), attention_mask.unsqueeze(0), inputs).squeeze(0)
    return inputs, input_ids, positions


def pad_runs(ids: list) -> list:
    from forge_verl.images import image_token_runs

    return image_token_runs(ids, IMAGE_PAD)


class RecordedImageSamplesThroughVeRL(unittest.TestCase):
    """Every output of every recorded image rollout, in every token mode recorded."""

    @classmethod
    def setUpClass(cls):
        cls.processor = vh.vl_processor(vh.vl_model_dir())

    def test_processor_is_qwen25_vl(self):
        p = self.processor
        self.assertEqual(type(p).__name__, "Qwen2_5_VLProcessor")
        self.assertEqual(p.image_token_id, IMAGE_PAD)
        self.assertEqual(p.image_processor.size["longest_edge"], 12845056)
        vh.checked("processor")

    def test_outputs_against_verl_vision_path(self):
        from forge_verl.batch import Batch
        from forge_verl.images import processor_image_tokens

        for b in SETUP["batches"]:
            rows = Batch.load(b["batch"])
            for rollout_id, trajectory in b["rollouts"].items():
                outputs = replay(b["batch"], rollout_id, self.processor)
                self.assertEqual(len(outputs), len(trajectory["samples"]), f"{b['name']} {rollout_id}")
                samples = sorted(trajectory["samples"], key=lambda s: (bool(s["is_final"]), s["sample_index"]))
                for output, sample, row in zip(outputs, samples, rows.rollout_samples(rollout_id)):
                    where = f"{b['name']} {output.extra_fields['forge_sample_id']}"
                    ids = [*output.prompt_ids, *output.response_ids]
                    # The ids are the recorded ones, as the engine ran them (expanded).
                    self.assertEqual(ids, [*sample["prompt_ids"], *sample["response_ids"]], where)
                    images = output.multi_modal_data["images"]
                    self.assertEqual(row["sample_id"], sample["sample_id"], where)
                    refs = list(row["image_refs"])
                    self.assertEqual(refs, SETUP["order"][: len(refs)], where)
                    self.assertEqual([list(im.size) for im in images], [SETUP["sizes"][r] for r in refs], where)
                    runs = pad_runs(ids)
                    self.assertEqual(len(runs), len(images), where)
                    # veRL's processor over the images: one grid row per image, in order, each
                    # the size of the recorded run (what the serving engine expanded it to).
                    inputs, input_ids, positions = verl_postprocess(self.processor, output)
                    grid = inputs["image_grid_thw"].tolist()
                    self.assertEqual([t * h * w // 4 for t, h, w in grid], [n for _, n in runs], where)
                    self.assertEqual([processor_image_tokens(self.processor, im) for im in images], [n for _, n in runs], where)
                    self.assertEqual(inputs["images_seqlens"].tolist(), [t * h * w for t, h, w in grid], where)
                    self.assertEqual(inputs["pixel_values"].shape[0], sum(t * h * w for t, h, w in grid), where)
                    vh.checked("image grids", len(grid))
                    self.check_positions(positions, ids, runs, grid, where)
                    vh.checked("samples through veRL's vision path")

    def check_positions(self, positions: torch.Tensor, ids: list, runs: list, grid: list, where: str) -> None:
        """Qwen2.5-VL's M-RoPE (modeling_qwen2_5_vl.py, get_rope_index) as veRL stores it: row 0
        the text position 0..L-1; rows 1-3 (t, h, w): text tokens advance all three by one, an
        image's run of n = (h/2)(w/2) pads sits at the position after the text before it, t
        constant, h and w walking its merged grid row by row, and the text after it resumes at
        that position + max(h/2, w/2)."""
        L = len(ids)
        self.assertEqual(tuple(positions.shape), (4, L), where)
        self.assertEqual(positions[0].tolist(), list(range(L)), where)
        want = torch.zeros((3, L), dtype=torch.int64)
        at, nxt = 0, 0
        for (start, n), (_t, h, w) in zip(runs, grid):
            for i in range(at, start):
                want[:, i] = nxt
                nxt += 1
            gh, gw = h // 2, w // 2
            self.assertEqual(gh * gw, n, where)
            k = torch.arange(n)
            want[0, start : start + n] = nxt
            want[1, start : start + n] = nxt + k // gw
            want[2, start : start + n] = nxt + k % gw
            nxt += max(gh, gw)
            at = start + n
        for i in range(at, L):
            want[:, i] = nxt
            nxt += 1
        self.assertTrue(torch.equal(positions[1:], want), where)
        vh.checked("M-RoPE positions")

    def test_a_processor_that_sizes_images_otherwise_is_refused(self):
        """Qwen2-VL's max_pixels sizes the 1920x1080 screenshot smaller than the engine did:
        replaying with that processor is refused, naming the sample and the image, instead of
        veRL pairing the images with the wrong runs."""
        other = vh.vl_processor(vh.vl_model_dir("tiny-qwen2-vl-sizes", QWEN2_VL_PREPROCESSOR))
        b = SETUP["batches"][0]
        rollout_id = next(iter(b["rollouts"]))
        with self.assertRaisesRegex(ValueError, r"sample .*image 1 \(1920x1080\) is \d+ tokens for veRL's processor but its run at token \d+ holds \d+"):
            replay(b["batch"], rollout_id, other)
        vh.checked("refusals")

    def test_a_cut_through_an_image_leaves_the_image_out(self):
        """veRL's truncation (``overlong: truncate``, the response cut to response_length) through
        the middle of a screenshot: the cut moves to before the image, the image leaves
        ``multi_modal_data`` with it, and veRL's vision path pairs what remains."""
        for b in SETUP["batches"]:
            if not b["name"].startswith("token-in"):
                continue
            rollout_id = next(iter(b["rollouts"]))
            full = replay(b["batch"], rollout_id, self.processor)[-1]
            runs = pad_runs([*full.prompt_ids, *full.response_ids])
            start, n = runs[-1]  # the last screenshot, in the response (a later call's prompt)
            self.assertGreaterEqual(start, len(full.prompt_ids), b["name"])
            cut_at = start - len(full.prompt_ids) + n // 2
            out = replay(b["batch"], rollout_id, self.processor, response_length=cut_at)[-1]
            self.assertEqual(out.extra_fields["forge_truncated"], 1, b["name"])
            self.assertEqual(out.response_ids, full.response_ids[: start - 1 - len(full.prompt_ids)], b["name"])  # before its <|vision_start|>
            self.assertEqual(len(out.multi_modal_data["images"]), len(runs) - 1, b["name"])
            inputs, _, positions = verl_postprocess(self.processor, out)
            self.assertEqual([t * h * w // 4 for t, h, w in inputs["image_grid_thw"].tolist()], [k for _, k in runs[:-1]], b["name"])
            self.check_positions(positions, [*out.prompt_ids, *out.response_ids], runs[:-1], inputs["image_grid_thw"].tolist(), b["name"])
            vh.checked("cuts through an image")

    def test_images_out_of_order_or_missing_are_refused(self):
        from forge_verl.images import check_image_tokens

        b = SETUP["batches"][0]
        rollout_id = next(iter(b["rollouts"]))
        final = replay(b["batch"], rollout_id, self.processor)[-1]
        ids = [*final.prompt_ids, *final.response_ids]
        images = final.multi_modal_data["images"]
        check_image_tokens("s", ids, images, self.processor)
        with self.assertRaisesRegex(ValueError, r"sample s: image 0 \(1920x1080\)"):
            check_image_tokens("s", ids, [images[1], images[0], *images[2:]], self.processor)
        with self.assertRaisesRegex(ValueError, r"sample s: 4 image-token runs in its ids but 3 images"):
            check_image_tokens("s", ids, images[:3], self.processor)
        # A text model's loop (no processor) trains on the ids alone: nothing to pair.
        check_image_tokens("s", ids, None, None)
        vh.checked("refusals", 2)


if __name__ == "__main__":
    unittest.main()

"""Replay through veRL 0.9.1's own V1 rollout path (tests/verl_harness.py): the exported group
dataset read by veRL's RLHFDataset and dataloader, batched by the trainer's own code, rolled out
by the real AgentLoopWorkerTQ (hydra-instantiated ForgeAgentLoop, n sessions per row), stored
in a real TransferQueue, and advantaged by the trainer's own ``_compute_advantage``.

Run through ``bun test tests/verl/python.test.ts`` (it exports the batch from records
and sets FORGE_TEST_SETUP)."""

from __future__ import annotations

import asyncio
import base64
import io
import unittest

import numpy as np
import torch

from tests import verl_harness as vh

SETUP = vh.env_json("FORGE_TEST_SETUP")


def final_samples(rollout: dict) -> list[dict]:
    samples = sorted(rollout["samples"], key=lambda s: (bool(s["is_final"]), s["sample_index"]))
    return samples


class ReplayThroughVeRL(unittest.TestCase):
    """One veRL step over the exported batch (4 groups × rollout.n = 2), checked against the records."""

    @classmethod
    def setUpClass(cls):
        vh.ensure_ray()
        vh.clear()
        yaml_path = vh.agent_loop_yaml([{"name": "forge_agent", "_target_": "forge_verl.agent_loop.ForgeAgentLoop", "mode": "replay", "batch_path": SETUP["batch"], "overlong": "drop", "drop_single_session_groups": False}])
        # The Argo command, with this machine's paths for the pod's.
        overrides = vh.replace_overrides(
            SETUP["command"],
            {
                "data.train_files": SETUP["groups"],
                "data.val_files": SETUP["groups"],
                "actor_rollout_ref.model.path": vh.tiny_model_dir(),
                "actor_rollout_ref.rollout.agent.agent_loop_config_path": yaml_path,
                "trainer.default_local_dir": str(vh.work_dir() / "checkpoints"),
            },
        )
        cls.cfg = vh.compose(overrides)
        vh.validate(cls.cfg)
        from forge_verl import COUNTERS

        COUNTERS.clear()
        cls.worker = vh.worker(cls.cfg, vh.llm_client(cls.cfg, []))
        cls.dataset, loader = vh.dataloader(cls.cfg, cls.worker.tokenizer, cls.worker.processor)
        cls.batch = vh.next_batch(cls.cfg, loader, global_steps=4)
        asyncio.run(vh.run_step(cls.worker, cls.batch))
        cls.stored = vh.stored()
        cls.keys = vh.sample_keys()
        cls.counters = dict(COUNTERS)
        cls.rows = {}
        uids = list(cls.batch["uid"])
        extra = cls.batch["extra_info"]
        for i, uid in enumerate(uids):
            cls.rows[uid] = extra[i] if isinstance(extra[i], dict) else extra[i].data

    def test_rlhf_dataset_reads_the_group_dataset(self):
        # veRL's own dataset class over the exported parquet: one row per group, the chat prompt
        # as raw_prompt, extra_info (index, group, rollout_ids) intact.
        self.assertEqual(len(self.dataset), 4)
        groups = set()
        for i in range(len(self.dataset)):
            item = self.dataset[i]
            self.assertEqual(item["index"], item["extra_info"]["index"])
            self.assertEqual(item["agent_name"], "forge_agent")
            self.assertEqual(len(item["extra_info"]["rollout_ids"]), 2)
            self.assertIsInstance(item["raw_prompt"], list)
            groups.add(item["extra_info"]["group"])
            vh.checked("RLHFDataset rows")
        self.assertEqual(groups, {"g1", "g2", "g3", "g4"})

    def test_every_session_replays_its_rollout_token_for_token(self):
        # uid_session_i keys: session s of a row is rollout_ids[s], all of its fitting samples.
        import transfer_queue as tq  # noqa: F401

        data = vh.fetch(self.keys)
        by_key = {k: i for i, k in enumerate(self.keys)}
        seen_rollouts = set()
        for uid, extra in self.rows.items():
            for session, rollout_id in enumerate(extra["rollout_ids"]):
                rollout = SETUP["rollouts"][rollout_id]
                samples = final_samples(rollout)
                keys = sorted(k for k in self.keys if k.startswith(f"{uid}_{session}_"))
                if rollout_id == "r6":
                    self.assertEqual(keys, [], "r6's final prompt (80 tokens) exceeds rollout.prompt_length 64: left out whole")
                    vh.checked("left-out trajectories")
                    continue
                if rollout_id == "r2":
                    # its first sample's response (40 tokens) exceeds response_length 32: left out
                    samples = [s for s in samples if len(s["response_ids"]) <= 32]
                self.assertEqual(len(keys), len(samples), f"{rollout_id}: outputs stored")
                seen_rollouts.add(rollout_id)
                for key, sample in zip(keys, samples):
                    i = by_key[key]
                    self.assertEqual(data["prompts"][i].tolist(), sample["prompt_ids"], key)
                    self.assertEqual(data["responses"][i].tolist(), sample["response_ids"], key)
                    self.assertEqual(data["response_mask"][i].tolist(), sample["response_mask"], key)
                    self.assertEqual(data["loss_mask"][i].tolist(), sample["response_mask"], key)
                    np.testing.assert_allclose(data["rollout_log_probs"][i].numpy(), np.array(sample["response_logprobs"], dtype=np.float32), rtol=0, atol=0)
                    rm = data["rm_scores"][i]
                    self.assertEqual(float(rm[-1]), float(rollout["reward"]), f"{key}: the rollout reward on the last token (V1 copies it to every output)")
                    self.assertEqual(float(rm[:-1].abs().sum()), 0.0)
                    self.assertEqual(self.stored[key]["min_global_steps"], min(sample["policy_versions"]))
                    self.assertEqual(self.stored[key]["max_global_steps"], max(sample["policy_versions"]))
                    self.assertEqual(self.stored[key]["global_steps"], 4)
                    vh.checked("replayed samples")
        self.assertEqual(seen_rollouts, {"r1", "r2", "r3", "r4", "r5", "r7", "r8"})

    def test_left_out_samples_are_counted(self):
        # r2's first sample (40 > 32 response tokens) and r6's only one (80 > 64 prompt tokens);
        # r6 had no sample left, so its trajectory went whole.
        self.assertEqual(self.counters.get("overlong_samples"), 2)
        self.assertEqual(self.counters.get("overlong_trajectories"), 1)
        vh.checked("loop counters", 2)

    def test_grpo_advantages_equal_verls_on_the_exported_rewards_and_uids(self):
        from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

        tags = [self.stored[k] for k in self.keys]
        got = vh.compute_advantage(self.cfg, self.keys, tags)
        # Expected: veRL's compute_grpo_outcome_advantage on the export's own rewards and uids
        # (group ids), one score per replayed rollout (the ones left out do not count).
        rollouts = [r for uid, extra in self.rows.items() for r in extra["rollout_ids"] if r != "r6"]
        groups = np.array([SETUP["rollouts"][r]["group"] for r in rollouts], dtype=object)
        rewards = torch.tensor([[float(SETUP["rollouts"][r]["reward"])] for r in rollouts])
        want, _ = compute_grpo_outcome_advantage(rewards, torch.ones_like(rewards), groups)
        want_by_rollout = {r: float(want[i, 0]) for i, r in enumerate(rollouts)}
        by_uid_session = {}
        for uid, extra in self.rows.items():
            for s, r in enumerate(extra["rollout_ids"]):
                by_uid_session[f"{uid}_{s}"] = r
        for i, key in enumerate(self.keys):
            rollout = by_uid_session[key.rsplit("_", 1)[0]]
            adv, mask = got["advantages"][i], got["response_mask"][i]
            expected = want_by_rollout[rollout] * mask.float()
            torch.testing.assert_close(adv.float(), expected, rtol=1e-5, atol=1e-6, msg=f"{key} ({rollout})")
            vh.checked("GRPO advantages")
        # g2's rewards are equal: no signal; g3 holds r5 alone (r6 left out): a group of one.
        self.assertEqual(want_by_rollout["r3"], 0.0)
        self.assertAlmostEqual(want_by_rollout["r5"], 0.5 / (1 + 1e-6), places=6)


class ImagesReachMultiModalData(unittest.TestCase):
    """An image rollout replayed as veRL's worker builds the loop: multi_modal_data["images"] is
    the recorded images as PIL RGB, in order of occurrence (red, blue, red)."""

    def test_images_in_replay(self):
        import hydra
        from PIL import Image
        from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
        from verl.utils.dataset.rl_dataset import RLHFDataset

        yaml_path = vh.agent_loop_yaml([{"name": "forge_agent", "_target_": "forge_verl.agent_loop.ForgeAgentLoop", "mode": "replay", "batch_path": SETUP["batch"], "overlong": "drop", "drop_single_session_groups": False}])
        cfg = vh.compose(
            vh.replace_overrides(
                SETUP["command"],
                {
                    "data.train_files": SETUP["groups"],
                    "data.val_files": SETUP["groups"],
                    "actor_rollout_ref.model.path": vh.tiny_model_dir(),
                    "actor_rollout_ref.rollout.agent.agent_loop_config_path": yaml_path,
                    "trainer.default_local_dir": str(vh.work_dir() / "checkpoints"),
                },
            )
        )
        from transformers import AutoTokenizer
        from omegaconf import OmegaConf

        tokenizer = AutoTokenizer.from_pretrained(vh.tiny_model_dir())
        for entry in OmegaConf.load(yaml_path):  # what AgentLoopWorker.__init__ does with the YAML
            _agent_loop_registry[entry.name] = entry

        async def go():
            loop = hydra.utils.instantiate(
                config=_agent_loop_registry["forge_agent"],
                trainer_config=DictConfigWrap(config=cfg),
                server_manager=None,
                tokenizer=tokenizer,
                processor=None,
                hf_model_type="qwen3",
                dataset_cls=RLHFDataset,
                data_config=DictConfigWrap(cfg.data),
                tools=ToolListWrap([]),
            )
            extra = {"group": "g3", "rollout_ids": ["r5", "r6"], "index": 2}
            return await loop.run({"temperature": 1.0}, uid="u-img", session_id=0, global_steps=1, extra_info=extra, index=2, raw_prompt=[])

        outputs = asyncio.run(go())
        self.assertEqual(len(outputs), 1)
        images = outputs[0].multi_modal_data["images"]
        self.assertEqual(len(images), 3)
        for image, ref in zip(images, SETUP["image_order"]):
            self.assertIsInstance(image, Image.Image)
            self.assertEqual(image.mode, "RGB")
            with Image.open(io.BytesIO(base64.b64decode(SETUP["images"][ref]))) as recorded:
                self.assertEqual(list(image.getdata()), list(recorded.convert("RGB").getdata()))
            vh.checked("replayed images")
        self.assertEqual(images[0].getpixel((0, 0)), (255, 0, 0))
        self.assertEqual(images[1].getpixel((0, 0)), (0, 0, 255))


if __name__ == "__main__":
    unittest.main()

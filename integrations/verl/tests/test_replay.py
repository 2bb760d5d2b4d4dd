"""Replay mode returns exactly the recorded tokens of an exported batch (stdlib only).

The batch comes from ``FORGE_TEST_BATCH`` (the bun test exports one from a real segment log and
passes the expected samples, assembled from the records, in ``FORGE_TEST_EXPECTED``); run alone,
the committed fixture is used.
"""

import asyncio
import json
import os
import unittest

from forge_verl import VERL_AVAILABLE, Batch, ForgeAgentLoop
from forge_verl._verl import dummy_config

HERE = os.path.dirname(__file__)
BATCH = os.environ.get("FORGE_TEST_BATCH", os.path.join(HERE, "fixtures", "batch.parquet"))
EXPECTED = os.environ.get("FORGE_TEST_EXPECTED", os.path.join(HERE, "fixtures", "expected.json"))

CONFIG = {"actor_rollout_ref": {"rollout": {"response_length": 4096, "prompt_length": 4096}}}


def make_loop(**kwargs):
    async def build():
        return ForgeAgentLoop(dummy_config(CONFIG), None, None, None, mode="replay", batch_path=BATCH, **kwargs)

    return asyncio.run(build())


async def run_all(items):
    loop = ForgeAgentLoop(dummy_config(CONFIG), None, None, None, mode="replay", batch_path=BATCH)
    return [await loop.run({"temperature": 1.0}, **item) for item in items]


class ReplayTest(unittest.TestCase):
    def setUp(self):
        with open(EXPECTED, encoding="utf-8") as f:
            self.expected = json.load(f)
        self.batch = Batch.load(BATCH)

    def test_verl_import_is_guarded(self):
        import importlib.util

        self.assertEqual(VERL_AVAILABLE, importlib.util.find_spec("verl") is not None)

    def test_batch_rows_match_records(self):
        self.assertEqual([r["sample_id"] for r in self.batch.rows], [s["sample_id"] for s in self.expected])
        for row, want in zip(self.batch.rows, self.expected):
            for field in ("prompt_ids", "response_ids", "response_mask", "response_logprobs", "reward", "num_turns"):
                self.assertEqual(row[field], want[field], f"{want['sample_id']}.{field}")

    def test_loop_returns_recorded_tokens_by_index(self):
        # What veRL passes: the dataset row's fields, with `index` copied from extra_info.index.
        items = [{**row, "index": row["extra_info"]["index"]} for row in self.batch.rows]
        outputs = asyncio.run(run_all(items))
        for out, want in zip(outputs, self.expected):
            self.assertEqual(out.prompt_ids, want["prompt_ids"])
            self.assertEqual(out.response_ids, want["response_ids"])
            self.assertEqual(out.response_mask, want["response_mask"])
            self.assertEqual(out.response_logprobs, want["response_logprobs"])
            self.assertEqual(out.reward_score, want["reward"])
            self.assertEqual(out.num_turns, want["num_turns"])
            self.assertEqual(out.extra_fields["forge_sample_id"], want["sample_id"])

    def test_lookup_by_sample_id_wins_over_index(self):
        last = self.batch.rows[-1]
        outputs = asyncio.run(run_all([{"index": 0, "extra_info": {"sample_id": last["sample_id"]}}]))
        self.assertEqual(outputs[0].response_ids, last["response_ids"])

    def test_group_rows_hand_out_each_sample_once_per_round(self):
        # A --group-rows dataset row, as veRL repeats it rollout.n times with the same fields.
        ids = [row["sample_id"] for row in self.batch.rows]
        item = {"index": 0, "extra_info": {"group": "g-test", "sample_ids": ids}}
        outputs = asyncio.run(run_all([item] * (len(ids) + 1)))
        got = [out.extra_fields["forge_sample_id"] for out in outputs]
        self.assertEqual(got, ids + ids[:1])
        for out, row in zip(outputs, self.batch.rows):
            self.assertEqual(out.response_ids, row["response_ids"])

    def test_unknown_index_names_the_batch(self):
        with self.assertRaises(KeyError) as ctx:
            asyncio.run(run_all([{"index": 10**6}]))
        self.assertIn("extra_info.index 1000000", str(ctx.exception))

    def test_long_response_is_cut_with_mask_and_logprobs(self):
        row = max(self.batch.rows, key=lambda r: len(r["response_ids"]))
        cut = len(row["response_ids"]) - 1

        async def one():
            config = {"actor_rollout_ref": {"rollout": {"response_length": cut, "prompt_length": 4096}}}
            loop = ForgeAgentLoop(dummy_config(config), None, None, None, mode="replay", batch_path=BATCH)
            return await loop.run({}, extra_info={"sample_id": row["sample_id"]})

        out = asyncio.run(one())
        self.assertEqual(out.response_ids, row["response_ids"][:cut])
        self.assertEqual(len(out.response_mask), cut)
        self.assertEqual(len(out.response_logprobs), cut)
        self.assertTrue(out.extra_fields["forge_truncated"])

    def test_registered_by_name(self):
        from forge_verl import _verl

        self.assertEqual(_verl._agent_loop_registry["forge_agent"]["_target_"], "forge_verl.agent_loop.ForgeAgentLoop")

    def test_replay_needs_a_batch(self):
        async def build():
            return ForgeAgentLoop(dummy_config(CONFIG), None, None, None, mode="replay", batch_path=None)

        saved = os.environ.pop("FORGE_BATCH", None)
        try:
            with self.assertRaises(ValueError) as ctx:
                asyncio.run(build())
            self.assertIn("FORGE_BATCH", str(ctx.exception))
        finally:
            if saved is not None:
                os.environ["FORGE_BATCH"] = saved


if __name__ == "__main__":
    unittest.main()

"""The loop's own rules, on hand-made samples (veRL 0.9.1's AgentLoopOutput)."""

from __future__ import annotations

import base64
import unittest

from forge_verl import Batch, Limits, route_selection, sample_output, sampling_of, select_samples, selected_outputs, selection_query, server_upstreams, trajectory_outputs
from forge_verl.images import image_from_bytes
from forge_verl.row import READS, SPEC, sample_of_row

from tests import verl_harness as vh


def sample(sid: str, prompt: int, response: int, final: bool = False, versions=(2,)) -> dict:
    """A sample as the loop reads it: an exported row flattened by the row specification."""
    return sample_of_row(row(sid, prompt, response, final, versions))


def row(sid: str, prompt: int, response: int, final: bool = False, versions=(2,)) -> dict:
    """An exported row, each field where row_spec.json puts it."""
    return {
        "sample_id": sid,
        "rollout_id": sid.split("#")[0],
        "prompt_ids": list(range(prompt)),
        "response_ids": list(range(response)),
        "response_mask": [1] * response,
        "response_logprobs": [-0.5] * response,
        "reward": 1.0,
        "num_turns": 2,
        "extra_info": {"index": 0, "policy_versions": list(versions), "is_final": final, "sample_index": int(sid.split("#")[1])},
    }


class Rules(unittest.TestCase):
    def test_a_cut_never_splits_an_image(self):
        # ids: S = <|vision_start|> 1, P = <|image_pad|> 5, E = <|vision_end|> 2; images A (prompt) and B (response).
        S, P, E = 1, 5, 2
        s = sample("r#0", 0, 0, True)
        s.update(prompt_ids=[9, S, P, P, P, E, 9], response_ids=[7, 7, 3, S, P, P, P, P, E, 7], image_refs=["a", "b"])
        s.update(response_mask=[1] * 10, response_logprobs=[-0.5] * 10)
        vision = (S, P, E)
        # The response cut in B's pads: cut before B's <|vision_start|>, B leaves image_refs.
        out = Limits(response_length=6, vision=vision).cut(s)
        self.assertEqual((out["response_ids"], out["response_mask"], out["image_refs"]), ([7, 7, 3], [1, 1, 1], ["a"]))
        # A cut after B's <|vision_end|> keeps both; a text model's cut is veRL's.
        self.assertEqual(Limits(response_length=9, vision=vision).cut(s)["image_refs"], ["a", "b"])
        self.assertEqual(Limits(response_length=6).cut(s)["response_ids"], [7, 7, 3, S, P, P])
        # The prompt left-cut in A: cut after A's <|vision_end|>, A leaves.
        out = Limits(prompt_length=3, vision=vision).cut(s)
        self.assertEqual((out["prompt_ids"], out["image_refs"]), ([9], ["b"]))
        vh.checked("loop rules", 4)

    def test_several_outputs_final_last_reward_and_versions(self):
        outs = trajectory_outputs([sample("r#0", 3, 2, versions=(1, 2)), sample("r#1", 3, 4, True)], reward=0.5, limits=Limits(8, 8), several=True, images_of=lambda s: None)
        self.assertEqual([o.extra_fields["forge_sample_id"] for o in outs], ["r#0", "r#1"])
        self.assertEqual([o.reward_score for o in outs], [0.0, 0.5])
        self.assertEqual((outs[0].extra_fields["min_global_steps"], outs[0].extra_fields["max_global_steps"]), (1, 2))
        self.assertEqual(outs[1].extra_fields["reward_extra_info"], {})
        self.assertNotIn("reward_extra_info", outs[0].extra_fields)
        self.assertEqual(set(outs[0].as_dict()) >= {"prompts", "responses", "rm_scores", "rollout_log_probs", "num_turns"}, True)
        vh.checked("loop rules", 5)

    def test_legacy_trainer_gets_the_final_sample_and_a_count(self):
        sel = select_samples([sample("r#0", 3, 2), sample("r#1", 3, 4, True)], Limits(), several=False)
        self.assertEqual(([s["sample_id"] for s in sel.samples], sel.left_out), (["r#1"], 1))
        vh.checked("loop rules")

    def test_auxiliary_samples_are_never_trained(self):
        title = {**sample("r#2", 3, 2), "auxiliary": "title"}
        exported = row("r#3", 3, 2)
        exported["extra_info"]["auxiliary"] = "compaction"
        exported_summary = sample_of_row(exported)
        counters: dict = {}
        outs = trajectory_outputs([sample("r#0", 3, 2), title, exported_summary, sample("r#1", 3, 4, True)], reward=1.0, limits=Limits(), several=True, images_of=lambda s: None, counters=counters)
        self.assertEqual([o.extra_fields["forge_sample_id"] for o in outs], ["r#0", "r#1"])
        self.assertEqual(counters["auxiliary_samples"], 2)
        self.assertEqual(counters.get("overlong_trajectories", 0), 0)
        sel = select_samples([title], Limits(), several=True)
        self.assertEqual((sel.samples, sel.auxiliary), ([], 1))
        self.assertIn("no agent sample", sel.dropped)
        vh.checked("loop rules", 4)

    def test_overlong_drop(self):
        limits = Limits(prompt_length=4, response_length=3, overlong="drop")
        sel = select_samples([sample("r#0", 3, 9), sample("r#1", 3, 3, True)], limits, several=True)
        self.assertEqual(([s["sample_id"] for s in sel.samples], sel.overlong, sel.dropped), (["r#1"], 1, None))
        sel = select_samples([sample("r#0", 3, 1), sample("r#1", 5, 1, True)], limits, several=True)
        self.assertEqual((sel.samples, sel.overlong), ([], 2))
        self.assertIn("rollout.prompt_length=4", sel.dropped)
        vh.checked("loop rules", 2)

    def test_empty_responses_are_left_out(self):
        for policy in ("drop", "truncate"):
            sel = select_samples([sample("r#0", 3, 0), sample("r#1", 3, 2, True)], Limits(overlong=policy), several=True)
            self.assertEqual(([s["sample_id"] for s in sel.samples], sel.overlong), (["r#1"], 1))
            self.assertIn("empty", select_samples([sample("r#0", 3, 0, True)], Limits(overlong=policy), several=True).dropped)
        # truncate: an empty final hands the reward to the last sample with a response
        outs = trajectory_outputs([sample("r#0", 3, 2), sample("r#1", 3, 0, True)], reward=1.0, limits=Limits(), several=True, images_of=lambda s: None)
        self.assertEqual([(o.extra_fields["forge_sample_id"], o.reward_score) for o in outs], [("r#0", 1.0)])
        vh.checked("loop rules", 5)

    def test_overlong_truncate_is_verls_default_cut(self):
        # veRL's agent loops: response_ids[:response_length] (with mask and logprobs), prompt_ids[-prompt_length:]
        long = sample("r#1", 6, 5, True)
        long["prompt_ids"] = [10, 11, 12, 13, 14, 15]
        long["response_ids"] = [20, 21, 22, 23, 24]
        long["response_mask"] = [1, 1, 0, 1, 1]
        counters: dict = {}
        outs = trajectory_outputs([sample("r#0", 3, 9), long], reward=1.0, limits=Limits(prompt_length=4, response_length=3), several=True, images_of=lambda s: None, counters=counters)
        self.assertEqual([len(o.response_ids) for o in outs], [3, 3])
        self.assertEqual((outs[1].prompt_ids, outs[1].response_ids, outs[1].response_mask), ([12, 13, 14, 15], [20, 21, 22], [1, 1, 0]))
        self.assertEqual(outs[1].reward_score, 1.0)
        self.assertEqual(counters["truncated_samples"], 2)
        vh.checked("loop rules", 4)

    def test_overlong_penalize_gives_the_cut_run_the_penalty(self):
        counters: dict = {}
        outs = trajectory_outputs([sample("r#0", 3, 2), sample("r#1", 3, 9, True)], reward=1.0, limits=Limits(response_length=3, overlong="penalize", overlong_reward=-1.0), several=True, images_of=lambda s: None, counters=counters)
        self.assertEqual([o.reward_score for o in outs], [0.0, -1.0])
        self.assertEqual(counters["penalized_trajectories"], 1)
        # a non-final overlong sample is only cut: the run ended within the limit
        outs = trajectory_outputs([sample("r#0", 3, 9), sample("r#1", 3, 2, True)], reward=1.0, limits=Limits(response_length=3, overlong="penalize"), several=True, images_of=lambda s: None)
        self.assertEqual([o.reward_score for o in outs], [0.0, 1.0])
        with self.assertRaises(ValueError):
            Limits(overlong="cut")
        vh.checked("loop rules", 4)

    def test_online_takes_the_routes_selection_and_refuses_an_old_proxy(self):
        # Online, the proxy's trajectory route selects (trajectories/select.ts); the loop asks with its settings.
        query = selection_query(Limits(prompt_length=4, response_length=3, overlong="penalize", overlong_reward=-1.0, vision=(1, 5, 2)), several=False)
        self.assertEqual(query, {"auxiliary": "drop", "overlong": "penalize", "overlong_reward": "-1.0", "final_only": "1", "max_prompt_length": "4", "max_response_length": "3", "vision": "1,5,2"})
        self.assertNotIn("max_prompt_length", selection_query(Limits(), several=True))
        served = {"rollout_id": "r", "reward": 1.0, "samples": [sample("r#0", 3, 2), sample("r#1", 3, 3, True)], "selection": {"reward": -1.0, "of": 3, "overlong": 1, "left_out": 0, "auxiliary": 1, "truncated": 1, "final_overlong": True, "penalized": True, "dropped": None}}
        counters: dict = {}
        outs = selected_outputs(route_selection(served, "rollout r"), reward=1.0, images_of=lambda s: None, counters=counters)
        self.assertEqual([o.reward_score for o in outs], [0.0, -1.0])
        self.assertEqual((counters["penalized_trajectories"], counters["auxiliary_samples"], counters["truncated_samples"]), (1, 1, 1))
        self.assertEqual(outs[0].extra_fields["forge_auxiliary"], 1)
        with self.assertRaisesRegex(ValueError, "predates selection at the trajectory route"):
            route_selection({"rollout_id": "r", "samples": []}, "rollout r")
        with self.assertRaisesRegex(ValueError, "not the one forge_verl reads"):
            route_selection({"samples": [], "selection": {"of": 1}}, "rollout r")
        vh.checked("loop rules", 6)

    def test_a_group_that_falls_to_one_session_is_left_out(self):
        import asyncio

        from forge_verl.verl_state import GroupSettle

        async def group(kept):
            settle = GroupSettle()
            return await asyncio.gather(*(settle.settle("uid", len(kept), k) for k in kept))

        self.assertEqual(asyncio.run(group([True, False, False])), [True, True, True])
        self.assertEqual(asyncio.run(group([True, True, False])), [False, False, False])
        self.assertEqual(asyncio.run(group([True])), [False])  # rollout.n = 1: nothing to compare, kept

        async def short_row():  # fewer sessions than rollout.n (__rollout_n__): kept after the wait
            return await GroupSettle().settle("uid", 3, True, timeout_s=0.05)

        self.assertFalse(asyncio.run(short_row()))
        vh.checked("loop rules", 4)

    def test_inline_images_from_the_trajectory_route(self):
        import hashlib

        from forge_verl.images import inline_images

        red = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
        sha = hashlib.sha256(base64.b64decode(red)).hexdigest()
        images = inline_images([sha, sha], {sha: {"media_type": "image/png", "data": red}})
        self.assertEqual([im.getpixel((0, 0)) for im in images], [(255, 0, 0), (255, 0, 0)])
        self.assertIsNone(inline_images([], {}))
        with self.assertRaisesRegex(ValueError, "not in the trajectory's blobs"):
            inline_images(["f" * 64], {})
        vh.checked("loop rules", 3)

    def test_bad_samples_name_themselves(self):
        bad = sample("r#0", 3, 2, True)
        bad["response_mask"] = [1]
        with self.assertRaisesRegex(ValueError, "r#0: response_ids/response_mask/response_logprobs lengths differ"):
            sample_output(bad, final=True, reward=1)
        with self.assertRaisesRegex(ValueError, "no response token"):
            sample_output(sample("r#1", 3, 0, True), final=True, reward=1)
        with self.assertRaisesRegex(ValueError, "hash to"):
            image_from_bytes(base64.b64decode("aGk="), "0" * 64)
        vh.checked("loop rules", 3)

    def test_server_addresses_and_sampling(self):
        self.assertEqual(server_upstreams(["10.0.0.5:41877", "[::1]:8000", "http://h:1/v1"]), ["http://10.0.0.5:41877/v1", "http://[::1]:8000/v1", "http://h:1/v1"])
        self.assertEqual(sampling_of({"temperature": 1, "top_p": 0.9, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}), {"temperature": 1.0, "top_p": 0.9, "top_k": -1})
        vh.checked("loop rules", 2)

    def test_the_row_specification_holds_what_the_loop_reads_each_in_one_place(self):
        # row_spec.json is generated from trajectories/row.ts (its own test fails when the file drifts).
        for fmt in ("verl", "sft"):
            fields = [e["field"] for e in SPEC[fmt]["row"] + SPEC[fmt]["extra_info"]]
            columns = [e["column"] for e in SPEC[fmt]["row"] + SPEC[fmt]["extra_info"]]
            self.assertEqual((len(set(fields)), len(set(columns))), (len(fields), len(fields)), f"{fmt}: a field in two places")
        verl = {e["field"] for e in SPEC["verl"]["row"] + SPEC["verl"]["extra_info"]}
        self.assertEqual([name for name in READS if name not in verl], [])
        flat = sample_of_row({**row("r#0", 2, 1, True), "uid": "g", "extra_info": {"index": 4, "is_final": True, "status": "failed"}})
        self.assertEqual((flat["group"], flat["index"], flat["status"], flat["is_final"]), ("g", 4, "failed", True))
        with self.assertRaisesRegex(KeyError, "b.parquet: a row lacks response_mask.*forge export --format verl --out b.parquet"):
            sample_of_row({k: v for k, v in row("r#0", 2, 1).items() if k != "response_mask"}, "b.parquet")
        vh.checked("loop rules", 4)

    def test_lookup(self):
        rows = [row("a#0", 2, 1, True), row("b#0", 2, 1), row("b#1", 2, 1, True)]
        for i, r in enumerate(rows):
            r["extra_info"]["index"] = i
        batch = Batch(rows)
        samples, rid = batch.lookup({"session_id": 1, "extra_info": {"rollout_ids": ["a", "b"]}})
        self.assertEqual((rid, [s["sample_id"] for s in samples]), ("b", ["b#0", "b#1"]))
        self.assertEqual(batch.lookup({"index": 0})[1], "a")
        with self.assertRaisesRegex(KeyError, "no samples of rollout 'zz'"):
            batch.lookup({"session_id": 0, "extra_info": {"rollout_ids": ["zz"]}})
        self.assertEqual(batch.lookup({"sample_id": "b#0"})[0][0]["sample_id"], "b#0")
        with self.assertRaisesRegex(KeyError, "neither"):
            batch.lookup({})
        # Group rows of an older export named final samples only: refused, naming the batch and the fix.
        with self.assertRaisesRegex(KeyError, r"<rows>: the dataset row of group 'g1' names only extra_info.sample_ids.*re-export.*--group-rows"):
            batch.lookup({"session_id": 0, "extra_info": {"group": "g1", "sample_ids": ["a#0", "b#1"]}})
        vh.checked("loop rules", 4)


if __name__ == "__main__":
    unittest.main()

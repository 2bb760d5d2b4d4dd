import { expect, test } from "bun:test";
import { engineRequest, idArray } from "./engine-request.ts";

test("idArray: a Uint32Array copied by index into a plain array, an array passed as it is", () => {
  const typed = new Uint32Array([151644, 872, 198, 4294967295]);
  const out = idArray(typed);
  expect(Array.isArray(out)).toBe(true);
  expect(out).toEqual([151644, 872, 198, 4294967295]);
  expect(idArray(new Uint32Array(0))).toEqual([]);
  const plain = [1, 2, 3];
  expect(idArray(plain)).toBe(plain);
});

test("engineRequest: the prompt ids go into the body (vLLM prompt, SGLang input_ids) and not into the recorded body", () => {
  const ids = idArray(new Uint32Array([5, 6, 7]));
  const vllm = engineRequest("vllm", { model: "m", max_tokens: 8 }, ids, { maxModelLen: 100, topLogprobs: 0 });
  expect([vllm.path, vllm.body.prompt, "prompt" in vllm.recorded, vllm.maxTokens]).toEqual(["/v1/completions", [5, 6, 7], false, 8]);
  const sglang = engineRequest("sglang", { model: "m" }, ids, { maxModelLen: 100, topLogprobs: 0 });
  expect([sglang.path, sglang.body.input_ids, "input_ids" in sglang.recorded, sglang.maxTokens]).toEqual(["/generate", [5, 6, 7], false, 97]);
  expect(JSON.parse(JSON.stringify(sglang.body)).input_ids).toEqual([5, 6, 7]);
});

test("engineRequest: vLLM is asked for the sampled ids as token_id:N (return_tokens_as_token_ids), not return_token_ids, which would echo the whole prompt", () => {
  const vllm = engineRequest("vllm", { model: "m", max_tokens: 8, stream: true }, [5, 6, 7], { maxModelLen: 100, topLogprobs: 0 });
  expect(vllm.body).toMatchObject({ logprobs: 0, return_tokens_as_token_ids: true, skip_special_tokens: false, stream: true });
  expect("return_token_ids" in vllm.body).toBe(false);
  expect(vllm.recorded).toMatchObject({ return_tokens_as_token_ids: true });
});

test("engineRequest: SGLang is asked to echo the prompt only when it expands images (return_prompt_token_ids puts the whole prompt in every streamed event)", () => {
  const text = engineRequest("sglang", { model: "m", stream: true }, [5, 6, 7], { maxModelLen: 100, topLogprobs: 0 });
  expect("return_prompt_token_ids" in text.body).toBe(false);
  expect(text.body).toMatchObject({ return_logprob: true, stream: true });
  const images = engineRequest("sglang", { model: "m", stream: true }, [5, 151655, 7], { maxModelLen: 100, topLogprobs: 0, images: ["data:image/png;base64,AAAA"], expandedLength: 6 });
  expect(images.body).toMatchObject({ return_prompt_token_ids: true, image_data: ["data:image/png;base64,AAAA"] });
  expect(images.recorded).toMatchObject({ return_prompt_token_ids: true });
});

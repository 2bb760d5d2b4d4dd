/**
 * The policy simulator: an OpenAI-compatible server that behaves like vLLM serving Qwen3
 * (real token ids, logprobs, tool calls), playing scripted policies. It stands in for the
 * model in tests and the quickstart, nothing else.
 */
export { startPolicySimulator } from "./server.ts";

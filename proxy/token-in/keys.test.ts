import { beforeAll, describe, expect, test } from "bun:test";
import { loadModel, QWEN3, type Model } from "../../model/index.ts";
import { answerKey, chainAnswer, echoKey, echoedReasoningAsText, KEPT_ANSWER_CHARS, messageKey, reasoningAsTextKey, runKey, sentAnswerKey, settingsKey } from "./keys.ts";

let model: Model;
beforeAll(async () => {
  model = await loadModel(QWEN3);
});

const tools = [{ type: "function", function: { name: "read", parameters: { type: "object", properties: { path: { type: "string" } } } } }];
/** The prepared messages of a conversation (vLLM's preprocessing: argument strings parsed). */
const prepared = (messages: unknown[], t: unknown[] = tools) => model.prepare({ messages, tools: t } as never);
const assistant = (content: string, args: string, id = "call_1") => ({ role: "assistant", content, tool_calls: [{ id, type: "function", function: { name: "read", arguments: args } }] });

describe("token-in keys", () => {
  test("an echo differing only in what the template never shows has the answer's key", () => {
    const sent = { content: "\n\nI'll look.\n", reasoning: "think", toolCalls: [{ name: "read", arguments: '{"path": "a.csv", "n": 1}' }] };
    // Arguments re-serialized compact with keys reordered, text trimmed, another call id, reasoning dropped.
    const echo = prepared([{ role: "user", content: "go" }, assistant("I'll look.", '{"n":1,"path":"a.csv"}', "renamed")]).conversation[1]!;
    expect(messageKey(echo)).toBe(answerKey(sent));
  });

  test("nested arguments compare as values: dict keys in any order at any depth, lists in order, floats as floats", () => {
    const sent = (args: string) => ({ content: "", reasoning: null, toolCalls: [{ name: "read", arguments: args }] });
    const echo = (args: string) => messageKey(prepared([{ role: "user", content: "go" }, assistant("", args)]).conversation[1]!);
    const args = '{"b": {"y": 1, "x": [1, {"d": 2, "c": 1.5}]}, "a": "é\\n"}';
    expect(echo('{"a":"é\\n","b":{"x":[1,{"c":1.5,"d":2}],"y":1}}')).toBe(answerKey(sent(args)));
    expect(echo('{"a":"é\\n","b":{"x":[{"c":1.5,"d":2},1],"y":1}}')).not.toBe(answerKey(sent(args)));
    expect(echo('{"a":"é\\n","b":{"x":[1,{"c":1.5,"d":2.0}],"y":1}}')).not.toBe(answerKey(sent(args)));
    expect(echo('{"a":"é\\n","b":{"x":[1,{"c":1.5,"d":2}],"y":1,"z":null}}')).not.toBe(answerKey(sent(args)));
  });

  test("what the policy would see differently changes the key", () => {
    const sent = { content: "I'll look.", reasoning: null, toolCalls: [{ name: "read", arguments: '{"path": "a.csv"}' }] };
    for (const echo of [assistant("I'll look.", '{"path":"b.csv"}'), assistant("I will look.", '{"path":"a.csv"}'), { role: "assistant", content: "I'll look." }]) {
      expect(messageKey(prepared([{ role: "user", content: "go" }, echo]).conversation[1]!)).not.toBe(answerKey(sent));
    }
    expect(messageKey(prepared([{ role: "user", content: "a" }]).conversation[0]!)).not.toBe(messageKey(prepared([{ role: "user", content: "b" }]).conversation[0]!));
  });

  test("reasoning sent back as text before the content (pi over Messages) has the reasoning-as-text key, and only then", () => {
    const sent = { content: "\n\nI'll look.\n", reasoning: "\nRead it first.\n", toolCalls: [{ name: "read", arguments: '{"path": "a.csv"}' }] };
    const run = (text: string) => runKey([prepared([{ role: "user", content: "go" }, assistant(text, '{"path":"a.csv"}')]).conversation[1]!], { squashed: true });
    expect(run("\nRead it first.\n\n\nI'll look.\n")).toBe(reasoningAsTextKey(sent)!);
    expect(run("Read it first. I'll look.")).toBe(reasoningAsTextKey(sent)!);
    expect(run("I'll look.")).not.toBe(reasoningAsTextKey(sent)!);
    expect(reasoningAsTextKey({ ...sent, reasoning: null })).toBeUndefined();
  });

  test("a chain's answer: a short one kept as sent, its keys made when compared and its text dropped once both are; a long one's keys made at once", () => {
    const sent = { content: "\n\nI'll look.\n", reasoning: "\nRead it first.\n", toolCalls: [{ name: "read", arguments: '{"path": "a.csv"}' }] };
    const kept = chainAnswer(sent);
    expect(kept).toEqual({ sent });
    expect(sentAnswerKey(kept)).toBe(answerKey(sent));
    expect(kept.sent).toEqual(sent); // the reasoning key is not made yet
    const echo = prepared([{ role: "user", content: "go" }, assistant("Read it first. I'll look.", '{"path":"a.csv"}')]).conversation[1]!;
    expect(echoedReasoningAsText(kept, [echo])).toBe(true);
    expect(kept).toEqual({ key: answerKey(sent), reasoningAsText: reasoningAsTextKey(sent)!, sent: undefined });
    expect(echoedReasoningAsText(kept, [echo])).toBe(true);

    // No reasoning: nothing to make later, the text dropped with the first key.
    const plain = chainAnswer({ ...sent, reasoning: null });
    expect(plain.reasoningAsText).toBeNull();
    expect(sentAnswerKey(plain)).toBe(answerKey(sent));
    expect(plain.sent).toBeUndefined();
    expect(echoedReasoningAsText(plain, [echo])).toBe(false);

    const long = { ...sent, reasoning: "x".repeat(KEPT_ANSWER_CHARS) };
    expect(chainAnswer(long)).toEqual({ key: answerKey(long), reasoningAsText: reasoningAsTextKey(long)! });
  });

  test("an echo's key is its message's key when it is one message of text, its run's otherwise", () => {
    const conversation = prepared([{ role: "user", content: "go" }, assistant("I'll look.", '{"path":"a.csv"}'), { role: "assistant", content: "More." }, { role: "tool", content: "x", tool_call_id: "call_1" }]).conversation;
    const keys = conversation.map(messageKey);
    expect(echoKey(conversation, keys, 1, 2)).toBe(runKey(conversation.slice(1, 2)));
    expect(echoKey(conversation, keys, 1, 3)).toBe(runKey(conversation.slice(1, 3)));
    expect(echoKey(conversation, keys, 1, 2)).toBe(answerKey({ content: "I'll look.", toolCalls: [{ name: "read", arguments: '{"path": "a.csv"}' }] }));
  });

  test("settings: other tools or template variables change the key, add_generation_prompt does not", () => {
    const m = [{ role: "user", content: "go" }];
    const base = settingsKey(prepared(m));
    expect(settingsKey(model.prepare({ messages: m, tools, add_generation_prompt: true } as never))).toBe(base);
    expect(settingsKey(prepared(m, []))).not.toBe(base);
    expect(settingsKey(model.prepare({ messages: m, tools, chat_template_kwargs: { enable_thinking: false } } as never))).not.toBe(base);
    // The same tool list again (the preprocessing's cache) keeps its key only with the same other variables, in either order of calls.
    const thinkingOff = model.prepare({ messages: m, tools, chat_template_kwargs: { enable_thinking: false } } as never);
    const other = settingsKey(thinkingOff);
    expect(settingsKey(prepared(m))).toBe(base);
    expect(settingsKey(thinkingOff)).toBe(other);
    expect(settingsKey(model.prepare({ messages: m, tools, chat_template_kwargs: { zeta: 1, alpha: [1] } } as never))).not.toBe(base);
    expect(settingsKey(model.prepare({ messages: m, tools: null } as never))).toBe(settingsKey(model.prepare({ messages: m } as never)));
    expect(settingsKey(model.prepare({ messages: m } as never))).not.toBe(base);
  });
});

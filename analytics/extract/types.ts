/** What the analytics need from one model call, independent of the protocol it spoke. */
export type ToolUse = {
  /** The protocol's id for the call (chat `tool_calls[].id`, Responses `call_id`, Anthropic `tool_use.id`). */
  id: string;
  name: string;
  /** The arguments as JSON text (Anthropic's `input` object is serialized). */
  arguments: string;
};

export type ToolResult = {
  /** The id of the tool use this answers. */
  id: string;
  /** The result as text (content blocks are joined). */
  text: string;
  /** Only Anthropic carries an explicit flag; elsewhere null and decided by `classify`. */
  isError: boolean | null;
  /** The tool's name, from the call of the same id earlier in the request's history ("" when not there). */
  name: string;
};

export type CallView = {
  /** Tool names offered in the request's `tools`. */
  toolsOffered: string[];
  /** Tool calls the model made in this call's response, in order. */
  toolUses: ToolUse[];
  /** Tool results the harness sent in this call's request (the whole history, in order). */
  toolResults: ToolResult[];
  /** The assistant's text in the response. */
  assistantText: string;
};

/** Thrown when a body is not what its protocol says; names the call and the problem. */
export class ExtractError extends Error {
  override name = "ExtractError";
}

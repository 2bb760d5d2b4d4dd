/**
 * `create(schema, init)` without its reflective walk per call, for the messages the proxy
 * builds on every model call (ModelCall, Record, Usage, StoredBody, SamplingParams).
 *
 * protobuf-es's `create` visits every field of the schema and converts each init value; on the
 * proxy's hot path (thousands of calls a second) that walk was ~3 % of the proxy's CPU. Here the
 * message `create(schema)` gives is built once, and each call copies it, gives it its own lists,
 * maps and oneof holders, and sets the init's fields as they are. The init therefore takes
 * values as the message holds them (a sub-message already built, not its init): what the
 * proxy passes. Anything else goes through `create`.
 */
import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";

/**
 * A function that returns a new message of `schema`, equal to `create(schema, init)` for an
 * init of message-shaped values (undefined values keep the default, as `create` does).
 *
 * @example
 * const newUsage = messageFactory(UsageSchema);
 * newUsage({ promptTokens: 5 }) // as create(UsageSchema, { promptTokens: 5 })
 */
export function messageFactory<Desc extends DescMessage>(schema: Desc): (init?: Partial<MessageShape<Desc>>) => MessageShape<Desc> {
  const template = create(schema) as unknown as Record<string, unknown>;
  // Lists, maps and oneof holders are mutable objects: each message gets its own.
  const own = Object.keys(template).filter((key) => {
    const value = template[key];
    return value !== null && typeof value === "object" && !(value instanceof Uint8Array);
  });
  return (init) => {
    const message: Record<string, unknown> = { ...template };
    for (const key of own) {
      const value = template[key];
      message[key] = Array.isArray(value) ? [] : { ...(value as object) };
    }
    if (init) for (const key in init) if ((init as Record<string, unknown>)[key] !== undefined) message[key] = (init as Record<string, unknown>)[key];
    return message as MessageShape<Desc>;
  };
}

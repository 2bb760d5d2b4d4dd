import { expect, test } from "bun:test";
import { unsandboxedWarning } from "./sandbox.ts";

test("auto without a working bubblewrap warns that rollouts run unsandboxed; a chosen mode does not", () => {
  const warning = unsandboxedWarning("auto", false);
  expect(warning).toContain("UNSANDBOXED");
  expect(warning).toContain("apt-get install -y bubblewrap");
  expect(warning).toContain("sandbox: none");
  expect(unsandboxedWarning("auto", true)).toBeUndefined();
  expect(unsandboxedWarning("none", false)).toBeUndefined();
  // bwrap without bubblewrap is refused outright (resolveSandbox), not warned about.
  expect(unsandboxedWarning("bwrap", false)).toBeUndefined();
});

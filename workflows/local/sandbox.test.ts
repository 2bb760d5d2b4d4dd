import { expect, test } from "bun:test";
import { unsandboxedWarning } from "./sandbox.ts";

test("auto without a working bubblewrap warns that rollouts run unsandboxed; a chosen mode, or a refused run, does not", () => {
  const warning = unsandboxedWarning("auto", { bwrapWorks: false, root: false });
  expect(warning).toContain("UNSANDBOXED");
  expect(warning).toContain("apt-get install -y bubblewrap");
  expect(warning).toContain("sandbox: none");
  expect(unsandboxedWarning("auto", { bwrapWorks: false, root: true, allowRootUnsandboxed: true })).toContain("UNSANDBOXED");
  expect(unsandboxedWarning("auto", { bwrapWorks: true, root: false })).toBeUndefined();
  expect(unsandboxedWarning("none", { bwrapWorks: false, root: false })).toBeUndefined();
  // Refused outright (resolveSandbox says why), not warned about: bwrap without bubblewrap, and root without the opt-in.
  expect(unsandboxedWarning("bwrap", { bwrapWorks: false, root: false })).toBeUndefined();
  expect(unsandboxedWarning("auto", { bwrapWorks: false, root: true, allowRootUnsandboxed: false })).toBeUndefined();
});

import { describe, expect, test } from "bun:test";
import { createAdminThrottle } from "./auth.ts";

describe("createAdminThrottle", () => {
  test("a burst of failures, then one attempt per refill interval, per address", () => {
    let now = 1_000_000;
    const throttle = createAdminThrottle({ burst: 3, refillMs: 1000, now: () => now });
    for (let i = 0; i < 3; i++) {
      expect(throttle.wait("a")).toBe(0);
      throttle.failed("a");
    }
    expect(throttle.wait("a")).toBe(1);
    expect(throttle.wait("b")).toBe(0); // another address is not affected
    now += 999;
    expect(throttle.wait("a")).toBe(1);
    now += 1;
    expect(throttle.wait("a")).toBe(0);
    throttle.failed("a");
    expect(throttle.wait("a")).toBe(1);
    // Failures keep adding up: hammering lengthens the wait.
    for (let i = 0; i < 5; i++) throttle.failed("a");
    expect(throttle.wait("a")).toBe(6);
    // Fully refilled after long enough: the burst is available again.
    now += 60_000;
    for (let i = 0; i < 3; i++) {
      expect(throttle.wait("a")).toBe(0);
      throttle.failed("a");
    }
  });

  test("tracks a bounded number of addresses", () => {
    const throttle = createAdminThrottle({ burst: 1, maxAddresses: 2, now: () => 0 });
    throttle.failed("a");
    throttle.failed("b");
    throttle.failed("c"); // "a" is forgotten
    expect(throttle.wait("a")).toBe(0);
    expect(throttle.wait("c")).toBe(1);
  });
});

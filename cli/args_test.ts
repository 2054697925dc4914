import assert from "node:assert/strict";
import {
  asUsage,
  parseChoice,
  parseDuration,
  parseHeader,
  parseInteger,
  parseList,
  parseNumber,
  parsePort,
  UsageError,
} from "./args.ts";

function usage(fn: () => unknown, message: string): void {
  assert.throws(fn, (e) => e instanceof UsageError && e.message === message);
}

Deno.test("integer options take whole numbers within their bounds and say which bound", () => {
  assert.equal(parseInteger("0", "--n"), 0);
  assert.equal(parseInteger("65535", "--mtu", { min: 1280, max: 65535 }), 65535);
  usage(
    () => parseInteger("1279", "--mtu", { min: 1280, max: 65535 }),
    "--mtu must be a whole number 1280-65535, got 1279",
  );
  usage(
    () => parseInteger("1.5", "-c", { min: 1 }),
    "-c must be a whole number ≥ 1, got 1.5",
  );
  usage(
    () => parseInteger("", "-c", { min: 1 }),
    '-c must be a whole number ≥ 1, got ""',
  );
  usage(
    () => parseInteger("9007199254740993", "-n"),
    "-n must be a whole number ≥ 0, got 9007199254740993",
  );
});

Deno.test("number options take fractions, and an open lower bound excludes it", () => {
  assert.equal(parseNumber("0.05", "--time", { min: 0.05 }), 0.05);
  usage(
    () => parseNumber("0.04", "--time", { min: 0.05 }),
    "--time must be a number ≥ 0.05, got 0.04",
  );
  usage(() => parseNumber("0", "--rate", { above: 0 }), "--rate must be a number above 0, got 0");
  usage(() => parseNumber(" ", "--rate"), "--rate must be a number ≥ 0, got  ");
  usage(
    () => parseNumber("Infinity", "--rate"),
    "--rate must be a number ≥ 0, got Infinity",
  );
});

Deno.test("ports, lists, choices and headers use the same message shape", () => {
  assert.equal(parsePort("0", "--h2c-port"), 0);
  usage(() => parsePort("70000", "--h2c-port"), "--h2c-port must be a port 0-65535, got 70000");
  assert.deepEqual(parseList(" a, b,,", "--x"), ["a", "b"]);
  usage(() => parseList(" , ", "--x"), "--x must be a comma-separated list, got  , ");
  assert.equal(parseChoice("netem", "--link-backend", ["relay", "netem"]), "netem");
  usage(
    () => parseChoice("veth", "--link-backend", ["relay", "netem"]),
    "--link-backend must be one of relay, netem, got veth",
  );
  assert.deepEqual(parseHeader("X-A:  b "), ["X-A", "b"]);
  usage(
    () => parseHeader("bad header: x"),
    "-H must be a header like 'Name: value', got 'bad header: x'",
  );
});

Deno.test("a lower layer's RangeError becomes a usage error behind the option; other errors pass", () => {
  usage(() =>
    asUsage(() => {
      throw new RangeError("Unknown thing");
    }, "--x"), "--x: Unknown thing");
  assert.throws(() =>
    asUsage(() => {
      throw new Error("disk on fire");
    }, "--x"), (e) => !(e instanceof UsageError));
});

Deno.test("durations read one syntax with units, and bare numbers in the option's own unit", () => {
  const table: [string, "ms" | "s" | "m" | undefined, number][] = [
    ["500ms", undefined, 500],
    ["750us", undefined, 0.75],
    ["750µs", undefined, 0.75],
    ["3s", undefined, 3000],
    ["1.5s", "ms", 1500],
    ["2m", "s", 120_000],
    ["1h", undefined, 3_600_000],
    ["250", undefined, 250],
    ["250", "ms", 250],
    ["3", "s", 3000],
    ["0.3", "s", 300],
    ["10", "m", 600_000],
  ];
  for (const [text, bare, ms] of table) {
    assert.equal(parseDuration(text, "--t", { bare }), ms, `${text} (bare ${bare})`);
  }
  usage(
    () => parseDuration("3 sec", "--timeout"),
    "--timeout must be a duration like 500ms, 3s or 2m (bare number = ms), got 3 sec",
  );
  usage(
    () => parseDuration("-1s", "-D", { bare: "s" }),
    "-D must be a duration like 500ms, 3s or 2m (bare number = s), got -1s",
  );
  usage(
    () => parseDuration("", "--t"),
    '--t must be a duration like 500ms, 3s or 2m (bare number = ms), got ""',
  );
  usage(
    () => parseDuration("0", "--timeout", { minMs: 1 }),
    "--timeout must be a duration at least 1ms, got 0",
  );
  usage(
    () => parseDuration("5s", "--budget", { minMs: 10_000, maxMs: 3_600_000 }),
    "--budget must be a duration from 10s to 60m, got 5s",
  );
});

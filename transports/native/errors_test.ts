import assert from "node:assert/strict";
import { NATIVE_ERR, nativeErrorName } from "./errors.ts";

/** The members of a non-negative enum of sbwire.h, by their names without `prefix`. */
async function readEnum(name: string, prefix: string): Promise<Record<string, number>> {
  const header = await Deno.readTextFile(new URL("./sbwire.h", import.meta.url));
  const body = new RegExp(`enum ${name} \\{([^}]*)\\}`).exec(header)?.[1] ?? "";
  return Object.fromEntries(
    [...body.matchAll(new RegExp(`${prefix}(\\w+) = (\\d+)`, "g"))].map((
      m,
    ) => [m[1], Number(m[2])]),
  );
}

Deno.test("native error codes in TypeScript are the ones sbwire.h gives both modules", async () => {
  const header = await Deno.readTextFile(new URL("./sbwire.h", import.meta.url));
  const body = /enum sbwire_error \{([^}]*)\}/.exec(header)?.[1] ?? "";
  const c = Object.fromEntries(
    [...body.matchAll(/SBWIRE_ERR_(\w+) = (-\d+)/g)].map((m) => [m[1], Number(m[2])]),
  );
  assert.ok(Object.keys(c).length >= 13, "the enum was not found in sbwire.h");
  assert.deepEqual(c, { ...NATIVE_ERR });
});

Deno.test("native error names come from the one enum, numbers stand for unknown codes", () => {
  assert.equal(nativeErrorName(NATIVE_ERR.CLOSED), "CLOSED");
  assert.equal(nativeErrorName(-5), "TLS");
  assert.equal(nativeErrorName(-99), "-99");
});

Deno.test("event types and TOO_LARGE codes in TypeScript are sbwire.h's", async () => {
  const { TOO_LARGE, WIRE_EVENT } = await import("./wire.ts");
  assert.deepEqual(await readEnum("sbwire_event_type", "SBWIRE_EV_"), { ...WIRE_EVENT });
  assert.deepEqual(await readEnum("sbwire_too_large", "SBWIRE_TOO_LARGE_"), { ...TOO_LARGE });
});

Deno.test("TLS state bits, info kinds and verification modes in TypeScript are sbwire.h's", async () => {
  const { TLS_INFO, TLS_STATE, TLS_VERIFY } = await import("./tls_session.ts");
  assert.deepEqual(await readEnum("sbwire_tls_state", "SBWIRE_TLS_"), { ...TLS_STATE });
  assert.deepEqual(await readEnum("sbwire_tls_verify", "SBWIRE_TLS_VERIFY_"), { ...TLS_VERIFY });
  assert.deepEqual(await readEnum("sbwire_tls_info", "SBWIRE_TLS_INFO_"), { ...TLS_INFO });
});

Deno.test("every module's shim failure is a NativeError with a code, and a freed handle throws CLOSED the same way", async () => {
  const { NativeError, freedError } = await import("./errors.ts");
  const { H3Error, h3Freed } = await import("../h3/h3_error.ts");
  const { H3FramingError } = await import("../deno/h3_framing.ts");
  for (const e of [new H3Error(NATIVE_ERR.TLS), new H3FramingError("x", NATIVE_ERR.PROTO, 0x105)]) {
    assert.ok(e instanceof NativeError, e.name);
    assert.ok(e.code < 0, e.name);
  }
  for (const e of [freedError("HTTP/2 server limits"), h3Freed("UDP socket")]) {
    assert.ok(e instanceof NativeError);
    assert.equal(e.code, NATIVE_ERR.CLOSED);
    assert.match(e.message, / is closed$/);
  }
});

/**
 * Test vectors for the N32 key hierarchy. The RFC 5869 vector checks
 * HKDF-Expand itself; the N32 vectors were computed independently with
 * OpenSSL 3.0's HKDF in expand-only mode:
 *   openssl kdf -keylen L -kdfopt digest:SHA256 -kdfopt mode:EXPAND_ONLY \
 *     -kdfopt hexkey:<master> -kdfopt hexinfo:<hex of "N32" || context ID || label> HKDF
 * with master = 00 01 02 … 3f (64 octets) and context ID "0123456789abcdef".
 */
import assert from "node:assert/strict";
import {
  deriveN32fKeys,
  hkdfExpand,
  N32_MASTER_LABEL,
  N32_MASTER_LENGTH,
  n32Kdf,
  n32MasterKey,
} from "./n32.ts";

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const unhex = (s: string) => new Uint8Array(s.match(/../g)!.map((h) => parseInt(h, 16)));
const MASTER = Uint8Array.from({ length: 64 }, (_, i) => i);
const CONTEXT = "0123456789abcdef";

Deno.test("HKDF-Expand reproduces RFC 5869 test case 1", async () => {
  const prk = unhex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5");
  const okm = await hkdfExpand(prk, unhex("f0f1f2f3f4f5f6f7f8f9"), 42);
  assert.equal(
    hex(okm),
    "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
  );
});

Deno.test("N32-KDF gives the keys and IV salts computed independently with OpenSSL", async () => {
  assert.equal(
    hex(await n32Kdf(MASTER, CONTEXT, "parallel_request_key", 16)),
    "0d50a84ea2496a08d990dc3fbf58f803",
  );
  const keys = await deriveN32fKeys(MASTER, CONTEXT);
  assert.equal(hex(keys.parallelRequest.key), "0d50a84ea2496a08d990dc3fbf58f803");
  assert.equal(hex(keys.parallelRequest.ivSalt), "18b4a8842e1f0b24");
  assert.equal(hex(keys.reverseResponse.key), "1fdc2dbce2ada257365629910e6701fd");
  const wide = await deriveN32fKeys(MASTER, CONTEXT, "A256GCM");
  assert.equal(
    hex(wide.parallelResponse.key),
    "e342aaa74e0b9383501ac58ea856d9ce7785963152f5dfa51061cad75fff73ee",
  );
  assert.equal(wide.parallelResponse.ivSalt.length, 8);
});

Deno.test("every N32-f key and salt differs from the others and with the context ID", async () => {
  const a = await deriveN32fKeys(MASTER, CONTEXT);
  const b = await deriveN32fKeys(MASTER, "fedcba9876543210");
  const all = [a, b].flatMap((k) => Object.values(k).flatMap((p) => [hex(p.key), hex(p.ivSalt)]));
  assert.equal(new Set(all).size, all.length);
});

Deno.test("the N32 master key asks the exporter for its label, an empty context and 64 octets", async () => {
  const calls: unknown[] = [];
  const key = await n32MasterKey({
    exportKeyingMaterial(label, context, length) {
      calls.push([label, context?.length, length]);
      return new Uint8Array(length).fill(7);
    },
  });
  assert.deepEqual(calls, [[N32_MASTER_LABEL, 0, N32_MASTER_LENGTH]]);
  assert.equal(key.length, 64);
});

Deno.test("bad context IDs and lengths are refused with one line", async () => {
  await assert.rejects(n32Kdf(MASTER, "N32-1234", "parallel_request_key", 16), /16 hex digits/);
  await assert.rejects(hkdfExpand(MASTER, new Uint8Array(), 0), /length must be 1…8160/);
  await assert.rejects(hkdfExpand(new Uint8Array(8), new Uint8Array(), 16), /at least 32 octets/);
});

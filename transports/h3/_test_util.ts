/**
 * Test helpers for the h3 transport: whether the native module is usable
 * (else a skip message naming the Debian packages), and a dev PKI.
 */
import { h3Available } from "./mod.ts";

/** Debian packages the native module needs. */
export const H3_PACKAGES =
  "libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev gcc";

/** Null when h3 tests can run, else why they are skipped. */
export const H3_SKIP: string | null = (await h3Available())
  ? null
  : `h3 native module unavailable: apt-get install -y ${H3_PACKAGES}`;

if (H3_SKIP) {
  // CI installs every package: a missing module there is a failure, not a skip.
  if (Deno.env.get("CI")) throw new Error(`In CI: ${H3_SKIP}`);
  console.warn(`skipping h3 tests: ${H3_SKIP}`);
}

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

if (H3_SKIP) console.log(`skipping h3 tests: ${H3_SKIP}`);

/** Runs `cmd --version`-like probe; true when the program exists. */
export async function haveProgram(cmd: string): Promise<boolean> {
  try {
    const out = await new Deno.Command(cmd, { args: ["--help"], stdout: "null", stderr: "null" })
      .output();
    return out.code !== 127;
  } catch {
    return false;
  }
}

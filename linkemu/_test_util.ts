/**
 * Test helpers for linkemu: why link tests must be skipped here (if at all)
 * and a way to run small Deno programs inside a link's namespaces.
 *
 * @module
 */
import { hasNetAdmin } from "./_system.ts";
import type { Link, LinkSide } from "./link.ts";

function skipReason(): string | null {
  if (Deno.build.os !== "linux") return "needs Linux network namespaces";
  if (!hasNetAdmin()) return "needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)";
  try {
    Deno.statSync("/dev/net/tun");
  } catch {
    return "needs /dev/net/tun (modprobe tun)";
  }
  for (const dir of ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]) {
    try {
      if (Deno.statSync(`${dir}/ip`).isFile) return null;
    } catch {
      // not here
    }
  }
  return "needs the ip command (apt-get install iproute2)";
}

/** Why link tests are skipped on this machine, or null when they can run. */
export const LINK_SKIP: string | null = skipReason();
if (LINK_SKIP) console.warn(`skipping link tests: ${LINK_SKIP}`);

/** Runs `code` with `deno eval` inside one side of `link`; stdout piped. */
export function evalIn(link: Link, side: LinkSide, code: string): Deno.ChildProcess {
  return link.exec(side, [Deno.execPath(), "eval", "--quiet", "--unstable-net", code], {
    stdout: "piped",
    stderr: "inherit",
  });
}

/** Reads a child's output line by line, each wait bounded in time. */
export class LineReader {
  #reader: ReadableStreamDefaultReader<string>;
  #buf = "";

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** Resolves with the first unread line matching `pattern`; throws after `ms`. */
  async waitFor(pattern: RegExp, ms = 10000): Promise<string> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
    try {
      for (;;) {
        let nl;
        while ((nl = this.#buf.indexOf("\n")) >= 0) {
          const line = this.#buf.slice(0, nl);
          this.#buf = this.#buf.slice(nl + 1);
          if (pattern.test(line)) return line;
        }
        const next = await Promise.race([this.#reader.read(), timeout]);
        if (!next) throw new Error(`No line matching ${pattern} within ${ms} ms`);
        if (next.done) throw new Error(`Output ended without a line matching ${pattern}`);
        this.#buf += next.value;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** Reads everything that is left (until the child closes its output). */
  async rest(): Promise<string> {
    let text = this.#buf;
    this.#buf = "";
    for (;;) {
      const next = await this.#reader.read();
      if (next.done) return text;
      text += next.value;
    }
  }

  /** Stops reading and releases the stream. */
  async cancel(): Promise<void> {
    await this.#reader.cancel();
  }
}

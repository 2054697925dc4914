/**
 * The line `lab serve` prints for each listener (`h2c listening on
 * http://127.0.0.1:7777`), written and read in one place: the benchmark, the
 * link runner and the tests all start `lab serve` and wait for these lines.
 */
import { type TransportName, TRANSPORTS } from "./transport_names.ts";

/** The line for one listener. */
export function listeningLine(transport: TransportName, url: string): string {
  return `${transport} listening on ${url}`;
}

const LINE = /^(\S+) listening on (\S+)$/;

/** The transport and URL of a listening line; undefined for any other line. */
export function parseListeningLine(line: string): [TransportName, string] | undefined {
  const m = LINE.exec(line.trim());
  if (!m || !(TRANSPORTS as readonly string[]).includes(m[1])) return undefined;
  return [m[1] as TransportName, m[2]];
}

/**
 * Reads `lab serve`'s stdout until every transport in `want` has printed its
 * line; resolves with their URLs. Rejects when the stream ends first or after
 * `timeoutMs`. Afterwards it keeps draining the stream, so the server never
 * blocks on a full pipe.
 */
export async function readListening(
  stdout: ReadableStream<Uint8Array>,
  want: readonly TransportName[],
  timeoutMs = 30_000,
): Promise<Partial<Record<TransportName, string>>> {
  const reader = stdout.pipeThrough(new TextDecoderStream()).getReader();
  const urls: Partial<Record<TransportName, string>> = {};
  let buf = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((
    r,
  ) => (timer = setTimeout(() => r("timeout"), timeoutMs)));
  try {
    while (want.some((t) => !urls[t])) {
      const next = await Promise.race([reader.read(), timeout]);
      const missing = want.filter((t) => !urls[t]).join(", ");
      if (next === "timeout") {
        throw new Error(`lab serve did not report ${missing} listening within ${timeoutMs} ms`);
      }
      if (next.done) throw new Error(`lab serve ended before reporting ${missing} listening`);
      buf += next.value;
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      for (const line of lines) {
        const parsed = parseListeningLine(line);
        if (parsed) urls[parsed[0]] = parsed[1];
      }
    }
    return urls;
  } finally {
    clearTimeout(timer);
    (async () => {
      try {
        while (!(await reader.read()).done) { /* discard */ }
      } catch { /* the server is gone */ }
    })();
  }
}

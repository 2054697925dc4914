/**
 * The deno stack's own floors: what its runtime costs with nothing of
 * sbilab's on top. A bare `fetch` (one `Deno.createHttpClient` per protocol)
 * against a bare `Deno.serve` over h2c and over TLS, and a bare QUIC request
 * (`Deno.connectQuic`, one bidirectional stream per request, a few bytes up
 * and the payload back) against a `Deno.QuicEndpoint`, the servers in another
 * process (see `_bare_peer.ts`). Each deno-stack row is shown as a multiple
 * of the arm of its transport: the share of its time that is sbilab's.
 */
import { onServerCpu, placement } from "./affinity.ts";
import { PEER_V8_FLAGS_ARG } from "../../lib/v8_flags.ts";
import { FloorError } from "./floors.ts";
import { createDevPki } from "../../transports/pki.ts";
import { applyNoDelay } from "../../transports/native/nodelay.ts";

import { BARE_TRANSPORTS, type BareTransport } from "../record/floor_lookup.ts";

export { BARE_TRANSPORTS, type BareTransport };

/** The bare runtime: one warm connection per transport, one request per call. */
export interface BareRuntime {
  /** One request for `size` bytes on `transport`'s warm connection; checks the length. */
  request(transport: BareTransport, size: number): Promise<void>;
  /** Closes the connections and stops the peer. Idempotent. */
  close(): Promise<void>;
}

async function firstLine(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<string> {
  const dec = new TextDecoder();
  let text = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FloorError("The bare runtime peer did not start")), 20_000);
  });
  try {
    while (!text.includes("\n")) {
      const chunk = await Promise.race([reader.read(), late]);
      if (chunk.done) throw new FloorError("The bare runtime peer exited before its ports");
      text += dec.decode(chunk.value, { stream: true });
    }
  } finally {
    clearTimeout(timer);
  }
  return text.split("\n")[0].trim();
}

/** Starts the bare peer on the server CPU and opens a warm connection per transport. */
export async function openBareRuntime(): Promise<BareRuntime> {
  if (typeof Deno.connectQuic !== "function") {
    throw new FloorError("The bare runtime arms need --unstable-net");
  }
  const pki = await createDevPki();
  const dir = await Deno.makeTempDir({ prefix: "sbilab-bare-" });
  await Deno.writeTextFile(`${dir}/cert.pem`, pki.serverCertPem);
  await Deno.writeTextFile(`${dir}/key.pem`, pki.serverKeyPem, { mode: 0o600 });
  const script = new URL("./_bare_peer.ts", import.meta.url).pathname;
  const [cmd, args] = onServerCpu(await placement(), Deno.execPath(), [
    "run",
    "-A",
    "--unstable-net",
    PEER_V8_FLAGS_ARG,
    script,
    `${dir}/cert.pem`,
    `${dir}/key.pem`,
  ]);
  const child = new Deno.Command(cmd, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.getReader();
  const closers: (() => void)[] = [];
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const c of closers) {
      try {
        c();
      } catch {
        // already closed
      }
    }
    reader.releaseLock();
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await child.status;
    await child.stdout.cancel().catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    const [h2cPort, tlsPort, quicPort] = (await firstLine(reader)).split(" ").map(Number);
    const h2c = Deno.createHttpClient({ http1: false, http2: true });
    closers.push(() => h2c.close());
    const tls = Deno.createHttpClient({ http1: false, http2: true, caCerts: [pki.caCertPem] });
    closers.push(() => tls.close());
    const quic = await Deno.connectQuic({
      hostname: "127.0.0.1",
      port: quicPort,
      serverName: "localhost",
      alpnProtocols: ["bare"],
      caCerts: [pki.caCertPem],
      // the arms may wait longer than an idle timeout between blocks (a long warm-up)
      keepAliveInterval: 5_000,
    });
    closers.push(() => quic.close());
    const enc = new TextEncoder();
    // Read into one reused buffer (BYOB), the cheapest way Deno's QUIC streams can be read.
    let readBuf: ArrayBuffer = new ArrayBuffer(64 * 1024);
    const fetchOne = async (client: Deno.HttpClient, url: string, size: number) => {
      const res = await fetch(`${url}/payload?size=${size}`, { client });
      const got = (await res.bytes()).length;
      if (got !== size) throw new FloorError(`The bare ${url} answered ${got} bytes, not ${size}`);
    };
    const quicOne = async (size: number) => {
      const s = await quic.createBidirectionalStream();
      const w = s.writable.getWriter();
      await w.write(enc.encode(String(size)));
      await w.close();
      let got = 0;
      const reader = s.readable.getReader({ mode: "byob" });
      for (;;) {
        const { value, done } = await reader.read(new Uint8Array(readBuf));
        if (value) readBuf = value.buffer as ArrayBuffer;
        if (done) break;
        got += value!.length;
      }
      if (got !== size) throw new FloorError(`The bare QUIC stream gave ${got} bytes, not ${size}`);
    };
    const h2cUrl = `http://127.0.0.1:${h2cPort}`;
    const tlsUrl = `https://127.0.0.1:${tlsPort}`;
    // TCP_NODELAY on fetch's two connections, as the deno stack's client sets it (the peer sets
    // it on its listeners): without it a 16 KiB answer over TLS waits for a delayed ACK.
    await fetchOne(h2c, h2cUrl, 0);
    await fetchOne(tls, tlsUrl, 0);
    applyNoDelay({ remotePort: h2cPort });
    applyNoDelay({ remotePort: tlsPort });
    return {
      request(transport, size) {
        if (transport === "h2c") return fetchOne(h2c, h2cUrl, size);
        if (transport === "h2-tls") return fetchOne(tls, tlsUrl, size);
        return quicOne(size);
      },
      close,
    };
  } catch (err) {
    await close();
    if (err instanceof FloorError) throw err;
    throw new FloorError(`The bare runtime arms could not start: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

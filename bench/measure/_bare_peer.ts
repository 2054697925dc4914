/**
 * Server of the bare runtime arms, run in its own process:
 * `deno run -A --unstable-net bench/measure/_bare_peer.ts <cert.pem> <key.pem>`.
 * Serves what the deno stack stands on with nothing of sbilab's on top:
 * `Deno.serve` over h2c and over TLS (any path; `?size=N` bytes back) and a
 * `Deno.QuicEndpoint` that answers each bidirectional stream's request (the
 * size as decimal text, then FIN) with that many bytes and FIN. Prints
 * `<h2c port> <tls port> <quic port>` on one stdout line, then serves until
 * killed. TCP_NODELAY is set on both listeners, as the deno stack's server
 * sets it (`Deno.serve` over TLS leaves Nagle on).
 */
import { applyNoDelay } from "../../transports/native/nodelay.ts";

const [certFile, keyFile] = Deno.args;
if (!certFile || !keyFile) {
  console.error("usage: _bare_peer.ts <cert.pem> <key.pem>");
  Deno.exit(2);
}
const cert = Deno.readTextFileSync(certFile);
const key = Deno.readTextFileSync(keyFile);
const MAX = 16 * 1024 * 1024;
const bodies = new Map<number, Uint8Array<ArrayBuffer>>();

function body(size: number): Uint8Array<ArrayBuffer> {
  let b = bodies.get(size);
  if (!b) bodies.set(size, b = new Uint8Array(size).fill(120));
  return b;
}

function sizeOf(text: string | null): number {
  const n = Number(text);
  return Number.isInteger(n) && n >= 0 && n <= MAX ? n : 0;
}

const handler = (req: Request) => {
  const q = req.url.indexOf("size=");
  const size = q < 0 ? 0 : sizeOf(req.url.slice(q + 5));
  return new Response(body(size), { headers: { "content-type": "application/octet-stream" } });
};

const ports = await Promise.all([
  new Promise<number>((resolve) => {
    Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: (a) => resolve(a.port) }, handler);
  }),
  new Promise<number>((resolve) => {
    Deno.serve(
      { hostname: "127.0.0.1", port: 0, cert, key, onListen: (a) => resolve(a.port) },
      handler,
    );
  }),
]);

const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
const listener = endpoint.listen({ alpnProtocols: ["bare"], cert, key });

const pool: ArrayBuffer[] = [];

async function answer(stream: Deno.QuicBidirectionalStream): Promise<void> {
  let text = "";
  const dec = new TextDecoder();
  // Read into reused buffers (BYOB), the cheapest way Deno's QUIC streams can be read.
  const reader = stream.readable.getReader({ mode: "byob" });
  for (;;) {
    const { value, done } = await reader.read(new Uint8Array(pool.pop() ?? new ArrayBuffer(4096)));
    if (value) {
      text += dec.decode(value, { stream: true });
      if (pool.length < 8) pool.push(value.buffer as ArrayBuffer);
    }
    if (done || text.length > 16) break;
  }
  const w = stream.writable.getWriter();
  await w.write(body(sizeOf(text)));
  await w.close();
}

async function serveConn(incoming: Deno.QuicIncoming): Promise<void> {
  const conn = await incoming.accept();
  for await (const stream of conn.incomingBidirectionalStreams) {
    answer(stream).catch(() => {});
  }
}

(async () => {
  for await (const incoming of listener) serveConn(incoming).catch(() => {});
})();

applyNoDelay({ listenPort: ports[0] });
applyNoDelay({ listenPort: ports[1] });
console.log(`${ports[0]} ${ports[1]} ${endpoint.addr.port}`);

/**
 * Mutual TLS for the HTTP/2 server. `Deno.serve` cannot ask for client
 * certificates, so a TLS front (node:tls, which can) verifies the client
 * against the configured CA, offers ALPN h2 only, and relays the decrypted
 * bytes to the h2c server on loopback. Only used when mTLS is requested; the
 * benchmark's h2-tls figures never go through it.
 */
import tls from "node:tls";
import net from "node:net";
import { type ConnectionLimits, DEFAULT_CONNECTION_LIMITS } from "./conn_guard.ts";

/** Options for {@linkcode startMtlsFront}. */
export interface MtlsFrontOptions {
  /** Address to bind. */
  hostname: string;
  /** Port to bind; 0 picks a free one. */
  port: number;
  /** Server certificate chain (PEM). */
  certPem: string;
  /** Server key (PEM). */
  keyPem: string;
  /** CAs that sign acceptable client certificates (PEM). */
  caPem: string[];
  /** Port of the inner h2c server on 127.0.0.1. */
  innerPort: number;
  /** Connection cap, handshake and idle timeouts, as on every h2 listener. Default {@linkcode DEFAULT_CONNECTION_LIMITS}. */
  limits?: ConnectionLimits;
  /** Called with errors swallowed per connection. Default no-op. */
  onError?: (err: unknown) => void;
}

/** Starts the front; resolves once it listens. */
export function startMtlsFront(
  options: MtlsFrontOptions,
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...options.limits };
  // Connections whose TLS handshake has not completed, by the client's port. node:tls's own
  // handshakeTimeout is not enforced by Deno's node:tls for a silent client, so time it here.
  const handshaking = new Map<number, ReturnType<typeof setTimeout>>();
  const server = tls.createServer({
    handshakeTimeout: limits.handshakeTimeoutMs,
    cert: options.certPem,
    key: options.keyPem,
    ca: options.caPem,
    requestCert: true,
    rejectUnauthorized: true,
    ALPNProtocols: ["h2"],
    minVersion: "TLSv1.2",
  }, (client) => {
    clearTimeout(handshaking.get(client.remotePort ?? -1));
    handshaking.delete(client.remotePort ?? -1);
    client.setNoDelay(true);
    // Idle in both directions for the idle timeout: close (the inner server sees the end too).
    client.setTimeout(limits.idleTimeoutMs, () => client.destroy());
    const upstream = net.connect({ host: "127.0.0.1", port: options.innerPort });
    upstream.setNoDelay(true);
    sockets.add(client);
    sockets.add(upstream);
    const done = (err?: Error) => {
      if (err) options.onError?.(err);
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", done);
    upstream.on("error", done);
    client.on("close", () => done());
    upstream.on("close", () => done());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  server.maxConnections = limits.maxConnections;
  server.on("connection", (raw: net.Socket) => {
    const port = raw.remotePort ?? -1;
    const timer = setTimeout(() => {
      handshaking.delete(port);
      raw.destroy();
    }, limits.handshakeTimeoutMs);
    handshaking.set(port, timer);
    raw.once("close", () => {
      clearTimeout(timer);
      if (handshaking.get(port) === timer) handshaking.delete(port);
    });
  });
  server.on("tlsClientError", (err: Error) => options.onError?.(err));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      // Accept errors (EMFILE and the like) are reported; the server keeps listening.
      server.on("error", (err: Error) => options.onError?.(err));
      const addr = server.address() as net.AddressInfo;
      resolve({
        port: addr.port,
        close: () =>
          new Promise<void>((res) => {
            for (const t of handshaking.values()) clearTimeout(t);
            handshaking.clear();
            for (const s of sockets) s.destroy();
            server.close(() => res());
          }),
      });
    });
  });
}

/**
 * The deno stack's HTTP/3 client: QUIC from Deno itself (`Deno.connectQuic`,
 * quinn with rustls), HTTP/3 framing and QPACK from nghttp3 through the sbdh3
 * shim. It stands on the same client core as the native clients (one
 * connection per origin, reopened after it dies or is told to go away, a
 * per-request timer that resets the stream) and sends the same SBI headers.
 *
 * Deno's QUIC has no way to skip certificate verification, no client
 * certificates, and shows neither the TLS parameters nor session tickets:
 * `insecure` and a client certificate are refused with one line, and the
 * connection line names only the libraries.
 */
import { parseOrigin } from "../origin.ts";
import { resolveTls } from "../tls.ts";
import {
  type ClientOptions,
  type ClientRequest,
  type ClientResponse,
  type ConnectionInfo,
  type SbiClient,
  TransportError,
} from "../types.ts";
import {
  ClientCore,
  type CoreSession,
  PendingStreams,
  requestTimeoutMs,
  timedRequest,
} from "../client_core.ts";
import { type ClientLimits, resolveClientLimits } from "../client_limits.ts";
import { WIRE_EVENT } from "../native/wire.ts";
import { SbiRequestBlock } from "../sbi_request_block.ts";
import { toClientResponse } from "../h3/convert.ts";
import { H3Framing } from "./h3_framing.ts";
import { dh3Version, loadDh3Library } from "./h3_loader.ts";
import { H3_CODE, QuicH3Conn } from "./h3_conn.ts";

const EMPTY_BODY = new Uint8Array(0);

class Session implements CoreSession {
  conn!: QuicH3Conn;
  #pending = new PendingStreams();
  #goaway = false;

  get unusable(): boolean {
    return this.#goaway || this.conn.dead;
  }

  get streamCount(): number {
    return this.conn.framing.streamCount;
  }

  onEvents(events: ReturnType<H3Framing["poll"]>): void {
    for (const e of events) {
      if (e.type === WIRE_EVENT.GOAWAY) this.#goaway = true;
      else if (e.type === WIRE_EVENT.MESSAGE) {
        const p = this.#pending.take(e.streamId);
        if (!p) continue;
        try {
          p.resolve(toClientResponse(e.headers, e.body));
        } catch (err) {
          p.reject(err as Error);
        }
      } else if (e.type === WIRE_EVENT.RESET) {
        this.#pending.take(e.streamId)?.reject(
          new TransportError(
            `HTTP/3 stream ${e.streamId} was reset (code 0x${e.code.toString(16)})`,
          ),
        );
        this.conn.cancel(e.streamId, e.code || H3_CODE.REQUEST_CANCELLED);
      }
    }
  }

  onClosed(reason: string): void {
    this.#pending.rejectAll(new TransportError(`HTTP/3 connection closed: ${reason}`));
  }

  /**
   * Sends a request whose header block is the first `length` bytes of
   * `block`: those bytes are copied before this returns, so the caller may
   * write the next block into the same buffer at once.
   */
  request(
    block: Uint8Array,
    length: number,
    body: Uint8Array,
    timeoutMs: number,
  ): Promise<ClientResponse> {
    let streamId = -1;
    const t = timedRequest(timeoutMs, () => {
      if (streamId < 0) return;
      this.#pending.delete(streamId);
      this.conn.cancel(streamId, H3_CODE.REQUEST_CANCELLED);
    });
    // past the peer's stream credit, wait for a stream as the native client queues
    let opening: Promise<Deno.QuicBidirectionalStream>;
    try {
      opening = this.conn.quic.createBidirectionalStream({ waitUntilAvailable: true });
    } catch (err) {
      t.pending.reject(sendError(err));
      return t.promise;
    }
    // the block's buffer is reused by the next request: the bytes wait here until the stream opens
    const own = block.slice(0, length);
    opening.then((bidi) => {
      if (t.settled()) {
        // timed out while waiting for a stream: give the stream back unused
        bidi.writable.abort(H3_CODE.REQUEST_CANCELLED).catch(() => {});
        bidi.readable.cancel(H3_CODE.REQUEST_CANCELLED).catch(() => {});
        return;
      }
      try {
        streamId = this.conn.adopt(bidi);
        this.#pending.add(streamId, t.pending);
        this.conn.framing.requestBlock(streamId, own, length, body);
        this.conn.flush();
      } catch (err) {
        t.pending.reject(sendError(err));
      }
    }, (err) => t.pending.reject(sendError(err)));
    return t.promise;
  }

  close(): Promise<void> {
    this.conn.close(H3_CODE.NO_ERROR, "client closing");
    this.#pending.rejectAll(new TransportError("Client is closed"));
    return Promise.resolve();
  }
}

class QuinnH3Client implements SbiClient {
  readonly transport = "h3" as const;
  #origin: URL;
  #options: ClientOptions;
  #limits: ClientLimits;
  #core: ClientCore<Session>;
  #versions = "";
  #block: SbiRequestBlock;

  constructor(origin: URL, options: ClientOptions) {
    this.#origin = origin;
    this.#options = options;
    this.#limits = resolveClientLimits(options);
    this.#core = new ClientCore<Session>(() => this.#connect());
    // the header block built as the native clients build it: what does not change, encoded once
    this.#block = new SbiRequestBlock({
      scheme: "https",
      authority: origin.host,
      nfType: options.nfType,
    });
  }

  async #connect(): Promise<Session> {
    const { symbols } = await loadDh3Library();
    this.#versions = dh3Version(symbols);
    const tls = await resolveTls(this.#options.tls ?? {});
    let quic: Deno.QuicConn;
    try {
      quic = await Deno.connectQuic({
        hostname: this.#origin.hostname.replace(/^\[|\]$/g, ""),
        port: Number(this.#origin.port || 443),
        serverName: tls.serverName,
        alpnProtocols: ["h3"],
        caCerts: tls.caPem.length ? tls.caPem : undefined,
      });
      await handshakeWithin(quic, this.#limits.handshakeTimeoutMs);
    } catch (err) {
      throw new TransportError(
        `Cannot open an HTTP/3 connection to ${this.#origin.host}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const session = new Session();
    const framing = new H3Framing(symbols, false, {
      maxBodyBytes: this.#limits.maxBodyBytes,
      maxFieldSectionBytes: this.#limits.maxHeaderSectionBytes,
    });
    session.conn = await QuicH3Conn.open(quic, framing, {
      onEvents: (events) => session.onEvents(events),
      onClosed: (reason) => session.onClosed(reason),
    }, { server: false });
    return session;
  }

  request(req: ClientRequest): Promise<ClientResponse> {
    if (this.#core.closed) return Promise.reject(new TransportError("Client is closed"));
    const path = req.path;
    if (typeof path !== "string" || !path.startsWith("/")) {
      return Promise.reject(new TypeError(`Request path must start with "/": ${path}`));
    }
    const timeoutMs = requestTimeoutMs(req, this.#options);
    const body = req.body ?? EMPTY_BODY;
    const block = this.#block;
    let length: number;
    try {
      length = block.encode(req.method ?? "GET", path, req.headers, timeoutMs, body.length);
      if (req.onRequestHeaders !== undefined) req.onRequestHeaders(block.sentHeaders(length));
    } catch (err) {
      return Promise.reject(err);
    }
    const s = this.#core.session();
    if (s instanceof Session) return s.request(block.buffer, length, body, timeoutMs);
    // the block's buffer is reused by the next request: keep this one's bytes until connected
    const own = block.buffer.slice(0, length);
    return s.then((s) => s.request(own, length, body, timeoutMs));
  }

  connectionInfo(): ConnectionInfo | undefined {
    if (!this.#core.last) return undefined;
    const nghttp3 = /nghttp3 (\S+)/.exec(this.#versions)?.[1] ?? "?";
    return {
      stack: "deno",
      implementation: `quinn (Deno ${Deno.version.deno}), nghttp3 ${nghttp3}`,
      tls: { library: "rustls (Deno)" },
    };
  }

  close(): Promise<void> {
    return this.#core.close();
  }
}

/** A client for `https://host:port` over HTTP/3 on Deno's QUIC. */
export async function createDenoH3Client(
  origin: string,
  options: ClientOptions = {},
): Promise<SbiClient> {
  const url = parseOrigin(origin);
  if (url.protocol !== "https:") throw new TypeError(`HTTP/3 needs an https:// origin: ${origin}`);
  if (options.tls?.insecure) {
    throw new RangeError(
      "The deno stack's h3 cannot skip certificate verification (Deno's QUIC has no option for it); pass the CA",
    );
  }
  if (options.tls?.cert) {
    throw new RangeError(
      "The deno stack's h3 cannot send a client certificate (Deno's QUIC has no mutual TLS); use the native stack",
    );
  }
  await loadDh3Library();
  return new QuinnH3Client(url, options);
}
/** A failure to send, as the client reports it. */
function sendError(err: unknown): TransportError {
  return err instanceof TransportError
    ? err
    : new TransportError(`Cannot send the HTTP/3 request: ${(err as Error).message}`, {
      cause: err,
    });
}

/** Waits for `quic`'s handshake at most `ms`; past it the connection is closed and this throws. */
async function handshakeWithin(quic: Deno.QuicConn, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      try {
        quic.close({ closeCode: 0, reason: "handshake timed out" });
      } catch {
        // already closed
      }
      reject(new Error(`Handshake not done within ${ms} ms`));
    }, ms);
  });
  try {
    await Promise.race([quic.handshake, late]);
  } finally {
    clearTimeout(timer);
  }
}

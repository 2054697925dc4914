/**
 * One connection of the native HTTP/3 client (`client.ts` tells the whole
 * design): its QUIC connection in the shim and the `Deno.DatagramConn` it
 * adopted; requests opened as streams (safe ones in 0-RTT), responses out of
 * the shim's events, one I/O pass per wake-up and one timer for the shim's
 * next deadline. With the module's own I/O (an {@linkcode H3OwnedSocket}) its
 * thread reads, runs the timers and acknowledges, and wakes this one for
 * answers and connection events only.
 */
import { DeadlineTimer } from "./deadline_timer.ts";
import type { TlsConnectionInfo } from "../tls.ts";
import type { SbiRequestBlock } from "../sbi_request_block.ts";
import { type ClientResponse, type SetupTimings, TransportError } from "../types.ts";
import { type PendingRequest, PendingStreams, timedRequest } from "../client_core.ts";
import { NATIVE_ERR } from "../native/errors.ts";
import { TLS_STATE } from "../native/tls_session.ts";
import { H3_EVENT } from "./h3_event.ts";
import type { EventHandler } from "../native/event_poller.ts";
import type { H3ClientConn } from "./h3_client_conn.ts";
import type { H3DatagramStats } from "./h3_datagram_stats.ts";
import { H3OwnedSocket, type H3Socket } from "./h3_socket.ts";
import { IoLoop } from "../native/io_loop.ts";
import { MicrotaskDelay, microtaskHops } from "../microtask_delay.ts";
import type { Sbh3Symbols } from "./symbols.ts";
import type { SetupRecorder } from "../setup_timings.ts";
import { toClientResponseFromBlock } from "./convert.ts";

/** Microtask hops the flush after a read waits for callers to submit their next requests. */
const READ_FLUSH_HOPS = 4;

/** Methods a client may send in 0-RTT: safe, so a replay changes nothing (RFC 8470 §4.1, RFC 9110 §9.2.1). */
const EARLY_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** A request of one session: its block (kept while it may have to go again), body and stream. */
class Queued implements PendingRequest {
  /** The encoded header block; undefined once sent for good (1-RTT). */
  block: Uint8Array | undefined = undefined;
  /** Stream id, -1 while queued. */
  stream = -1;
  /** Settles the caller's promise and stops its timeout. */
  pending!: PendingRequest;

  /** `early`: safe to send in 0-RTT. */
  constructor(readonly early: boolean, readonly body: Uint8Array) {}

  resolve(r: ClientResponse): void {
    this.pending.resolve(r);
  }

  reject(e: Error): void {
    this.pending.reject(e);
  }
}

/** One QUIC connection and its socket. */
export class Session {
  #sock: H3Socket | H3OwnedSocket;
  /** The module's I/O thread (`io: "module"`). */
  #loop: IoLoop | undefined;
  #conn: H3ClientConn;
  #onTicket: (ticket: Uint8Array) => void;
  #offered: Uint8Array | undefined;
  #gotTicket = false;
  #setup: SetupRecorder;
  /** The first response is still to come: io() marks the set-up phases. */
  #timing = true;
  #connected = false;
  #lastTls: TlsConnectionInfo | null = null;
  #pending = new PendingStreams<Queued>();
  #queued: Queued[] = [];
  #timer = new DeadlineTimer(() => {
    if (this.#dead) return;
    // Fired early (the deadline moved later since it was armed): only re-arm, no I/O pass.
    const ms = this.#conn.timeoutMs();
    if (ms > 0) this.#timer.arm(ms);
    else this.#process();
  });
  #reading: Promise<void>;
  /** No new requests: closed, failed or told to go away. */
  unusable = false;
  #dead = false;
  /** Why the connection ended, once it did. */
  #failure: Error | undefined;
  #ended = Promise.withResolvers<void>();
  #lastStats: H3DatagramStats | null = null;
  #lastToken: Uint8Array | null = null;

  /**
   * `offered`: the ticket this connection resumes with, if any. A new ticket
   * from the server goes to `onTicket`; a connection that resumed but ends
   * before its new ticket arrived (0-RTT answers come a round trip before
   * it) hands the offered one back, so the next connection still resumes.
   */
  constructor(
    sock: H3Socket | H3OwnedSocket,
    conn: H3ClientConn,
    onTicket: (ticket: Uint8Array) => void,
    offered: Uint8Array | undefined,
    setup: SetupRecorder,
    sym: Sbh3Symbols,
  ) {
    this.#setup = setup;
    this.#sock = sock;
    this.#conn = conn;
    this.#onTicket = onTicket;
    this.#offered = offered;
    if (sock instanceof H3OwnedSocket) {
      const c = conn.pointer, u = sock.pointer;
      this.#loop = new IoLoop(
        sym,
        (wake) => sym.sbh3_conn_loop_new(c, u, wake),
        this.#woken,
        "the HTTP/3 client",
      );
      conn.guard(this.#loop);
      this.#reading = Promise.resolve();
      this.#flush();
      return;
    }
    this.#flush();
    this.#reading = this.#readLoop(sock);
  }

  /**
   * The module's thread read datagrams that completed answers or changed the
   * connection (or brought stream credit a queued request waits for): hand
   * them out as {@linkcode #process} does with a datagram it read.
   */
  #woken = (): void => {
    if (this.#dead) return;
    // the transport is up once anything came back (the thread read it: no finer time here)
    if (this.#timing) this.#setup.connected();
    const settled = this.#settled;
    this.#drainEvents();
    if (this.#dead) return;
    if (this.#queued.length) this.#submit();
    if (this.#settled !== settled) this.#flushAfterCallers();
    else this.#flush();
    if (this.unusable && this.#pending.size === 0 && this.#queued.length === 0) void this.close();
  };

  /**
   * Sends a request whose block `block` encodes now: at once when the
   * connection takes it (the output leaves with the others of this turn of
   * the event loop), else queued in order.
   */
  request(
    block: SbiRequestBlock,
    method: string,
    path: string,
    headers: Record<string, string> | undefined,
    body: Uint8Array,
    timeoutMs: number,
    onHeaders?: (sent: Record<string, string>) => void,
  ): Promise<ClientResponse> {
    const q = new Queued(EARLY_METHODS.has(method.toUpperCase()), body);
    const t = timedRequest(timeoutMs, () => {
      if (q.stream >= 0) {
        this.#pending.delete(q.stream);
        if (!this.#dead) {
          this.#conn.cancel(q.stream);
          this.#scheduleFlush();
        }
      } else {
        this.#queued = this.#queued.filter((e) => e !== q);
      }
    });
    q.pending = t.pending;
    let len: number;
    try {
      len = block.encode(method, path, headers, timeoutMs, body.length);
      if (onHeaders !== undefined) onHeaders(block.sentHeaders(len));
    } catch (err) {
      t.pending.reject(err as Error);
      return t.promise;
    }
    if (this.#queued.length === 0 && (this.#connected || q.early) && !this.#dead) {
      // Before the handshake completes the block may have to go again (0-RTT refused): keep it.
      if (!this.#connected) q.block = block.buffer.slice(0, len);
      if (this.#send(q, block.buffer, len)) return t.promise;
    }
    q.block ??= block.buffer.slice(0, len);
    this.#queued.push(q);
    this.#submit();
    this.#scheduleFlush();
    return t.promise;
  }

  /**
   * Opens a stream for `q`; true when it went (or failed and was rejected),
   * false when the connection has no stream for it now.
   */
  #send(q: Queued, block: Uint8Array, length: number): boolean {
    let id: number;
    try {
      id = this.#conn.requestBlock(block, length, q.body);
    } catch (err) {
      // The module's thread may have closed the connection before this thread saw its CLOSED
      // event: read it, so the request fails with why the connection ended.
      this.#drainEvents();
      q.pending.reject(
        this.#failure ??
          new TransportError(`HTTP/3 request rejected: ${(err as Error).message}`, { cause: err }),
      );
      return true;
    }
    if (id < 0) return false;
    this.#setup.requestSent();
    q.stream = id;
    this.#pending.add(id, q);
    this.#scheduleFlush();
    return true;
  }

  /** Sends what this turn of the event loop submitted, in one I/O pass. */
  #scheduleFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(this.#scheduled);
  }

  #flushQueued = false;
  #scheduled = () => {
    this.#flushQueued = false;
    this.#flush();
  };

  /**
   * Opens streams for queued requests while the connection allows. Before
   * the handshake completes (0-RTT) only safe methods go; the rest wait.
   */
  #submit(): void {
    for (let i = 0; i < this.#queued.length && !this.#dead;) {
      const q = this.#queued[i];
      if (!this.#connected && !q.early) {
        i++;
        continue;
      }
      const block = q.block!;
      if (!this.#send(q, block, block.length)) return;
      this.#queued.splice(i, 1);
      if (this.#connected) q.block = undefined;
    }
  }

  /**
   * Feeds `first`, receives all further ready datagrams, runs timers and sends
   * all output; returns how many datagrams came in.
   */
  #io(first?: Uint8Array): number {
    if (this.#loop) {
      this.#loop.flush();
      return 0;
    }
    try {
      // A datagram Deno received marks the transport up before the shim reads it.
      if (first?.length && this.#timing) this.#setup.connected();
      const n = this.#conn.io(this.#sock as H3Socket, first);
      if (n > 0 && this.#timing) {
        // Datagrams came in (through Deno's receive or the shim's own): the transport is up.
        this.#setup.connected();
      }
      return n;
    } catch {
      // the connection is freed; the CLOSED event already failed it
      return 0;
    }
  }

  /** Most rounds of one exchange that open queued streams as credit comes in. */
  static readonly #SUBMIT_ROUNDS = 64;

  /**
   * One I/O pass and what it brought: hands out the events of every datagram
   * read, and opens queued requests' streams for as long as the server's
   * credit (MAX_STREAMS, which may come in any datagram the shim reads) lets
   * them go, sending them in the same pass. A request left queued here would
   * wait for a datagram that never comes once every open stream is answered.
   */
  #exchange(first?: Uint8Array): void {
    this.#passes++;
    if (this.#loop) {
      // the thread wakes this one when credit comes in: one pass, then send
      this.#drainEvents();
      if (this.#queued.length && !this.#dead) this.#submit();
      this.#io();
      return;
    }
    let got = 0;
    if (first === undefined && !this.#expecting && this.#connected && !this.#timing) {
      this.#sendOnly();
    } else {
      got = this.#io(first);
    }
    this.#drainEvents();
    for (let i = 0; i < Session.#SUBMIT_ROUNDS && this.#queued.length && !this.#dead; i++) {
      const waiting = this.#queued.length;
      this.#submit();
      if (this.#queued.length === waiting && got === 0) break;
      got = this.#io();
      this.#drainEvents();
    }
    this.#expecting = this.#outstanding();
  }

  /** I/O passes so far (each sends all that is due). */
  #passes = 0;

  /**
   * Something this connection sent may still bring datagrams: a request in
   * flight or waiting for stream credit. When not (one request in flight,
   * answered), the pass that sends the next request reads nothing first: the
   * socket was read to its end when the answer came, and a read there would
   * find nothing.
   */
  #expecting = true;

  #outstanding(): boolean {
    return this.#pending.size > 0 || this.#queued.length > 0;
  }

  /** Runs timers and sends, reading nothing. */
  #sendOnly(): void {
    try {
      this.#conn.flush(this.#sock as H3Socket);
    } catch {
      // the connection is freed; the CLOSED event already failed it
    }
  }

  /** Reads every ready datagram without sending; how many came in (0 once the connection is freed). */
  #drain(): number {
    try {
      return this.#conn.drain(this.#sock as H3Socket);
    } catch {
      // the connection is freed; the CLOSED event already failed it
      return 0;
    }
  }

  #flush(): void {
    if (this.#dead) return;
    this.#exchange();
    this.#arm();
  }

  /**
   * Keeps one timer for the shim's next deadline: re-armed only when that
   * deadline moves earlier; one that fires early (the deadline moved later)
   * runs a cheap io() and re-arms.
   */
  #arm(): void {
    // the module's thread keeps its own timers
    if (!this.#dead && !this.#loop) this.#timer.arm(this.#conn.timeoutMs());
  }

  async #readLoop(sock: H3Socket): Promise<void> {
    while (!this.#dead) {
      let got;
      try {
        got = await sock.receive();
      } catch (err) {
        this.#fail(
          new TransportError(`HTTP/3 socket failed: ${(err as Error).message}`, { cause: err }),
        );
        break;
      }
      if (got === null || this.#dead) break;
      this.#process(got[0]);
      // the next receive's first try (an empty socket, a system call) after this datagram's send
      await microtaskHops(READ_FLUSH_HOPS + 2);
    }
  }

  #drainEvents(): void {
    if (!this.#dead) this.#conn.pollEach(this.#onEvent);
    if (this.#conn.tlsState() & TLS_STATE.TICKET) {
      const t = this.#conn.takeTicket();
      if (t) {
        this.#gotTicket = true;
        this.#onTicket(t);
      }
    }
  }

  /**
   * Feeds `first` (or runs the timers), hands out what completed and sends.
   * On an established connection a received datagram is only read here.
   * When it completed answers, they resolve now and what it asks to send (an
   * ACK, flow credit) leaves in the flush after the callers' continuations,
   * with the requests they submit: one datagram for both instead of an ACK
   * of its own. When it completed nothing (part of a larger answer), the
   * datagrams behind it are read first, sending nothing: if they complete
   * the answer (a 16 KiB body is a dozen datagrams sent in one burst), their
   * ACK waits for the callers' requests as above instead of leaving alone
   * (and waking the server) before the answer resolves; if not, the rest is
   * acknowledged at once, which keeps a long transfer moving.
   */
  #process(first?: Uint8Array): void {
    const readOnly = first !== undefined && first.length > 0 && this.#connected && !this.#timing;
    const settled = this.#settled;
    if (readOnly) {
      this.#conn.recv(first);
      this.#drainEvents();
      if (this.#dead) return;
      if (this.#settled === settled && this.#drain() > 0) {
        // part of a larger answer: its rest may be here already
        this.#drainEvents();
        if (this.#dead) return;
      }
      this.#expecting = this.#outstanding();
      if (this.#queued.length) this.#submit();
      if (this.#settled !== settled) this.#flushAfterCallers();
      else this.#flush();
    } else {
      this.#exchange(first);
      if (this.#dead) return;
      this.#arm();
    }
    if (this.unusable && this.#pending.size === 0 && this.#queued.length === 0) void this.close();
  }

  /**
   * Flushes once the callers whose answers just resolved have resumed: a
   * resolved promise resumes its awaiting caller in the next microtask, and
   * each async layer above it adds one. A caller deeper than
   * {@linkcode READ_FLUSH_HOPS} layers still gets its answer at once; its
   * ACK only goes in a datagram of its own.
   */
  #flushAfterCallers(): void {
    this.#passesAtRead = this.#passes;
    this.#afterCallers.request();
  }

  #afterCallers = new MicrotaskDelay(READ_FLUSH_HOPS, () => {
    // a pass since then (the one that sent the callers' requests) sent the ACK too
    if (this.#passes === this.#passesAtRead) this.#flush();
  });
  #passesAtRead = 0;

  /** Answers handed out (resolved or rejected by the server's reset) so far. */
  #settled = 0;

  /** One polled event; its block and body are views into the poller's buffer. */
  #onEvent: EventHandler = (type, streamId, code, block, body, owned) => {
    // what comes after the connection failed (its CLOSED event) changes nothing
    if (this.#dead) return;
    // On the module's thread datagrams come in unseen: the transport is up by its first event at
    // the latest (whichever pass reads it, a wake-up or a flush).
    if (this.#loop && this.#timing) this.#setup.connected();
    switch (type) {
      case H3_EVENT.MESSAGE: {
        const p = this.#pending.take(streamId);
        if (!p) return;
        this.#settled++;
        if (this.#timing) {
          // The first byte is the response's first header, timed by the shim: other datagrams
          // (a handshake packet the server sent again after a spurious timeout) do not count.
          const ago = this.#conn.firstResponseAgoMs();
          if (ago !== undefined) this.#setup.firstByteAgo(ago);
        }
        this.#setup.responseComplete();
        this.#timing = false;
        try {
          p.resolve(
            toClientResponseFromBlock(block, owned || body.length === 0 ? body : body.slice()),
          );
        } catch (err) {
          p.reject(err as Error);
        }
        return;
      }
      case H3_EVENT.RESET: {
        const p = this.#pending.take(streamId);
        if (!p) return;
        this.#settled++;
        p.reject(
          new TransportError(`HTTP/3 stream reset by the server (error 0x${code.toString(16)})`),
        );
        return;
      }
      case H3_EVENT.GOAWAY:
        this.unusable = true;
        return;
      case H3_EVENT.CONNECTED:
        this.#setup.tlsDone();
        this.#connected = true;
        this.#lastTls = this.#conn.tlsInfo();
        this.#submit();
        return;
      case H3_EVENT.EARLY_REJECTED: {
        // The server refused 0-RTT: what went early is gone; send it again, in order.
        const again = this.#pending.drain();
        for (const q of again) q.stream = -1;
        this.#queued.unshift(...again);
        return;
      }
      case H3_EVENT.CLOSED: {
        const text = this.#conn.errorText() || "Connection closed";
        const prefix = code === NATIVE_ERR.TLS
          ? "HTTP/3 TLS failure"
          : code === NATIVE_ERR.REFUSED
          ? "HTTP/3 server unreachable"
          : "HTTP/3 connection closed";
        this.#fail(new TransportError(`${prefix}: ${text}`));
        return;
      }
    }
  };

  #fail(err: Error): void {
    if (this.#dead) return;
    this.#failure = err;
    this.unusable = true;
    // Send a pending CONNECTION_CLOSE, if any, before going quiet.
    this.#io();
    this.#lastTls = this.#conn.tlsInfo() ?? this.#lastTls;
    if (!this.#gotTicket && this.#offered && this.#lastTls?.resumed) this.#onTicket(this.#offered);
    this.#dead = true;
    this.#ended.resolve();
    this.#pending.rejectAll(err);
    for (const q of this.#queued) q.reject(err);
    this.#queued = [];
    this.#timer.cancel();
    const sock = this.#sock;
    const closeSocket = () => {
      try {
        sock.close();
      } catch {
        // already closed
      }
    };
    // the module's thread stops before the socket it reads goes
    if (this.#loop) this.#reading = this.#loop.stop().then(closeSocket);
    else closeSocket();
  }

  /**
   * Runs the shim's timers now when the connection holds no request and their
   * deadline passed without the event loop running them (the idle timeout,
   * after a busy or suspended spell): the request then goes on a new
   * connection, not on one that has already timed out. A connection with
   * requests in flight is in use; its timers run in its next I/O pass. Run
   * here, a busy connection's timers (due at once, often) would give each new
   * request an I/O pass and a datagram of its own.
   */
  runOverdueTimer(): void {
    if (this.#dead || this.#loop || this.#pending.size > 0 || this.#queued.length > 0) return;
    if (this.#timer.overdue()) this.#process();
  }

  /** Request streams the shim still holds state for. */
  get streamCount(): number {
    return this.#conn.streamCount();
  }

  /** Starts a 1-RTT key update on this connection; false when not allowed yet or closed. */
  updateKey(): boolean {
    if (this.#dead) return false;
    const ok = this.#conn.updateKey();
    if (ok) this.#flush();
    return ok;
  }

  /** The last NEW_TOKEN the server gave this connection (kept after close), or null. */
  token(): Uint8Array | null {
    return this.#conn.token() ?? this.#lastToken;
  }

  /** Datagram counters of this connection; after close, its last figures. */
  stats(): H3DatagramStats | null {
    return this.#conn.stats() ?? this.#lastStats;
  }

  /** The set-up phases of this connection's first request, once its response is complete. */
  setupTimings(): SetupTimings | undefined {
    return this.#setup.timings();
  }

  /** What the handshake negotiated (kept after close); null before it completed. */
  tlsInfo(): TlsConnectionInfo | null {
    return this.#dead ? this.#lastTls : (this.#conn.tlsInfo() ?? this.#lastTls);
  }

  /** The exporter of this connection; throws `RangeError` when it is not established or closed. */
  exportKeyingMaterial(label: string, context: Uint8Array | undefined, length: number): Uint8Array {
    if (this.#dead) throw new RangeError("The HTTP/3 connection is closed");
    return this.#conn.exportKeyingMaterial(label, context, length);
  }

  /** Resolves once the connection ended: closed, failed, idle or closed by the peer. */
  get ended(): Promise<void> {
    return this.#ended.promise;
  }

  /** Closes gracefully: CONNECTION_CLOSE with H3_NO_ERROR, then frees everything. */
  async close(): Promise<void> {
    if (!this.#dead) {
      this.#conn.shutdown();
      this.#fail(new TransportError("Client is closed"));
    }
    await this.#reading;
    this.#lastStats = this.#conn.stats();
    this.#lastToken = this.#conn.token() ?? this.#lastToken;
    this.#lastTls = this.#conn.tlsInfo() ?? this.#lastTls;
    this.#conn.close();
  }
}

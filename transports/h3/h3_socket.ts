/**
 * {@linkcode H3Socket}: a UDP socket that Deno's reactor watches and the
 * native HTTP/3 module reads and writes in batches.
 */
import type { Sbh3Symbols } from "./symbols.ts";
import { NATIVE_ERR, nativeErrorName } from "../native/errors.ts";
import { check, H3Error, h3Freed } from "./h3_error.ts";
import { cstr, EMPTY } from "./_ffi_util.ts";

/** A datagram received through Deno: its bytes (valid until the next receive) and sender. */
export type Datagram = [Uint8Array, Deno.NetAddr];

/**
 * A UDP socket for {@linkcode H3ClientConn.io} and {@linkcode H3ServerEndpoint.io}:
 * a `Deno.DatagramConn` (so Deno's reactor, on the main thread, reports
 * readiness) that the shim adopts by its local address for batched
 * recvmmsg/sendmmsg. Two ways to wait: `receive()` awaits one datagram
 * through Deno (its TOS byte, and so its ECN mark, stays with Deno) and the
 * io call drains the rest; `ready()` waits in the module and reads nothing,
 * so the io call reads every datagram with its ECN mark, at the price of a
 * thread crossing per wake-up. The shim never closes the socket; `close()`
 * ends a pending wait, drops the shim's handle, then closes the socket, which
 * ends a pending `receive()`.
 */
const NOTHING = EMPTY.subarray(0, 0);

export class H3Socket {
  #sym: Sbh3Symbols;
  #ptr: Deno.PointerValue;
  #udp: Deno.DatagramConn;
  #buf = new Uint8Array(65536);
  #closing = false;
  #wait: Promise<boolean> | undefined;
  /** Bound local address (as Deno reports it) and port. */
  readonly hostname: string;
  readonly port: number;

  /** Every datagram is read by the module with its ECN mark (see {@linkcode ready}). */
  readonly exactEcn: boolean;

  /**
   * Opens a socket bound to `ip:port` (0: any free port); throws H3Error
   * (SOCKET) on failure. `exactEcn`: `receive()` waits in the module
   * ({@linkcode ready}) instead of through Deno.
   */
  constructor(sym: Sbh3Symbols, ip: string, port: number, exactEcn = false) {
    this.#sym = sym;
    this.exactEcn = exactEcn;
    try {
      this.#udp = Deno.listenDatagram({ transport: "udp", hostname: ip, port });
    } catch (err) {
      throw new H3Error(
        NATIVE_ERR.SOCKET,
        `Cannot bind a UDP socket to ${ip}:${port}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const addr = this.#udp.addr as Deno.NetAddr;
    this.hostname = addr.hostname;
    this.port = addr.port;
    const ptr = sym.sbh3_udp_adopt(cstr(addr.hostname), addr.port);
    if (ptr === null) {
      this.#udp.close();
      throw new H3Error(
        NATIVE_ERR.SOCKET,
        `Cannot find the UDP socket bound to ${addr.hostname}:${addr.port} among this process's descriptors`,
      );
    }
    this.#ptr = ptr;
    if (exactEcn && sym.sbh3_udp_watch(ptr) < 0) {
      this.#release();
      throw new H3Error(NATIVE_ERR.SOCKET, "Cannot make the UDP socket waitable (eventfd failed)");
    }
  }

  /** The native handle, for the io calls in this folder. */
  get pointer(): Deno.PointerValue {
    if (this.#ptr === null || this.#closing) {
      throw h3Freed("UDP socket");
    }
    return this.#ptr;
  }

  /** Connects to the peer, so that an ICMP port unreachable ends the connection fast. */
  connect(ip: string, port: number): void {
    check(this.#sym.sbh3_udp_connect(this.pointer, cstr(ip), port), "udp_connect");
  }

  /**
   * Awaits the next datagram through Deno's reactor. Resolves with it; with
   * an empty datagram when the receive reported ECONNREFUSED (recorded for
   * the next io call, which reports REFUSED); with null once closed. Other
   * receive errors reject. With `exactEcn`, awaits {@linkcode ready} instead
   * and resolves with an empty datagram: the io call reads them all.
   */
  receive(): Promise<Datagram | null> {
    if (this.#ptr === null || this.#closing) return Promise.resolve(null);
    if (this.exactEcn) return this.ready().then(this.#readyDatagram);
    // One promise per datagram: no async frame around Deno's own.
    return (this.#udp.receive(this.#buf) as Promise<Datagram>).catch(this.#receiveFailed);
  }

  #readyDatagram = (ready: boolean): Datagram | null =>
    ready ? [NOTHING, this.#udp.addr as Deno.NetAddr] : null;

  #receiveFailed = (err: unknown): Datagram | null => {
    if (this.#ptr === null) return null;
    if (err instanceof Deno.errors.ConnectionRefused) {
      this.#sym.sbh3_udp_refused(this.#ptr);
      return [EMPTY.subarray(0, 0), this.#udp.addr as Deno.NetAddr];
    }
    throw err;
  };

  /**
   * Resolves true once a datagram (or a receive error, such as the ICMP port
   * unreachable of a connected socket) waits for the next io call; false once
   * closed. Nothing is read, so the io call reads every datagram with its
   * TOS byte. The wait runs in the module on one of Deno's blocking threads:
   * each wake-up crosses threads, which {@linkcode receive} does not. Calls
   * while a wait is pending share it. Only on a socket opened with `exactEcn`
   * (others have no wake-up descriptor; the wait rejects with INVALID).
   */
  ready(): Promise<boolean> {
    if (this.#ptr === null || this.#closing) return Promise.resolve(false);
    return this.#wait ??= this.#waitOnce();
  }

  async #waitOnce(): Promise<boolean> {
    // Start waiting after the work this turn queued (the flush of answers just given):
    // the blocking thread's wake-up must not preempt that send on this CPU.
    await null;
    const rc = this.#closing ? NATIVE_ERR.CLOSED : await this.#sym.sbh3_udp_wait(this.#ptr, -1);
    this.#wait = undefined;
    if (this.#closing) {
      this.#release();
      return false;
    }
    if (rc < 0) throw new H3Error(rc, `Waiting on the UDP socket failed (${nativeErrorName(rc)})`);
    return true;
  }

  /** Ends a pending wait, frees the shim's handle, then closes the socket. Idempotent. */
  close(): void {
    if (this.#ptr === null || this.#closing) return;
    this.#closing = true;
    // a pending ready() still uses the handle: it frees it once the wake ends its wait
    if (this.#wait) this.#sym.sbh3_udp_wake(this.#ptr);
    else this.#release();
  }

  #release(): void {
    if (this.#ptr === null) return;
    this.#sym.sbh3_udp_free(this.#ptr);
    this.#ptr = null;
    this.#udp.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * A UDP socket the module opens and owns itself, for its own I/O thread
 * (`io: "module"`): Deno never reads it, the thread reads every datagram with
 * its TOS byte (so its ECN mark) and sends in batches. `close()` frees the
 * module's handle, which closes the socket; call it after the loop stopped.
 */
export class H3OwnedSocket {
  #sym: Sbh3Symbols;
  #ptr: Deno.PointerValue;
  readonly hostname: string;
  readonly port: number;

  /** Binds ip:port (0: any free port); throws H3Error (SOCKET) when it cannot. */
  constructor(sym: Sbh3Symbols, ip: string, port: number) {
    this.#sym = sym;
    const ptr = sym.sbh3_udp_open(cstr(ip), port);
    if (ptr === null) {
      throw new H3Error(NATIVE_ERR.SOCKET, `Cannot bind a UDP socket to ${ip}:${port}`);
    }
    this.#ptr = ptr;
    this.hostname = ip;
    this.port = sym.sbh3_udp_port(ptr);
  }

  /** The module's handle; throws once closed. */
  get pointer(): Deno.PointerValue {
    if (this.#ptr === null) throw h3Freed("UDP socket");
    return this.#ptr;
  }

  /** Connects to the peer, so that an ICMP port unreachable ends the connection fast. */
  connect(ip: string, port: number): void {
    check(this.#sym.sbh3_udp_connect(this.pointer, cstr(ip), port), "udp_connect");
  }

  /** Datagrams the module received on it so far (read it under the loop's lock); 0 once closed. */
  received(): number {
    return this.#ptr === null ? 0 : Number(this.#sym.sbh3_udp_received(this.#ptr));
  }

  /** Frees the handle and closes the socket. Idempotent. */
  close(): void {
    if (this.#ptr === null) return;
    this.#sym.sbh3_udp_free(this.#ptr);
    this.#ptr = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * {@linkcode H3Socket}: a UDP socket that Deno's reactor watches and the
 * native HTTP/3 module reads and writes in batches.
 */
import type { Sbh3Symbols } from "./symbols.ts";
import { NATIVE_ERR } from "../native/errors.ts";
import { check, H3Error } from "./h3_error.ts";
import { cstr, EMPTY } from "./_ffi_util.ts";

/** A datagram received through Deno: its bytes (valid until the next receive) and sender. */
export type Datagram = [Uint8Array, Deno.NetAddr];

/**
 * A UDP socket for {@linkcode H3ClientConn.io} and {@linkcode H3ServerEndpoint.io}:
 * a `Deno.DatagramConn` (so Deno's reactor, on the main thread, reports
 * readiness) that the shim adopts by its local address for batched
 * recvmmsg/sendmmsg. `receive()` awaits one datagram through Deno; the io
 * call then drains the rest. The shim never closes the socket; `close()`
 * drops the shim's handle first, then closes the socket, which ends a pending
 * `receive()`.
 */
export class H3Socket {
  #sym: Sbh3Symbols;
  #ptr: Deno.PointerValue;
  #udp: Deno.DatagramConn;
  #buf = new Uint8Array(65536);
  /** Bound local address (as Deno reports it) and port. */
  readonly hostname: string;
  readonly port: number;

  /** Opens a socket bound to `ip:port` (0: any free port); throws H3Error (SOCKET) on failure. */
  constructor(sym: Sbh3Symbols, ip: string, port: number) {
    this.#sym = sym;
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
  }

  /** The native handle, for the io calls in this folder. */
  get pointer(): Deno.PointerValue {
    if (this.#ptr === null) throw new H3Error(NATIVE_ERR.CLOSED, "UDP socket is closed");
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
   * receive errors reject.
   */
  async receive(): Promise<Datagram | null> {
    if (this.#ptr === null) return null;
    try {
      return (await this.#udp.receive(this.#buf)) as Datagram;
    } catch (err) {
      if (this.#ptr === null) return null;
      if (err instanceof Deno.errors.ConnectionRefused) {
        this.#sym.sbh3_udp_refused(this.#ptr);
        return [EMPTY.subarray(0, 0), this.#udp.addr as Deno.NetAddr];
      }
      throw err;
    }
  }

  /** Frees the shim's handle, then closes the socket. Idempotent. */
  close(): void {
    if (this.#ptr === null) return;
    this.#sym.sbh3_udp_free(this.#ptr);
    this.#ptr = null;
    this.#udp.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

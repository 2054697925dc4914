/**
 * The JavaScript side of the wake-up probe: opens the library's UDP socket
 * and I/O thread, and answers every datagram with the same bytes through the
 * ring in shared memory, woken by one mechanism, until the peer's
 * zero-length datagram ends the run.
 */
import { WAKEUP_SYMBOLS } from "./_symbols.ts";

/** How the I/O thread wakes JavaScript (see bench/native/wakeup/wakeup.h). */
export const MECHANISMS = ["callback", "wait", "doorbell"] as const;
/** One of {@linkcode MECHANISMS}. */
export type Mechanism = typeof MECHANISMS[number];

/** Ring layout, mirrored from wakeup.h. */
const SLOTS = 256;
const SLOT_BYTES = 2048;
const RX_TAIL = 0 / 4;
const RX_HEAD = 64 / 4;
const TX_TAIL = 128 / 4;
const TX_HEAD = 192 / 4;
const PARKED = 256 / 4;
const RX_SLOTS = 4096;
const TX_SLOTS = RX_SLOTS + SLOTS * SLOT_BYTES;
const SLOT_TOS = 2;
const SLOT_FLAGS = 3;
const SLOT_DATA = 32;
const EV_END = 1;

/** What one run saw, from the library's counters and the JavaScript side's. */
export interface RingEchoStats {
  /** Datagrams the thread read, the ending one included. */
  received: number;
  /** Of those, how many carried each ECN mark. */
  notEct: number;
  ect1: number;
  ect0: number;
  ce: number;
  /** Datagrams read without a TOS control message. */
  noTos: number;
  /** Replies the thread sent. */
  sent: number;
  /** Batches the thread published. */
  batches: number;
  /** Wake-ups the thread delivered. */
  wakeups: number;
  /** Events JavaScript answered. */
  answered: number;
  /** Of those, how many JavaScript read as ECT(0). */
  answeredEct0: number;
}

/** A running echo: its port, and a promise of its counters once the peer ended the run. */
export interface RingEcho {
  port: number;
  done: Promise<RingEchoStats>;
}

/**
 * Starts the echo on 127.0.0.1 (any port) with the library at `libraryPath`,
 * woken by `mechanism`. The library is closed when the run ends.
 */
export async function startRingEcho(libraryPath: string, mechanism: Mechanism): Promise<RingEcho> {
  const lib = Deno.dlopen(libraryPath, WAKEUP_SYMBOLS);
  const s = lib.symbols;
  const w = s.wk_new(0, MECHANISMS.indexOf(mechanism));
  if (!w) {
    lib.close();
    throw new Error(`The wake-up library could not open a UDP socket`);
  }
  const bytes = s.wk_ring_bytes();
  const mem = Deno.UnsafePointerView.getArrayBuffer(s.wk_ring(w)!, bytes);
  const i32 = new Int32Array(mem);
  const u8 = new Uint8Array(mem);
  let answered = 0, answeredEct0 = 0;

  /** Answers every unread event; true once the ending event was read. */
  const drain = (): boolean => {
    let head = Atomics.load(i32, RX_HEAD);
    const tail = Atomics.load(i32, RX_TAIL);
    let txTail = Atomics.load(i32, TX_TAIL);
    const txHead = Atomics.load(i32, TX_HEAD);
    let ended = false;
    while (head !== tail && ((txTail - txHead) | 0) < SLOTS) {
      const off = RX_SLOTS + ((head >>> 0) % SLOTS) * SLOT_BYTES;
      head = (head + 1) | 0;
      if (u8[off + SLOT_FLAGS] & EV_END) {
        ended = true;
        break;
      }
      const len = u8[off] | (u8[off + 1] << 8);
      if ((u8[off + SLOT_TOS] & 3) === 2) answeredEct0++;
      const to = TX_SLOTS + ((txTail >>> 0) % SLOTS) * SLOT_BYTES;
      u8.copyWithin(to, off, off + SLOT_DATA + len);
      txTail = (txTail + 1) | 0;
      answered++;
    }
    Atomics.store(i32, RX_HEAD, head);
    if (txTail !== Atomics.load(i32, TX_TAIL)) {
      Atomics.store(i32, TX_TAIL, txTail);
      s.wk_kick(w);
    }
    return ended;
  };
  const unread = () => Atomics.load(i32, RX_TAIL) !== Atomics.load(i32, RX_HEAD);

  let cleanup = () => {};
  let run: Promise<void>;
  try {
    if (mechanism === "callback") {
      let finish = () => {};
      run = new Promise<void>((resolve) => finish = resolve);
      const cb = Deno.UnsafeCallback.threadSafe({ parameters: [], result: "void" }, () => {
        // The thread waits for this callback to return, so the library is freed a turn later.
        if (drain()) setTimeout(finish, 0);
      });
      cleanup = () => cb.close();
      if (s.wk_set_callback(w, cb.pointer) !== 0) throw new Error("wk_set_callback failed");
    } else if (mechanism === "wait") {
      run = (async () => {
        while (!drain()) {
          if (!unread() && await s.wk_wait(w) === 0) break;
        }
      })();
    } else {
      const dir = await Deno.makeTempDir({ prefix: "sbilab-wakeup-" });
      const path = `${dir}/bell`;
      const listener = Deno.listen({ transport: "unix", path });
      const accepted = listener.accept();
      const rc = s.wk_set_doorbell(w, new TextEncoder().encode(`${path}\0`));
      const conn = await accepted;
      listener.close();
      await Deno.remove(dir, { recursive: true });
      if (rc !== 0) {
        conn.close();
        throw new Error("wk_set_doorbell failed");
      }
      cleanup = () => conn.close();
      const bell = new Uint8Array(64);
      run = (async () => {
        while (!drain()) {
          Atomics.store(i32, PARKED, 1);
          // Parked with events unread: take the flag back, or read the byte the thread already wrote.
          if (unread() && Atomics.compareExchange(i32, PARKED, 1, 0) === 1) continue;
          if (await conn.read(bell) === null) break;
        }
      })();
    }
    if (s.wk_start(w) !== 0) throw new Error("wk_start failed");
  } catch (err) {
    s.wk_free(w);
    cleanup();
    lib.close();
    throw err;
  }
  return {
    port: s.wk_port(w),
    done: run.then(() => {
      const c = new BigUint64Array(9);
      s.wk_stop(w); // joins the thread after it sent the last replies
      s.wk_stats(w, c);
      s.wk_free(w);
      cleanup();
      lib.close();
      const n = (i: number) => Number(c[i]);
      return {
        received: n(0),
        notEct: n(1),
        ect1: n(2),
        ect0: n(3),
        ce: n(4),
        noTos: n(5),
        sent: n(6),
        batches: n(7),
        wakeups: n(8),
        answered,
        answeredEct0,
      };
    }),
  };
}

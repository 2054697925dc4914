/**
 * Test helpers for the native h2 client: whether its library loads (else a
 * skip message naming the Debian package), servers on loopback, and a relay
 * that reports the HTTP/2 frame types a client sends.
 */
import { h2NativeAvailable } from "./loader.ts";

/** Null when the native client tests can run, else why they are skipped. */
export const H2_NATIVE_SKIP: string | null = (await h2NativeAvailable())
  ? null
  : "native h2 client unavailable: apt-get install -y libnghttp2-dev gcc";

if (H2_NATIVE_SKIP) {
  // CI installs every package: a missing module there is a failure, not a skip.
  if (Deno.env.get("CI")) throw new Error(`In CI: ${H2_NATIVE_SKIP}`);
  console.warn(`skipping native h2 tests: ${H2_NATIVE_SKIP}`);
}

/** A TCP server on loopback that runs `serve` on each accepted connection. */
export interface RawServer {
  port: number;
  close(): Promise<void>;
}

/** Accepts connections and hands each to `serve`; `close()` stops and closes everything. */
export function rawServer(serve: (conn: Deno.TcpConn) => Promise<void>): RawServer {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.TcpConn>();
  const tasks: Promise<void>[] = [];
  const accepting = (async () => {
    try {
      for await (const c of listener) {
        conns.add(c);
        tasks.push(serve(c).catch(() => {}).finally(() => conns.delete(c)));
      }
    } catch {
      // listener closed
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close: async () => {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // already closed
        }
      }
      await accepting;
      await Promise.all(tasks);
    },
  };
}

/** HTTP/2 frame type numbers (RFC 9113 §6). */
export const FRAME = {
  DATA: 0,
  HEADERS: 1,
  RST_STREAM: 3,
  SETTINGS: 4,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
};

/** A frame a client sent: type, stream id and, for RST_STREAM, the error code. */
export interface SeenFrame {
  type: number;
  streamId: number;
  errorCode?: number;
}

/**
 * A relay between a client and `targetPort` that parses the client's
 * direction into frames (after the 24-byte preface) and records them.
 */
export function frameRelay(
  targetPort: number,
): RawServer & { frames: SeenFrame[]; changed(): Promise<void> } {
  const frames: SeenFrame[] = [];
  let wake = Promise.withResolvers<void>();
  const server = rawServer(async (client) => {
    const upstream = await Deno.connect({ hostname: "127.0.0.1", port: targetPort });
    const back = upstream.readable.pipeTo(client.writable).catch(() => {});
    let buf = new Uint8Array(0);
    let prefaceLeft = 24;
    const writer = upstream.writable.getWriter();
    try {
      for await (const chunk of client.readable) {
        await writer.write(chunk);
        const next = new Uint8Array(buf.length + chunk.length);
        next.set(buf);
        next.set(chunk, buf.length);
        buf = next;
        if (prefaceLeft > 0) {
          const k = Math.min(prefaceLeft, buf.length);
          buf = buf.subarray(k);
          prefaceLeft -= k;
        }
        while (prefaceLeft === 0 && buf.length >= 9) {
          const len = (buf[0] << 16) | (buf[1] << 8) | buf[2];
          if (buf.length < 9 + len) break;
          const v = new DataView(buf.buffer, buf.byteOffset);
          const f: SeenFrame = { type: buf[3], streamId: v.getUint32(5) & 0x7fffffff };
          if (f.type === FRAME.RST_STREAM) f.errorCode = v.getUint32(9);
          frames.push(f);
          buf = buf.subarray(9 + len);
        }
        wake.resolve();
        wake = Promise.withResolvers<void>();
      }
    } finally {
      await writer.close().catch(() => {});
      await back;
    }
  });
  return { ...server, frames, changed: () => wake.promise };
}

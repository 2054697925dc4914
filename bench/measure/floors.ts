/**
 * The machine's floors, measured in the same run as the transports: a
 * round trip of the same payload over plain TCP and UDP on loopback between
 * two processes, once with the project's C ping-pong (`kernel`) and once with
 * Deno's own sockets (`runtime`).
 */
import { onServerCpu, placement } from "./affinity.ts";
import { PEER_V8_FLAGS_ARG } from "../../lib/v8_flags.ts";
import { ensureBuilt } from "../../lib/native_build.ts";
import { Recorder } from "../stats/recorder.ts";
import { estimate } from "../stats/stats.ts";
import { type Clock, defaultClock, type SamplingPlan } from "./sampler.ts";
import type { FloorKind, FloorRow } from "../record/schema.ts";

/** Largest payload a floor can carry in one datagram. */
export const MAX_FLOOR_BYTES = 65000;

/** Raised when a floor cannot be measured; the message says why in one line. */
export class FloorError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "FloorError";
  }
}

/** Kernel floor: runs the C ping-pong (parent and forked echo child). */
export async function measureKernelFloor(
  protocol: FloorKind,
  sizeBytes: number,
  plan: SamplingPlan,
): Promise<FloorRow> {
  const recorder = new Recorder();
  const count = Math.min(plan.samples ?? 1_000_000, 1_000_000);
  for (const v of await kernelPingPong(protocol, sizeBytes, count, plan.sampleMs, 200)) {
    recorder.record(v);
  }
  const samples = recorder.finish();
  return { source: "kernel", protocol, sizeBytes, estimate: estimate(samples.samples), samples };
}

/**
 * One run of the C ping-pong: `warmup` unrecorded round trips (within
 * `maxMs`), then at most `count` recorded ones within another `maxMs`.
 * Returns the round trips in ns: at least `min` (default 2), else `FloorError`.
 */
export async function kernelPingPong(
  protocol: FloorKind,
  sizeBytes: number,
  count: number,
  maxMs: number,
  warmup: number,
  min = 2,
): Promise<number[]> {
  const exe = await ensureBuilt("pingpong", { quiet: true });
  const args = [
    protocol,
    String(count),
    String(Math.max(1, Math.round(maxMs))),
    String(sizeBytes),
    String(warmup),
  ];
  const [cmd, cmdArgs] = onServerCpu(await placement(), exe, args);
  // With a placement the C program pins its parent to the client CPU itself (PINGPONG_PARENT_CPU).
  const p = await placement();
  const out = await new Deno.Command(cmd, {
    args: cmdArgs,
    env: p ? { PINGPONG_PARENT_CPU: String(p.client) } : {},
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const err = new TextDecoder().decode(out.stderr).trim().split("\n")[0];
    throw new FloorError(`Kernel ${protocol} ping-pong failed: ${err}`);
  }
  const values: number[] = [];
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    if (line) values.push(Number(line));
  }
  if (values.length < min) {
    throw new FloorError(`Kernel ${protocol} ping-pong gave ${values.length} samples`);
  }
  return values;
}

async function readLine(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  timeoutMs: number,
): Promise<string> {
  const dec = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (!text.includes("\n")) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const chunk = await Promise.race([
      reader.read(),
      new Promise<never>((_, rej) => {
        timer = setTimeout(
          () => rej(new FloorError("Echo peer did not start")),
          Math.max(1, deadline - Date.now()),
        );
      }),
    ]).finally(() => clearTimeout(timer));
    if (chunk.done) throw new FloorError("Echo peer exited before printing its port");
    text += dec.decode(chunk.value);
  }
  return text.split("\n")[0].trim();
}

/** A held-open runtime echo: one round trip per call, until closed. */
export interface RuntimeEcho {
  /** Sends the payload and waits for it to come back. */
  roundTrip(): Promise<void>;
  /** Closes the socket and stops the echo peer. Idempotent. */
  close(): Promise<void>;
}

/** Starts the Deno echo peer in another process and connects to it. */
export async function openRuntimeEcho(
  protocol: FloorKind,
  sizeBytes: number,
): Promise<RuntimeEcho> {
  if (protocol === "udp" && typeof Deno.listenDatagram !== "function") {
    throw new FloorError("Runtime UDP floor needs --unstable-net");
  }
  const script = new URL("./_echo_peer.ts", import.meta.url).pathname;
  const [peerCmd, peerArgs] = onServerCpu(await placement(), Deno.execPath(), [
    "run",
    "-A",
    "--unstable-net",
    PEER_V8_FLAGS_ARG,
    script,
    protocol,
  ]);
  const child = new Deno.Command(peerCmd, {
    args: peerArgs,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.getReader();
  let closeSocket = () => {};
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    closeSocket();
    reader.releaseLock();
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await child.status;
    await child.stdout.cancel().catch(() => {});
    await child.stdin.close().catch(() => {});
  };
  try {
    const port = Number(await readLine(reader, 20_000));
    const payload = new Uint8Array(sizeBytes).fill(120);
    const buf = new Uint8Array(Math.max(65536, sizeBytes));
    if (protocol === "tcp") {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      conn.setNoDelay(true);
      closeSocket = () => conn.close();
      return {
        async roundTrip() {
          let off = 0;
          while (off < sizeBytes) off += await conn.write(payload.subarray(off));
          let got = 0;
          while (got < sizeBytes) {
            const n = await conn.read(buf);
            if (n === null) throw new FloorError("Echo peer closed the connection");
            got += n;
          }
        },
        close,
      };
    }
    const sock = Deno.listenDatagram({ hostname: "127.0.0.1", port: 0, transport: "udp" });
    const peer: Deno.NetAddr = { transport: "udp", hostname: "127.0.0.1", port };
    closeSocket = () => sock.close();
    return {
      async roundTrip() {
        await sock.send(payload, peer);
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          sock.receive(buf),
          new Promise<never>((_, rej) => {
            timer = setTimeout(() => rej(new FloorError("UDP echo lost")), 2000);
          }),
        ]).finally(() => clearTimeout(timer));
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Runtime floor: Deno sockets in this process against a Deno echo peer in another. */
export async function measureRuntimeFloor(
  protocol: FloorKind,
  sizeBytes: number,
  plan: SamplingPlan,
  clock: Clock = defaultClock,
): Promise<FloorRow> {
  const echo = await openRuntimeEcho(protocol, sizeBytes);
  try {
    const { sampleOperation } = await import("./sampler.ts");
    const r = await sampleOperation(() => echo.roundTrip(), plan, 1, { clock });
    return {
      source: "runtime",
      protocol,
      sizeBytes,
      estimate: estimate(r.samples.samples),
      samples: r.samples,
    };
  } finally {
    await echo.close();
  }
}

/**
 * `peers` (the lab measuring itself): `h2load`, the native load engine and
 * our SBI client, each against `nghttpd`, against our h2 server module hosted
 * by a plain C loop (bench/native/h2host.c: the module's cost without Deno)
 * and against our own h2c server (on the run's stack), at 1 and 64 streams
 * in flight on one connection and at 8 connections × 64 streams (the SBI
 * client: one connection only). h2load against the three servers says how
 * our server and its module compare with a C server; the engine and the
 * client against h2load on the same server say how much our load side adds.
 *
 * HTTP/3 has no h2load here: its reference server is `gtlsserver` (ngtcp2's
 * own example server, on the same ngtcp2, nghttp3 and GnuTLS). The native h3
 * engine and our SBI h3 client load gtlsserver, sbilab's h3 module hosted by
 * a plain C loop (bench/native/h3host.c) and our h3 server, at 1 and 64
 * streams on one connection.
 *
 * Every (loader, server, shape) is an arm of interleaved rounds: every server
 * runs for the whole scenario, and each round gives each arm one block in a
 * new random order, so a slow second of the machine lands on every arm alike.
 * A block's one sample is the time per completed request in it (1 ÷
 * throughput). The loaders that open a connection per block (h2load, the
 * native engine) get a short untimed warm-up in each block, so connection
 * set-up is not counted. The scenario's ratios (our server ÷ the C server in
 * req/s, our client ÷ h2load in time per request…) are paired over rounds,
 * with intervals that resample whole rounds. Servers sit on the peer CPU, the
 * loaders on the measuring one.
 */
import type { EngineName, ResultRow, RoundsRecord } from "../record/schema.ts";
import type { SampleSet } from "../stats/recorder.ts";
import { collectionsNote, type RoundArm, roundCollector, runRounds } from "../measure/rounds.ts";
import { createRng } from "../stats/stats.ts";
import { assessNoise } from "../record/rounds_summary.ts";
import { PEER_RATIOS } from "../record/peer_ratios.ts";
import { findTool, freePort, waitForPort } from "../../lib/host.ts";
import { ensureBuilt } from "../../lib/native_build.ts";
import { pooled, series, withRoundInterval } from "./rtt_rounds.ts";
import { makeRow, payloadPath, type ScenarioContext } from "./context.ts";
import {
  engineBlock,
  h2loadBlock,
  type PeerTarget,
  sbiBlock,
  type Shape,
  warmGet,
} from "./peer_loaders.ts";
import { spawnPeer, startGtlsserver, startH3Host, stop } from "./peer_servers.ts";
import { peerId, type PeerPair, peerRatios, shapeText } from "./peer_pairs.ts";

/** Connections × streams compared with h2load (the SBI client: one connection only). */
export const PEER_SHAPES = [
  { connections: 1, streams: 1 },
  { connections: 1, streams: 64 },
  { connections: 8, streams: 64 },
];

/** The h2 peer rows of sbilab's h2 server module hosted by a C loop instead of Deno. */
export const H2_HOST = "sbilab h2c module in a C host";

/** The h3 peer row of sbilab's h3 module hosted by a C loop instead of Deno. */
export const H3_HOST = "sbilab h3 module in a C host";

/** Streams in flight on the one connection of the h3 peer rows. */
export const H3_PEER_STREAMS = [1, 64];

/**
 * The peers scenario's measured rounds and block per arm and round (ms): the
 * given ones, else 8 × 300 ms (quick: 3 × 150 ms).
 */
export function peerSchedule(
  quick: boolean,
  rounds?: number,
  blockMs?: number,
): { rounds: number; blockMs: number } {
  return { rounds: rounds ?? (quick ? 3 : 8), blockMs: blockMs ?? (quick ? 150 : 300) };
}
/** Rounds run first and discarded (JIT, windows, caches of every arm). */
const PEER_WARMUP_ROUNDS = 1;
/** One arm: who loads which server with which shape. */
interface PeerArm extends RoundArm {
  loader: string;
  engine: EngineName;
  server: string;
  shape: Shape;
}

/** Adds to `arms` one loader's arm against `server` with `shape`. */
function armsOf(arms: PeerArm[], server: string, size: number, shape: Shape) {
  return (loader: string, engine: EngineName, block: PeerArm["block"]) =>
    arms.push({ id: peerId(loader, server, size, shape), loader, engine, server, shape, block });
}

/** The peers scenario (see the module comment). */
export async function peersScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  const missing = [];
  if (!findTool("nghttpd")) missing.push("nghttpd (apt-get install nghttp2-server)");
  if (!findTool("h2load")) missing.push("h2load (apt-get install nghttp2-client)");
  if (missing.length) {
    ctx.notes.push(`The peers comparison was skipped: missing ${missing.join(" and ")}.`);
    return [];
  }
  const size = ctx.sizes[0];
  // Built before any server starts, so a failed build leaves nothing running.
  const hostExe = await ensureBuilt("h2host", { quiet: true });
  const arms: PeerArm[] = [];
  const pairs: PeerPair[] = [];
  const cleanup: (() => Promise<void>)[] = [];
  try {
    const docs = await Deno.makeTempDir({ prefix: "sbilab-peers-" });
    cleanup.push(() => Deno.remove(docs, { recursive: true }).catch(() => {}));
    await Deno.writeFile(`${docs}/payload`, new Uint8Array(size).fill(0x61));
    const port = freePort();
    const nghttpd = await spawnPeer("nghttpd", ["--no-tls", "-d", docs, String(port)]);
    cleanup.push(() => stop(nghttpd));
    const hostPort = freePort();
    const host = await spawnPeer(hostExe, [String(hostPort), String(size)]);
    cleanup.push(() => stop(host));
    await waitForPort(port, 10_000);
    await waitForPort(hostPort, 10_000);
    await h2Arms(
      ctx,
      size,
      [
        { name: "nghttpd", port, path: "/payload" },
        { name: H2_HOST, port: hostPort, path: "/payload" },
      ],
      arms,
      pairs,
    );
    await h3Arms(ctx, size, arms, pairs, cleanup);
    return await runPeerRounds(ctx, size, arms, pairs);
  } finally {
    for (const close of cleanup.reverse()) await close();
  }
}

/** The h2 arms and pairs: h2load, the native engine and the SBI client against each target. */
async function h2Arms(
  ctx: ScenarioContext,
  size: number,
  refs: PeerTarget[],
  arms: PeerArm[],
  pairs: PeerPair[],
): Promise<void> {
  const targets = [...refs];
  const ours = ctx.endpoints.urls.h2c;
  const oursName = `sbilab h2c (${ctx.config.stack ?? "native"} stack)`;
  if (ours) {
    targets.push({ name: oursName, port: Number(new URL(ours).port), path: payloadPath(size) });
  }
  for (const target of targets) {
    const client = await ctx.openClient("h2c", { origin: `http://127.0.0.1:${target.port}` });
    const sbi = await warmGet(client, target, size);
    for (const shape of PEER_SHAPES) {
      const arm = armsOf(arms, target.name, size, shape);
      if (shape.connections === 1) arm("sbilab client", "sbi", sbiBlock(ctx, sbi, shape.streams));
      arm(
        "sbilab native engine",
        "native",
        engineBlock(ctx, `the native engine against ${target.name}`, {
          protocol: "h2",
          host: "127.0.0.1",
          port: target.port,
          headers: [
            [":method", "GET"],
            [":scheme", "http"],
            [":authority", `127.0.0.1:${target.port}`],
            [":path", target.path],
          ],
          connections: shape.connections,
          streams: shape.streams,
        }),
      );
      arm("h2load", "peer", h2loadBlock(target, shape));
    }
  }
  for (const shape of PEER_SHAPES) {
    const id = (loader: string, server: string) => peerId(loader, server, size, shape);
    const s = shapeText(shape);
    if (ours) {
      pairs.push({
        label: `${PEER_RATIOS.h2Server}, ${s}`,
        num: id("h2load", oursName),
        den: id("h2load", "nghttpd"),
        measure: "rate",
      });
    }
    pairs.push({
      label: `${PEER_RATIOS.h2Host}, ${s}`,
      num: id("h2load", H2_HOST),
      den: id("h2load", "nghttpd"),
      measure: "rate",
    });
    if (shape.connections === 1) {
      pairs.push({
        label: `${PEER_RATIOS.h2Client}, ${s}`,
        num: id("sbilab client", "nghttpd"),
        den: id("h2load", "nghttpd"),
        measure: "time",
      });
    }
    pairs.push({
      label: `${PEER_RATIOS.h2Engine}, ${s}`,
      num: id("sbilab native engine", "nghttpd"),
      den: id("h2load", "nghttpd"),
      measure: "rate",
    });
  }
}

/** The h3 arms and pairs (see the module comment); none without gtlsserver or our h3 server. */
async function h3Arms(
  ctx: ScenarioContext,
  size: number,
  arms: PeerArm[],
  pairs: PeerPair[],
  cleanup: (() => Promise<void>)[],
): Promise<void> {
  const ours = ctx.endpoints.urls.h3;
  if (!ours) return;
  if (!findTool("gtlsserver")) {
    ctx.notes.push(
      "The h3 peers were skipped: gtlsserver is missing (apt-get install ngtcp2-server).",
    );
    return;
  }
  const gtls = await startGtlsserver(size);
  cleanup.push(() => gtls.close());
  const host = await startH3Host(size);
  cleanup.push(() => host.close());
  const oursName = "sbilab h3";
  const targets = [
    { name: "gtlsserver", port: gtls.port, path: `/${size}`, insecure: true },
    { name: H3_HOST, port: host.port, path: `/${size}`, insecure: true },
    { name: oursName, port: Number(new URL(ours).port), path: payloadPath(size), insecure: false },
  ];
  const tls = ctx.endpoints.tls;
  const caPem = tls?.ca && typeof tls.ca === "object" && "path" in tls.ca
    ? await Deno.readFile(tls.ca.path)
    : undefined;
  for (const target of targets) {
    const origin = `https://127.0.0.1:${target.port}`;
    const client = await ctx.openClient(
      "h3",
      target.insecure ? { origin, tls: { insecure: true } } : { origin },
    );
    const sbi = await warmGet(client, target, size);
    for (const streams of H3_PEER_STREAMS) {
      const shape = { connections: 1, streams };
      const arm = armsOf(arms, target.name, size, shape);
      arm("sbilab h3 client", "sbi", sbiBlock(ctx, sbi, streams));
      arm(
        "sbilab native h3 engine",
        "native",
        engineBlock(ctx, `the native h3 engine against ${target.name}`, {
          protocol: "h3",
          host: "127.0.0.1",
          port: target.port,
          insecure: target.insecure,
          caPem: target.insecure ? undefined : caPem,
          serverName: target.insecure ? undefined : "localhost",
          headers: [
            [":method", "GET"],
            [":scheme", "https"],
            [":authority", `127.0.0.1:${target.port}`],
            [":path", target.path],
          ],
          connections: 1,
          streams,
        }),
      );
    }
  }
  for (const streams of H3_PEER_STREAMS) {
    const shape = { connections: 1, streams };
    const id = (loader: string, server: string) => peerId(loader, server, size, shape);
    const s = shapeText(shape);
    pairs.push({
      label: `${PEER_RATIOS.h3Server}, ${s}`,
      num: id("sbilab native h3 engine", oursName),
      den: id("sbilab native h3 engine", "gtlsserver"),
      measure: "rate",
    }, {
      label: `${PEER_RATIOS.h3Host}, ${s}`,
      num: id("sbilab native h3 engine", H3_HOST),
      den: id("sbilab native h3 engine", "gtlsserver"),
      measure: "rate",
    }, {
      label: `${PEER_RATIOS.h3Client}, ${s}`,
      num: id("sbilab h3 client", "gtlsserver"),
      den: id("sbilab native h3 engine", "gtlsserver"),
      measure: "time",
    });
  }
}

/** Runs the arms in interleaved rounds; returns their rows and reports the rounds and ratios. */
async function runPeerRounds(
  ctx: ScenarioContext,
  size: number,
  arms: PeerArm[],
  pairs: PeerPair[],
): Promise<ResultRow[]> {
  const { rounds, blockMs } = peerSchedule(
    ctx.config.quick,
    ctx.config.rounds,
    ctx.config.blockMs,
  );
  const seed = ctx.config.seed ?? 0;
  const collector = roundCollector(undefined, ctx.clock);
  const outcome = await runRounds(arms, {
    betweenRounds: collector.betweenRounds,
    rounds,
    blockMs,
    warmupRounds: PEER_WARMUP_ROUNDS,
    rng: createRng(seed),
    clock: ctx.clock,
    onProgress: ctx.onProgress,
    signal: ctx.signal,
  });
  const note = collectionsNote(collector.done);
  if (note) ctx.notes.push(note);
  const rows: ResultRow[] = [];
  // The noise line names an arm by its transport field: there, loader → server and shape.
  const named: ResultRow[] = [];
  for (const a of arms) {
    const arm = outcome.arms[a.id];
    if (arm.samples.flat().length < 2) continue;
    const row = withRoundInterval(peerRow(a, size, pooled(arm), arm.errors), arm);
    row.rounds = series(arm);
    row.requestsPerSecond = 1e9 / row.estimate.median;
    rows.push(row);
    named.push({ ...row, transport: `${a.loader} → ${a.server}, ${shapeText(a.shape)},` });
    ctx.onRow(row);
  }
  const ratios = peerRatios(rows, pairs, size);
  const record: RoundsRecord = {
    rounds: outcome.order.length,
    blockMs,
    warmupRounds: PEER_WARMUP_ROUNDS,
    seed,
    order: outcome.order,
    roundMs: outcome.roundMs,
    machine: [],
    ratios,
    noise: assessNoise({
      machine: [],
      rows: named,
      floors: [],
      ratios,
      cores: navigator.hardwareConcurrency,
    }),
  };
  ctx.onRounds?.(record);
  return rows;
}

function peerRow(arm: PeerArm, size: number, samples: SampleSet, errors: number): ResultRow {
  const { connections, streams } = arm.shape;
  return makeRow({
    id: arm.id,
    scenario: "peers",
    transport: arm.loader,
    engine: arm.engine,
    label: `GET ${size} B from ${arm.server}, ${
      connections === 1 ? "" : `${connections} connections × `
    }${streams} stream${streams > 1 ? "s" : ""} in flight (time per request)`,
    sizeBytes: size,
    concurrency: connections * streams,
    errors,
  }, samples);
}

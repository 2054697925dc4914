/**
 * Measures the native and the fetch h2 clients side by side (a report, not a
 * test): warm GET round trips of 256 B and 16 KiB against `lab serve` (h2c
 * and h2-TLS, in another process) and against nghttpd, requests/s at 1 and 64
 * in flight against nghttpd with h2load in the same run, client CPU per
 * request, and the FFI calls and socket operations per request.
 *
 * Usage: deno run -A --unstable-net scripts/dev/h2_client_probe.ts [seconds-per-row]
 */
import process from "node:process";
import { freePort, ROOT, waitForPort } from "../../transports/host.ts";
import { readListening } from "../../cli/listening.ts";
import type { SbiClient } from "../../transports/types.ts";
import { createFetchH2Client } from "../../transports/h2/client.ts";
import { createNativeH2Client } from "../../transports/h2/native_client.ts";
import { loadH2Library } from "../../transports/h2/loader.ts";
import { median } from "../../bench/stats.ts";

const SECONDS = Number(Deno.args[0] ?? 2);
const kinds = ["native", "fetch"] as const;

function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

async function make(kind: string, origin: string, ca?: string): Promise<SbiClient> {
  const options = { tls: ca ? { ca } : undefined, timeoutMs: 10_000 };
  return kind === "native"
    ? await createNativeH2Client(origin, options)
    : await createFetchH2Client(origin, options);
}

async function rtt(client: SbiClient, path: string) {
  const warmEnd = performance.now() + 500;
  while (performance.now() < warmEnd) await client.request({ path });
  const times: number[] = [];
  const cpu0 = cpuMicros();
  const end = performance.now() + SECONDS * 1000;
  while (performance.now() < end) {
    const t0 = performance.now();
    await client.request({ path });
    times.push((performance.now() - t0) * 1000);
  }
  const cpu = (cpuMicros() - cpu0) / times.length;
  return { median: median(times), n: times.length, cpu };
}

async function throughput(client: SbiClient, path: string, inflight: number): Promise<number> {
  const warmEnd = performance.now() + 300;
  await Promise.all(Array.from({ length: inflight }, async () => {
    while (performance.now() < warmEnd) await client.request({ path });
  }));
  let done = 0;
  const t0 = performance.now();
  const end = t0 + SECONDS * 1000;
  await Promise.all(Array.from({ length: inflight }, async () => {
    while (performance.now() < end) {
      await client.request({ path });
      done++;
    }
  }));
  return done / ((performance.now() - t0) / 1000);
}

async function h2load(url: string, m: number): Promise<number> {
  const n = m === 1 ? 30_000 : 300_000;
  const out = await new Deno.Command("h2load", {
    args: ["-n", String(n), "-c", "1", "-m", String(m), url],
    stdout: "piped",
    stderr: "null",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const r = /finished in [^,]+, ([\d.]+) req\/s/.exec(text);
  return r ? Number(r[1]) : NaN;
}

/** Counts FFI calls and socket reads/writes per request for the native client. */
async function callCounts(origin: string): Promise<Record<string, number>> {
  const lib = await loadH2Library();
  const sym = lib.symbols as unknown as Record<string, (...a: unknown[]) => unknown>;
  const counts: Record<string, number> = {};
  const saved: Record<string, (...a: unknown[]) => unknown> = {};
  for (const k of Object.keys(sym)) {
    saved[k] = sym[k];
    counts[k] = 0;
    sym[k] = (...a: unknown[]) => (counts[k]++, saved[k](...a));
  }
  const proto = Object.getPrototypeOf(
    await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(origin).port) }).then((
      c,
    ) => (c.close(), c)),
  );
  const read = proto.read, write = proto.write;
  counts.read = counts.write = 0;
  proto.read = function (this: unknown, b: Uint8Array) {
    counts.read++;
    return read.call(this, b);
  };
  proto.write = function (this: unknown, b: Uint8Array) {
    counts.write++;
    return write.call(this, b);
  };
  const client = await createNativeH2Client(origin);
  await client.request({ path: "/nbench/v1/payload?size=256" });
  for (const k of Object.keys(counts)) counts[k] = 0;
  const N = 1000;
  for (let i = 0; i < N; i++) await client.request({ path: "/nbench/v1/payload?size=256" });
  await client.close();
  for (const k of Object.keys(saved)) sym[k] = saved[k];
  proto.read = read;
  proto.write = write;
  const per: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts)) if (v) per[k] = v / N;
  return per;
}

const state = await Deno.makeTempDir({ prefix: "sbilab_h2probe_" });
const serve = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "-A",
    "--unstable-net",
    `${ROOT}/main.ts`,
    "serve",
    "--transports",
    "h2c,h2-tls",
    "--h2c-port",
    "0",
    "--tls-port",
    "0",
    "--state-dir",
    state,
  ],
  stdout: "piped",
  stderr: "null",
}).spawn();
const urls = await readListening(serve.stdout, ["h2c", "h2-tls"]) as Record<string, string>;
const ca = await Deno.readTextFile(`${state}/ca.pem`);

const docroot = await Deno.makeTempDir({ prefix: "sbilab_h2probe_www_" });
await Deno.writeFile(`${docroot}/256`, new Uint8Array(256).fill(120));
await Deno.writeFile(`${docroot}/16k`, new Uint8Array(16384).fill(120));
const nport = freePort();
const nghttpd = new Deno.Command("nghttpd", {
  args: ["-a", "127.0.0.1", "-d", docroot, "--no-tls", String(nport)],
  stdout: "null",
  stderr: "null",
}).spawn();
await waitForPort(nport);
const nurl = `http://127.0.0.1:${nport}`;

const rows: string[] = [];
try {
  const targets: [string, string, string, string | undefined][] = [
    ["lab serve h2c", urls.h2c, "/nbench/v1/payload?size=", undefined],
    [
      "lab serve h2-tls",
      urls["h2-tls"].replace("127.0.0.1", "localhost"),
      "/nbench/v1/payload?size=",
      ca,
    ],
    ["nghttpd h2c", nurl, "/", undefined],
  ];
  for (const [name, origin, prefix, tlsCa] of targets) {
    for (const size of ["256", "16k"]) {
      const path = prefix === "/" ? `/${size}` : `${prefix}${size === "16k" ? 16384 : 256}`;
      const res: Record<string, { median: number; n: number; cpu: number }> = {};
      for (const kind of kinds) {
        const c = await make(kind, origin, tlsCa);
        res[kind] = await rtt(c, path);
        await c.close();
      }
      rows.push(
        `| ${name} | ${size} | ${res.native.median.toFixed(1)} | ${res.fetch.median.toFixed(1)} | ${
          (res.fetch.median / res.native.median).toFixed(2)
        }× | ${res.native.cpu.toFixed(1)} | ${res.fetch.cpu.toFixed(1)} |`,
      );
      console.error(rows.at(-1));
    }
  }
  console.log(
    "| target | body | native median µs | fetch median µs | fetch/native | native CPU µs/req | fetch CPU µs/req |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const r of rows) console.log(r);

  console.log(
    "\n| in flight (nghttpd h2c, 256 B) | native req/s | fetch req/s | h2load req/s | native/h2load | fetch/h2load |",
  );
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const m of [1, 64]) {
    const r: Record<string, number> = {};
    for (const kind of kinds) {
      const c = await make(kind, nurl);
      r[kind] = await throughput(c, "/256", m);
      await c.close();
    }
    const h = await h2load(`${nurl}/256`, m);
    console.log(
      `| ${m} | ${r.native.toFixed(0)} | ${r.fetch.toFixed(0)} | ${h.toFixed(0)} | ${
        (r.native / h).toFixed(2)
      } | ${(r.fetch / h).toFixed(2)} |`,
    );
  }
  console.log(
    "\nnative client, per warm 256 B GET against lab serve h2c:",
    JSON.stringify(await callCounts(urls.h2c)),
  );
} finally {
  nghttpd.kill("SIGTERM");
  await nghttpd.status;
  serve.kill("SIGTERM");
  await serve.status;
  await Deno.remove(state, { recursive: true });
  await Deno.remove(docroot, { recursive: true });
}

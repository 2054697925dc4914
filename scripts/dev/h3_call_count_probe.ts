/**
 * Profiling report (not a test): counts, per warm GET on one h3 connection,
 * the sbh3 FFI calls (with the µs spent in the synchronous ones), Deno UDP
 * socket operations and timer calls made by the client and server together
 * (both run in this process), and the request's median round trip. It wraps
 * `Deno.dlopen`, `Deno.listenDatagram` and the timer functions before
 * importing the transport.
 *
 * Usage: deno run -A --unstable-net scripts/dev/h3_call_count_probe.ts [size=16384] [maxUdpPayload=1452]
 */
const counts: Record<string, number> = {};
const micros: Record<string, number> = {};
const bump = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);
const origDlopen = Deno.dlopen;
// deno-lint-ignore no-explicit-any
(Deno as any).dlopen = (path: string, syms: any) => {
  const lib = origDlopen(path, syms);
  // deno-lint-ignore no-explicit-any
  const wrapped: any = {};
  for (const [k, f] of Object.entries(lib.symbols)) {
    // deno-lint-ignore no-explicit-any
    wrapped[k] = (...a: any[]) => {
      bump("ffi " + k);
      const t0 = performance.now();
      // deno-lint-ignore no-explicit-any
      const r = (f as any)(...a);
      micros["ffi " + k] = (micros["ffi " + k] ?? 0) + (performance.now() - t0) * 1000;
      return r;
    };
  }
  return { symbols: wrapped, close: () => lib.close() };
};
const origListen = Deno.listenDatagram;
// deno-lint-ignore no-explicit-any
(Deno as any).listenDatagram = (o: any) => {
  const s = origListen(o);
  const r = s.receive.bind(s), sd = s.send.bind(s);
  // deno-lint-ignore no-explicit-any
  (s as any).receive = (b: any) => (bump("udp receive"), r(b));
  // deno-lint-ignore no-explicit-any
  (s as any).send = (b: any, a: any) => (bump("udp send"), sd(b, a));
  return s;
};
const st = globalThis.setTimeout, ct = globalThis.clearTimeout;
// deno-lint-ignore no-explicit-any
(globalThis as any).setTimeout = (f: any, ms: any) => (bump("setTimeout"), st(f, ms));
// deno-lint-ignore no-explicit-any
(globalThis as any).clearTimeout = (t: any) => (bump("clearTimeout"), ct(t));
const { createHandler } = await import("../../handler/mod.ts");
const { createDevPki } = await import("../../transports/pki.ts");
const { createH3Client, createH3Server } = await import("../../transports/h3/mod.ts");
const size = Number(Deno.args[0] ?? 16384), mtu = Number(Deno.args[1] ?? 1452), n = 1000;
const pki = await createDevPki();
const s = await createH3Server(createHandler(), {
  tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
  maxUdpPayload: mtu,
});
const c = await createH3Client(s.url, { tls: { ca: pki.caCertPem }, maxUdpPayload: mtu });
for (let i = 0; i < 200; i++) await c.request({ path: `/nbench/v1/payload?size=${size}` });
for (const k of Object.keys(counts)) delete counts[k];
for (const k of Object.keys(micros)) delete micros[k];
const rtt: number[] = [];
for (let i = 0; i < n; i++) {
  const t0 = performance.now();
  await c.request({ path: `/nbench/v1/payload?size=${size}` });
  rtt.push((performance.now() - t0) * 1000);
}
rtt.sort((a, b) => a - b);
const out = Object.entries(counts).sort().map(([k, v]) =>
  `${k}: ${(v / n).toFixed(2)}` + (micros[k] ? ` (${(micros[k] / n).toFixed(1)} µs)` : "")
);
console.log(
  `${size} B at ${mtu}-byte datagrams, median ${rtt[n >> 1].toFixed(1)} µs; per request:\n  ` +
    out.join("\n  "),
);
await c.close();
await s.close();

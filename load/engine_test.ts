import assert, { deepEqual as assertEquals } from "node:assert/strict";
import { createHandler, type HandlerOptions } from "../handler/mod.ts";
import type { SbiHandler, SbiResponse } from "../handler/types.ts";
import { createServer, type SbiServer, type TransportName } from "../transports/mod.ts";
import { testPki } from "../tests/support.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import type { H3SbiServer } from "../transports/h3/mod.ts";
import { type LoadPlan, type LoadTarget, loadTarget, runLoad } from "./mod.ts";
import { renderLoadSummary } from "./report.ts";

/** A server whose handler counts answers by status. */
async function countingServer(
  transport: TransportName,
  options: { handlerOptions?: HandlerOptions; wrap?: (h: SbiHandler) => SbiHandler } = {},
): Promise<{ server: SbiServer; counts: Map<number, number>; ca: Uint8Array }> {
  const pki = await testPki();
  const counts = new Map<number, number>();
  const inner = (options.wrap ?? ((h) => h))(createHandler(options.handlerOptions));
  const handler: SbiHandler = async (req) => {
    const res = await inner(req);
    counts.set(res.status, (counts.get(res.status) ?? 0) + 1);
    return res;
  };
  const server = await createServer(transport, handler, {
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
  });
  return { server, counts, ca: new TextEncoder().encode(pki.caCertPem) };
}

async function target(server: SbiServer, path: string, h3 = false): Promise<LoadTarget> {
  const base = new URL(server.url);
  return await loadTarget(`${base.protocol}//127.0.0.1:${base.port}${path}`, { h3 });
}

function statusOf(counts: Map<number, number>): Record<string, number> {
  return Object.fromEntries([...counts].map(([k, v]) => [String(k), v]));
}

/** Every third request answered 503 instead (deterministic per server). */
function everyThird503(h: SbiHandler): SbiHandler {
  let n = 0;
  return (req) => {
    if (++n % 3 === 0) {
      return Promise.resolve({ status: 503, headers: {}, body: new Uint8Array(0) } as SbiResponse);
    }
    return h(req);
  };
}

const PAYLOAD = "/nbench/v1/payload?size=256";

Deno.test("h2 engine: sent = completed + errors and status counts match the server's", async () => {
  const { server, counts } = await countingServer("h2c", { wrap: everyThird503 });
  try {
    const r = await runLoad({
      ...await target(server, PAYLOAD),
      requests: 900,
      connections: 3,
      streams: 8,
    });
    assertEquals(r.sent, 900);
    assertEquals(r.sent, r.completed + r.errors);
    assertEquals(r.errors, 0);
    assertEquals(r.status, statusOf(counts));
    assertEquals(r.status, { "200": 600, "503": 300 });
    assertEquals(r.partial, false);
    assertEquals(r.latency.count, 900);
    assertEquals(r.bodyBytesIn, 600 * 256);
    assertEquals(r.connections.length, 3);
    for (const c of r.connections) assert(c.connectNs! > 0 && c.firstByteNs! >= c.connectNs!);
  } finally {
    await server.close();
  }
});

Deno.test({
  name: "h2c, h2-TLS and h3 engines give the same status counts against the same handler",
  ignore: H3_SKIP !== null,
  fn: async () => {
    const got: Record<string, number>[] = [];
    for (const transport of ["h2c", "h2-tls", "h3"] as const) {
      const { server, counts, ca } = await countingServer(transport, { wrap: everyThird503 });
      try {
        const r = await runLoad({
          ...await target(server, PAYLOAD, transport === "h3"),
          caPem: ca,
          requests: 600,
          connections: 2,
          streams: 16,
        });
        assertEquals(r.sent, r.completed + r.errors, transport);
        assertEquals(r.status, statusOf(counts), transport);
        got.push(r.status);
      } finally {
        await server.close();
      }
    }
    assertEquals(got[0], got[1]);
    assertEquals(got[1], got[2]);
    assertEquals(got[2], { "200": 400, "503": 200 });
  },
});

Deno.test({
  name:
    "h3 engine, one request at a time: each answer's ACK leaves with the next request (one datagram to the server per request), and the connection ends with a close",
  ignore: H3_SKIP !== null,
  fn: async () => {
    const { server, ca } = await countingServer("h3");
    try {
      const requests = 2000;
      const r = await runLoad({
        ...await target(server, PAYLOAD, true),
        caPem: ca,
        requests,
        connections: 1,
        streams: 1,
      });
      assertEquals(r.completed, requests);
      const h3 = server as H3SbiServer;
      const got = h3.datagramStats()!.datagramsReceived / requests;
      // The ACK sent as soon as the answer was read often went alone: 1.6 per request. On a busy
      // machine the engine's timers (a probe while the server is slow to answer) add some: 1.24.
      assert.ok(got >= 1 && got < 1.4, `the server received ${got} datagrams per request`);
      // The engine ends its connection with CONNECTION_CLOSE: the server lets it go at once,
      // not after its idle timeout (nor keeps the last answers' streams for want of their ACK).
      for (let i = 0; i < 50 && h3.connectionCount > 0; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      assertEquals(h3.connectionCount, 0, "the server still holds the engine's connection");
    } finally {
      await server.close();
    }
  },
});

Deno.test("h2 engine's latencies add up to the time that passed and none is under an injected 20 ms delay", async () => {
  // Judged against the test's own clock rather than a fixed bound: on a loaded machine the server
  // wakes late by milliseconds, and then both the engine's figures and the wall clock grow.
  const { server } = await countingServer("h2c", { handlerOptions: { delayMs: 20 } });
  try {
    const plan = { ...await target(server, PAYLOAD), requests: 60 };
    const t0 = performance.now();
    const r = await runLoad(plan);
    const wallMs = performance.now() - t0;
    assertEquals(r.completed, 60);
    const min = r.latency.min / 1e6;
    assert(min >= 20, `fastest ${min} ms is under the server's 20 ms`);
    // One stream, one request at a time: the 60 latencies fill the engine's measured span but for
    // its own turn-arounds (microseconds), and that span fits in the time the test saw pass.
    const sumMs = (r.latency.mean * r.completed) / 1e6;
    const spanMs = r.measuredNs / 1e6;
    assert(spanMs <= wallMs, `measured span ${spanMs} ms, more than the ${wallMs} ms that passed`);
    assert(sumMs <= spanMs * 1.01, `latencies sum to ${sumMs} ms, more than the ${spanMs} ms span`);
    assert(sumMs >= spanMs * 0.95, `latencies sum to ${sumMs} ms of the ${spanMs} ms span`);
  } finally {
    await server.close();
  }
});

Deno.test("h2 engine holds an open-loop rate the server can take", async () => {
  const { server } = await countingServer("h2c");
  try {
    const r = await runLoad({
      ...await target(server, PAYLOAD),
      durationMs: 2000,
      rate: 400,
      streams: 16,
    });
    // 800 intended sends in 2 s: every one sent, finished about when the schedule ends
    assert(Math.abs(r.sent - 800) <= 1, `sent ${r.sent}`);
    assertEquals(r.errors, 0);
    const seconds = r.measuredNs / 1e9;
    assert(seconds > 1.95 && seconds < 2.2, `took ${seconds} s`);
    // sends kept to the schedule: the typical request left on time (corrected ≈ uncorrected)
    const lag = (r.latency.p50 - r.latencyUncorrected.p50) / 1e6;
    assert(lag >= 0 && lag < 2, `median send lag ${lag} ms`);
  } finally {
    await server.close();
  }
});

Deno.test("open-loop latency shows a 500 ms server stall that the uncorrected figure hides", async () => {
  // The 100th request stalls the whole server for 500 ms.
  let n = 0;
  let stallUntil = 0;
  const stall = (h: SbiHandler): SbiHandler => async (req) => {
    if (++n === 100) stallUntil = Date.now() + 500;
    const wait = stallUntil - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    return h(req);
  };
  const { server } = await countingServer("h2c", { wrap: stall });
  try {
    const r = await runLoad({
      ...await target(server, PAYLOAD),
      requests: 600,
      rate: 200,
      streams: 1,
    });
    assertEquals(r.completed, 600);
    // ~100 requests were due during the stall: corrected p99 is near the stall
    assert(r.latency.p99 > 300e6, `corrected p99 ${r.latency.p99 / 1e6} ms`);
    assert(r.latency.max > 450e6, `corrected max ${r.latency.max / 1e6} ms`);
    // only one request was in flight during it: the uncorrected p99 does not see it
    assert(
      r.latencyUncorrected.p99 < 100e6,
      `uncorrected p99 ${r.latencyUncorrected.p99 / 1e6} ms`,
    );
    assert(r.latencyUncorrected.max > 450e6);
  } finally {
    await server.close();
  }
});

const localPlan = (port: number): LoadPlan => ({
  protocol: "h2",
  host: "127.0.0.1",
  port,
  headers: [[":method", "GET"], [":scheme", "http"], [":authority", "x"], [":path", "/"]],
  requests: 10,
});

Deno.test("h2 engine: a refused connection gives a partial result and one error line", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  const r = await runLoad({ ...localPlan(port), connections: 2 });
  assertEquals(r.partial, true);
  assertEquals(r.sent, 0);
  assertEquals(r.connectionsFailed, 2);
  assertEquals(r.connections[0].error, "connect");
  assertEquals(r.errors, 2, "each refused connection is an error");
  assertEquals(r.errorsByKind.connect, 2);
  assert(r.error && /refused/i.test(r.error) && !r.error.includes("\n"), r.error);
});

Deno.test("h2 engine over TLS: an untrusted certificate is a TLS failure with a partial result", async () => {
  const { server } = await countingServer("h2-tls");
  try {
    const r = await runLoad({ ...await target(server, PAYLOAD), requests: 10, connections: 2 });
    assertEquals(r.partial, true);
    assertEquals(r.sent, 0);
    assertEquals(r.connections.map((c) => c.error), ["tls", "tls"]);
    assert(r.error && /TLS/.test(r.error) && !r.error.includes("\n"), r.error);
  } finally {
    await server.close();
  }
});

Deno.test({
  name: "h3 engine: an untrusted certificate is a TLS failure with a partial result",
  ignore: H3_SKIP !== null,
  fn: async () => {
    const { server } = await countingServer("h3");
    try {
      const r = await runLoad({ ...await target(server, PAYLOAD, true), requests: 10 });
      assertEquals(r.partial, true);
      assertEquals(r.sent, 0);
      assertEquals(r.connections[0].error, "tls");
      assert(r.error && !r.error.includes("\n"), r.error);
    } finally {
      await server.close();
    }
  },
});

Deno.test("h2 engine: a server that closes mid-run gives a partial result", async () => {
  const { server } = await countingServer("h2c");
  const upstream = Number(new URL(server.url).port);
  // a relay that cuts every connection 300 ms after it opened
  const relay = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const cut = (async () => {
    for await (const down of relay) {
      const up = await Deno.connect({ hostname: "127.0.0.1", port: upstream });
      const t = setTimeout(() => {
        try {
          down.close();
        } catch { /* closed */ }
        try {
          up.close();
        } catch { /* closed */ }
      }, 300);
      down.readable.pipeTo(up.writable).catch(() => {});
      up.readable.pipeTo(down.writable).catch(() => {}).finally(() => clearTimeout(t));
    }
  })();
  try {
    const port = (relay.addr as Deno.NetAddr).port;
    const r = await runLoad({
      ...await loadTarget(`http://127.0.0.1:${port}${PAYLOAD}`),
      durationMs: 3000,
      streams: 4,
    });
    assertEquals(r.partial, true);
    assert(r.completed > 0);
    assertEquals(r.sent, r.completed + r.errors);
    assert(r.measuredNs < 2e9, "the run ended when its only connection did");
    assert(r.error && /closed/.test(r.error) && !r.error.includes("\n"), r.error);
  } finally {
    relay.close();
    await cut.catch(() => {});
    await server.close();
  }
});

Deno.test("an open loop by duration behind a stalled server stops sending at the duration, its requests in flight timing out in the drain", async () => {
  const { server } = await countingServer("h2c", { handlerOptions: { delayMs: 1500 } });
  try {
    const t0 = performance.now();
    const r = await runLoad({
      ...await target(server, PAYLOAD),
      durationMs: 300,
      rate: 200,
      streams: 2,
      timeoutMs: 400,
    });
    const took = performance.now() - t0;
    // the plan ran its whole duration: its requests timed out (errors), nothing was cut short
    assertEquals(r.partial, false);
    assertEquals(r.stopped, false);
    assertEquals(r.completed, 0);
    assertEquals(r.sent, r.errors);
    assert(r.errorsByKind.timeout >= 2, JSON.stringify(r.errorsByKind));
    assert(r.sent < 60, `sent ${r.sent} of 60 intended`);
    assert(took < 1500, `took ${took} ms`);
  } finally {
    await server.close();
  }
});

Deno.test("requestsPerConnection 1 gives every connection exactly one request", async () => {
  const { server, counts } = await countingServer("h2c");
  try {
    const r = await runLoad({
      ...await target(server, PAYLOAD),
      connections: 12,
      requests: 12,
      requestsPerConnection: 1,
    });
    assertEquals(r.completed, 12);
    assertEquals(r.connections.map((c) => c.requests), new Array(12).fill(1));
    assertEquals(statusOf(counts), { "200": 12 });
    // a plan that asks for more than the connections may send ends short, marked partial
    const short = await runLoad({
      ...await target(server, PAYLOAD),
      connections: 2,
      requests: 5,
      requestsPerConnection: 2,
    });
    assertEquals(short.sent, 4);
    assertEquals(short.partial, true);
  } finally {
    await server.close();
  }
});

Deno.test("requests that time out count in the latency summary at their timeout, and the summary says how many", async () => {
  // Every fourth request stalls past the 300 ms timeout; the rest answer at once.
  let n = 0;
  const stallEveryFourth = (h: SbiHandler): SbiHandler => (req) =>
    ++n % 4 === 0 ? new Promise((r) => setTimeout(() => r(h(req)), 1000)) : h(req);
  const { server } = await countingServer("h2c", { wrap: stallEveryFourth });
  try {
    const r = await runLoad({
      ...await target(server, PAYLOAD),
      requests: 40,
      connections: 1,
      streams: 4,
      timeoutMs: 300,
    });
    const timeouts = r.errorsByKind.timeout;
    assert(timeouts >= 1, JSON.stringify(r.errorsByKind));
    assertEquals(r.timedOut, timeouts);
    assertEquals(r.latency.count, r.completed + timeouts);
    assert(r.latency.max >= 300e6 * 0.99, `max ${r.latency.max} ns`);
    const text = renderLoadSummary(r, { connections: 1, streams: 4, threads: 1 });
    assert.match(
      text,
      new RegExp(`\\(${timeouts} timed-out requests? counted at 300(\\.0)? ms, their timeout\\)`),
    );
  } finally {
    await server.close();
  }
});

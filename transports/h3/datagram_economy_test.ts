/**
 * Datagrams per warm request, one request in flight: the client's ACK of a
 * response leaves with its next request, and the server credits closed
 * request streams in batches rather than with a MAX_STREAMS frame (and the
 * client's ACK of it) per request. Before either, a warm request cost the
 * client about 1.7 datagrams and the server about 1.25; the bounds leave
 * room for the ACKs a busy machine's timing still sends on their own.
 *
 * Requests submitted in one turn on a connection in use leave in one flush,
 * even when the connection's timers fell due while the event loop was busy:
 * running them before each request (an I/O pass per request, which sent it
 * alone) turned a saturated client's batches into one datagram per request.
 */
import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import { createDevPki, type DevPki } from "../pki.ts";
import { createNativeH3Client, createNativeH3Server } from "./mod.ts";
import { H3_SKIP } from "./_test_util.ts";

const ignore = H3_SKIP !== null;
const pki: DevPki = ignore ? ({} as DevPki) : await createDevPki();

Deno.test({
  name: "a warm h3 request costs about one datagram each way, not an ACK datagram besides",
  ignore,
  fn: async () => {
    const server = await createNativeH3Server(createHandler(), {
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    });
    const client = await createNativeH3Client(server.url, {
      tls: { ca: pki.caCertPem },
      timeoutMs: 10_000,
    });
    try {
      const get = async () => {
        const res = await client.request({ path: "/nbench/v1/payload?size=256" });
        assert.equal(res.status, 200);
        assert.equal(res.body.length, 256);
      };
      for (let i = 0; i < 100; i++) await get();
      const c0 = client.datagramStats()!, s0 = server.datagramStats()!;
      const n = 1000;
      for (let i = 0; i < n; i++) await get();
      const c1 = client.datagramStats()!, s1 = server.datagramStats()!;
      const clientSent = (c1.datagramsSent - c0.datagramsSent) / n;
      const serverSent = (s1.datagramsSent - s0.datagramsSent) / n;
      assert.ok(clientSent >= 1 && clientSent < 1.45, `client sent ${clientSent} per request`);
      assert.ok(serverSent >= 1 && serverSent < 1.15, `server sent ${serverSent} per request`);
    } finally {
      await client.close();
      await server.close();
    }
  },
});

/** Lets queued microtasks (a turn's flush among them) run, without a turn of the event loop. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

Deno.test({
  name:
    "requests submitted together on an h3 connection in use leave together, even when its timers fell due unseen",
  ignore,
  fn: async () => {
    const server = await createNativeH3Server(createHandler(), {
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    });
    const client = await createNativeH3Client(server.url, {
      tls: { ca: pki.caCertPem },
      timeoutMs: 10_000,
    });
    const get = () => client.request({ path: "/nbench/v1/payload?size=256" });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await get()).status, 200);
      // One request in flight, sent (its flush runs in microtasks), and the connection's loss
      // timer armed; then a busy spell in which the event loop runs no timer at all.
      const first = get();
      await microtasks();
      const until = performance.now() + 200;
      while (performance.now() < until) {
        // busy: the timer falls due unseen
      }
      const before = client.datagramStats()!.datagramsSent;
      const burst = Array.from({ length: 16 }, get);
      await microtasks();
      const sent = client.datagramStats()!.datagramsSent - before;
      for (const res of await Promise.all([first, ...burst])) assert.equal(res.status, 200);
      // one flush for the 16 (a probe or an ACK may ride besides); a pass per request sent 16+
      assert.ok(sent >= 1 && sent <= 3, `16 requests submitted in one turn took ${sent} datagrams`);
    } finally {
      await client.close();
      await server.close();
    }
  },
});

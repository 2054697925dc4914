/**
 * Interop with independent HTTP/2 peers: nghttp and curl against our servers,
 * our client against nghttpd, h2load against our servers (including the
 * Nagle regression: 16 KiB over TLS must not take the 40 ms delayed-ACK path).
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import { createClient } from "../transports/mod.ts";
import {
  directCall,
  freePort,
  needsTool,
  runTool,
  startPair,
  testPki,
  waitForPort,
} from "./support.ts";
import { H2_NATIVE_SKIP } from "../transports/h2/_test_util.ts";

const PAYLOAD = "/nbench/v1/payload?size=16384";

async function expectedPayload(size: number): Promise<Uint8Array> {
  return (await directCall(createHandler(), "GET", `/nbench/v1/payload?size=${size}`)).body;
}

const NATIVE_SKIP = H2_NATIVE_SKIP !== null;

for (
  const [transport, stack] of [
    ["h2c", "deno"],
    ["h2-tls", "deno"],
    ["h2c", "native"],
    ["h2-tls", "native"],
  ] as const
) {
  Deno.test({
    name: `nghttp fetches the handler's exact bytes from our ${transport} server (${stack} stack)`,
    ignore: needsTool("nghttp", "nghttp2-client") || (stack === "native" && NATIVE_SKIP),
    fn: async () => {
      const pair = await startPair(transport, { stack });
      try {
        const r = await runTool("nghttp", [`${pair.server.url}${PAYLOAD}`]);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(r.stdout, await expectedPayload(16384));
      } finally {
        await pair.close();
      }
    },
  });
}

for (const stack of ["deno", "native"] as const) {
  Deno.test({
    name:
      `curl --http2-prior-knowledge gets the exact bytes and an HTTP/2 response from h2c (${stack} stack)`,
    ignore: needsTool("curl", "curl") || (stack === "native" && NATIVE_SKIP),
    fn: async () => {
      const pair = await startPair("h2c", { stack });
      try {
        const r = await runTool("curl", [
          "-sS",
          "--http2-prior-knowledge",
          "-o",
          "-",
          "-w",
          "\n%{http_version} %{http_code}",
          `${pair.server.url}/nbench/v1/payload?size=256`,
        ]);
        assert.equal(r.code, 0, r.stderr);
        const text = new TextDecoder().decode(r.stdout);
        const [body, trailer] = [
          text.slice(0, text.lastIndexOf("\n")),
          text.slice(text.lastIndexOf("\n") + 1),
        ];
        assert.equal(trailer, "2 200");
        assert.equal(body, new TextDecoder().decode(await expectedPayload(256)));
      } finally {
        await pair.close();
      }
    },
  });
}

for (const stack of ["deno", "native"] as const) {
  Deno.test({
    name: `curl verifies our h2-tls server against the dev CA and negotiates h2 (${stack} stack)`,
    ignore: needsTool("curl", "curl") || (stack === "native" && NATIVE_SKIP),
    fn: async () => {
      const pki = await testPki();
      const dir = await Deno.makeTempDir();
      const pair = await startPair("h2-tls", { stack });
      try {
        await Deno.writeTextFile(`${dir}/ca.pem`, pki.caCertPem);
        const url = pair.server.url.replace("127.0.0.1", "localhost");
        const r = await runTool("curl", [
          "-sS",
          "--http2",
          "--cacert",
          `${dir}/ca.pem`,
          "-o",
          "/dev/null",
          "-w",
          "%{http_version} %{http_code}",
          `${url}/nbench/v1/payload?size=256`,
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(new TextDecoder().decode(r.stdout), "2 200");
      } finally {
        await pair.close();
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}

async function withNghttpd(tls: boolean, fn: (origin: string, file: Uint8Array) => Promise<void>) {
  const pki = await testPki();
  const dir = await Deno.makeTempDir();
  const file = crypto.getRandomValues(new Uint8Array(65536));
  await Deno.writeFile(`${dir}/blob.bin`, file);
  await Deno.writeTextFile(`${dir}/key.pem`, pki.serverKeyPem);
  await Deno.writeTextFile(`${dir}/cert.pem`, pki.serverCertPem);
  const port = freePort();
  const args = [
    "-a",
    "127.0.0.1",
    "-d",
    dir,
    ...(tls ? [String(port), `${dir}/key.pem`, `${dir}/cert.pem`] : ["--no-tls", String(port)]),
  ];
  const child = new Deno.Command("nghttpd", { args, stdout: "null", stderr: "null" }).spawn();
  try {
    await waitForPort(port);
    await fn(`${tls ? "https" : "http"}://127.0.0.1:${port}`, file);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await Deno.remove(dir, { recursive: true });
  }
}

for (const tls of [false, true]) {
  Deno.test({
    name: `our ${tls ? "h2-tls" : "h2c"} client fetches exact bytes from nghttpd`,
    ignore: needsTool("nghttpd", "nghttp2-server"),
    fn: () =>
      withNghttpd(tls, async (origin, file) => {
        const pki = await testPki();
        const client = await createClient(tls ? "h2-tls" : "h2c", origin, {
          tls: { ca: pki.caCertPem },
        });
        try {
          const r = await client.request({ path: "/blob.bin" });
          assert.equal(r.status, 200);
          assert.deepEqual(r.body, file);
          const missing = await client.request({ path: "/nope" });
          assert.equal(missing.status, 404);
        } finally {
          await client.close();
        }
      }),
  });
}

function h2loadSummary(text: string) {
  const ok = /(\d+) succeeded/.exec(text);
  const twoxx = /status codes: (\d+) 2xx/.exec(text);
  const mean = /time for request:\s+\S+\s+\S+\s+(\S+)/.exec(text);
  return {
    succeeded: ok ? Number(ok[1]) : -1,
    twoxx: twoxx ? Number(twoxx[1]) : -1,
    mean: mean?.[1],
  };
}

function toMs(v: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v);
  if (!m) throw new Error(`cannot read h2load time ${v}`);
  return Number(m[1]) * (m[2] === "us" ? 1e-3 : m[2] === "ms" ? 1 : 1e3);
}

for (const transport of ["h2c", "h2-tls"] as const) {
  Deno.test({
    name:
      `h2load completes 200 requests of 16 KiB against our ${transport} server without the 40 ms stall`,
    ignore: needsTool("h2load", "nghttp2-client"),
    fn: async () => {
      const pair = await startPair(transport);
      try {
        const r = await runTool("h2load", [
          "-n",
          "200",
          "-c",
          "1",
          "-m",
          "1",
          `${pair.server.url}${PAYLOAD}`,
        ], 30_000);
        const text = new TextDecoder().decode(r.stdout);
        const s = h2loadSummary(text);
        assert.equal(s.succeeded, 200, text);
        assert.equal(s.twoxx, 200, text);
        assert.ok(s.mean, text);
        // A delayed-ACK stall costs 40 ms per request; healthy is well under 10 ms.
        assert.ok(toMs(s.mean!) < 10, `mean request time ${s.mean} suggests a Nagle stall`);
      } finally {
        await pair.close();
      }
    },
  });
}

for (
  const [transport, streams] of [["h2c", 1], ["h2c", 64], ["h2-tls", 1], ["h2-tls", 64]] as const
) {
  Deno.test({
    name:
      `h2load completes 2000 requests at ${streams} concurrent streams against the native ${transport} server`,
    ignore: needsTool("h2load", "nghttp2-client") || NATIVE_SKIP,
    fn: async () => {
      const pair = await startPair(transport, { stack: "native" });
      try {
        const r = await runTool("h2load", [
          "-n",
          "2000",
          "-c",
          "2",
          "-m",
          String(streams),
          `${pair.server.url}/nbench/v1/payload?size=256`,
        ], 60_000);
        const text = new TextDecoder().decode(r.stdout);
        const s = h2loadSummary(text);
        assert.equal(s.succeeded, 2000, text);
        assert.equal(s.twoxx, 2000, text);
        // the server is still healthy for our own client afterwards
        const after = await pair.client.request({ path: PAYLOAD });
        assert.deepEqual(after.body, await expectedPayload(16384));
      } finally {
        await pair.close();
      }
    },
  });
}

for (const stack of ["deno", "native"] as const) {
  Deno.test({
    name:
      `our h2-tls client and server keep 16 KiB round trips clear of the Nagle stall (median of 200 < 10 ms, ${stack} stack)`,
    ignore: stack === "native" && NATIVE_SKIP,
    fn: async () => {
      const pair = await startPair("h2-tls", { stack });
      try {
        const times: number[] = [];
        for (let i = 0; i < 200; i++) {
          const t0 = performance.now();
          const r = await pair.client.request({ path: PAYLOAD });
          times.push(performance.now() - t0);
          assert.equal(r.body.length, 16384);
        }
        // also uploads: a POST of 16 KiB is headers + data written separately
        for (let i = 0; i < 200; i++) {
          const t0 = performance.now();
          const r = await pair.client.request({
            method: "POST",
            path: "/nbench/v1/echo",
            body: new Uint8Array(16384),
            headers: { "content-type": "application/octet-stream" },
          });
          times.push(performance.now() - t0);
          assert.equal(r.body.length, 16384);
        }
        times.sort((a, b) => a - b);
        const median = times[times.length >> 1];
        assert.ok(median < 10, `median ${median.toFixed(2)} ms suggests a Nagle stall`);
      } finally {
        await pair.close();
      }
    },
  });
}

for (const stack of ["native", "deno"] as const) {
  for (const transport of ["h2c", "h2-tls"] as const) {
    Deno.test({
      name:
        `TCP_NODELAY is set on the ${transport} listener, the accepted socket and the client socket (${stack} stack)`,
      ignore: stack === "native" && NATIVE_SKIP,
      fn: async () => {
        const { tcpSocketsNoDelay } = await import("../transports/native/nodelay.ts");
        const pair = await startPair(transport, { stack });
        try {
          await pair.client.request({ path: "/nbench/v1/payload?size=10" });
          const listener = tcpSocketsNoDelay({ listenPort: pair.server.port });
          const accepted = tcpSocketsNoDelay({ localPort: pair.server.port });
          const client = tcpSocketsNoDelay({ remotePort: pair.server.port });
          assert.equal(listener.length, 1);
          assert.ok(accepted.length >= 1 && client.length >= 1);
          for (
            const [role, list] of [["listener", listener], ["accepted", accepted], [
              "client",
              client,
            ]] as const
          ) {
            for (const s of list) assert.equal(s.noDelay, true, `${role} fd ${s.fd}`);
          }
        } finally {
          await pair.close();
        }
      },
    });
  }
}

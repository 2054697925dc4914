import assert from "node:assert/strict";
import {
  labCommand,
  labServeArgs,
  labServeCommand,
  LabServeError,
  startLabServe,
} from "./lab_serve.ts";

Deno.test("lab serve's command line names each option once, ports only for the transports served", () => {
  assert.deepEqual(labServeArgs({ transports: ["h2c"] }), [
    "serve",
    "--transports",
    "h2c",
    "--host",
    "127.0.0.1",
    "--h2c-port",
    "0",
  ]);
  assert.deepEqual(
    labServeArgs({
      transports: ["h3"],
      stack: "native",
      host: "169.254.1.2",
      tlsPort: 4433,
      cert: "c.pem",
      key: "k.pem",
      delayMs: 3,
      limits: { handshakeTimeoutMs: 20_000, maxBody: 1024 },
      extraArgs: ["--h3-retry"],
    }),
    [
      "serve",
      "--transports",
      "h3",
      "--stack",
      "native",
      "--host",
      "169.254.1.2",
      "--tls-port",
      "4433",
      "--cert",
      "c.pem",
      "--key",
      "k.pem",
      "--delay-ms",
      "3",
      "--handshake-timeout",
      "20000",
      "--max-body",
      "1024",
      "--h3-retry",
    ],
  );
  assert.throws(() => labServeArgs({ transports: [] }), RangeError);
});

Deno.test("lab serve's h3 reads through Deno only when asked, and only when h3 is served", () => {
  const h3 = labServeArgs({ transports: ["h3"], h3ExactEcn: false });
  assert.equal(h3.at(-1), "--no-h3-exact-ecn");
  assert.ok(!labServeArgs({ transports: ["h3"] }).includes("--no-h3-exact-ecn"));
  assert.ok(!labServeArgs({ transports: ["h3"], h3ExactEcn: true }).includes("--no-h3-exact-ecn"));
  assert.ok(
    !labServeArgs({ transports: ["h2c"], h3ExactEcn: false }).includes("--no-h3-exact-ecn"),
  );
});

Deno.test("lab serve is launched pinned with taskset and under ulimit -n when asked", () => {
  const lab = labCommand();
  const serve = labServeArgs({ transports: ["h2c"] });
  assert.deepEqual(labServeCommand({ transports: ["h2c"] }), [...lab, ...serve]);
  assert.deepEqual(labServeCommand({ transports: ["h2c"] }, { cpu: 1, nofile: 256 }), [
    "taskset",
    "-c",
    "1",
    "sh",
    "-c",
    'ulimit -n 256 && exec "$@"',
    "sh",
    ...lab,
    ...serve,
  ]);
});

Deno.test("startLabServe resolves with the URL lab serve printed and stops it with SIGTERM", async () => {
  const srv = await startLabServe({ transports: ["h2c"] });
  try {
    assert.match(srv.urls.h2c!, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(srv.running());
  } finally {
    const status = await srv.stop();
    assert.equal(status.code, 0, srv.stderr());
    assert.equal(srv.running(), false);
  }
});

Deno.test("startLabServe rejects with lab serve's last stderr line when it exits before listening", async () => {
  const busy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    await assert.rejects(
      () => startLabServe({ transports: ["h2c"], h2cPort: busy.addr.port }),
      (e) =>
        e instanceof LabServeError &&
        /ended before reporting h2c listening: error: .*in use/.test(e.message),
    );
  } finally {
    busy.close();
  }
});

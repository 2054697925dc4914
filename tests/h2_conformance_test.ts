/**
 * HTTP/2 frame handling measured against nghttpd. Each case (RFC 9113
 * numbering) sends raw frames over a socket and reads the server's answer:
 * the first GOAWAY or RST_STREAM it sends, with its error code, within a
 * bound. The native server, on h2c and over TLS, must answer every case as
 * nghttpd (the same nghttp2) answers it, and that answer must be one the RFC
 * allows. The deno stack's server (Deno.serve) runs the same table; its
 * answers are recorded in docs/h2_conformance.md and checked here so that the
 * page stays true.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import { createServer, type StackName } from "../transports/mod.ts";
import {
  FLAG,
  FRAME,
  frame,
  H2_CODE,
  H2_NATIVE_SKIP,
  hpackLiteral,
  RawH2Client,
} from "../transports/h2/_test_util.ts";
import { freePort, needsTool, testPki, waitForPort } from "./support.ts";

/** How long a server has to answer a case; nghttpd answers within milliseconds. */
const BOUND_MS = 1500;

const CODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(H2_CODE).map(([name, code]) => [code, name]),
);

/** What a server did after a case's frames: an error frame with its code, a close, or nothing. */
type Answer = string;

interface Target {
  port: number;
  tls: boolean;
  close(): Promise<void>;
}

/** A request header block for GET / on localhost. */
function request(tls: boolean): Uint8Array {
  return new Uint8Array([
    ...hpackLiteral(":method", "GET"),
    tls ? 0x87 : 0x86, // :scheme https / http (static table 7 / 6)
    ...hpackLiteral(":path", "/"),
    ...hpackLiteral(":authority", "localhost"),
  ]);
}

function headers(stream: number, block: Uint8Array, endStream: boolean): Uint8Array {
  return frame(FRAME.HEADERS, FLAG.END_HEADERS | (endStream ? FLAG.END_STREAM : 0), stream, block);
}

function data(stream: number, endStream = true): Uint8Array {
  return frame(FRAME.DATA, endStream ? FLAG.END_STREAM : 0, stream, new TextEncoder().encode("x"));
}

/** A PRIORITY frame: `stream` depends on `dependsOn`, weight 16, not exclusive. */
function priority(stream: number, dependsOn: number): Uint8Array {
  const p = new Uint8Array(5);
  new DataView(p.buffer).setUint32(0, dependsOn & 0x7fffffff);
  p[4] = 15;
  return frame(FRAME.PRIORITY, 0, stream, p);
}

function rst(stream: number): Uint8Array {
  const p = new Uint8Array(4);
  new DataView(p.buffer).setUint32(0, H2_CODE.CANCEL);
  return frame(FRAME.RST_STREAM, 0, stream, p);
}

/** Resolves once the server ended stream `id` (HEADERS or DATA with END_STREAM). */
function responseEnded(c: RawH2Client, id: number): Promise<void> {
  return c.until(
    () =>
      c.frames.some((f) =>
        f.streamId === id && (f.type === FRAME.HEADERS || f.type === FRAME.DATA) &&
        (f.flags & FLAG.END_STREAM) !== 0
      ),
    BOUND_MS * 2,
  );
}

interface Case {
  /** RFC 9113 section and what the client does. */
  name: string;
  /** Sends the case's frames after the connection preface and SETTINGS. */
  send(c: RawH2Client, block: Uint8Array): Promise<unknown>;
  /** What RFC 9113 prescribes; nghttpd's answer is the reference the test compares with. */
  rfc: string;
  /** nghttpd answers nothing here either, so "nothing" is the answer to match. */
  silentReference?: boolean;
}

const STREAM_CLOSED = "stream or connection error STREAM_CLOSED";
const PROTOCOL_ERROR = "connection error PROTOCOL_ERROR";

/** The cases, in RFC order. */
const CASES: Case[] = [
  {
    name: "§5.1 closed: DATA after the client sent RST_STREAM",
    send: (c, b) => c.write(new Uint8Array([...headers(1, b, false), ...rst(1), ...data(1)])),
    rfc: STREAM_CLOSED,
  },
  {
    name: "§5.1 closed: HEADERS after the client sent RST_STREAM",
    send: (c, b) =>
      c.write(new Uint8Array([...headers(1, b, false), ...rst(1), ...headers(1, b, true)])),
    rfc: STREAM_CLOSED,
  },
  {
    name: "§5.1 closed: DATA on a stream the response closed",
    send: async (c, b) => {
      await c.write(headers(1, b, true));
      await responseEnded(c, 1);
      await c.write(data(1));
    },
    rfc: STREAM_CLOSED,
  },
  {
    name: "§5.1 closed: HEADERS on a stream the response closed",
    send: async (c, b) => {
      await c.write(headers(1, b, true));
      await responseEnded(c, 1);
      await c.write(headers(1, b, true));
    },
    rfc: STREAM_CLOSED,
  },
  {
    name: "§5.1 half-closed (remote): DATA after the client ended the stream",
    send: (c, b) => c.write(new Uint8Array([...headers(1, b, true), ...data(1)])),
    rfc: STREAM_CLOSED,
  },
  {
    name: "§5.1.1 HEADERS on a stream id smaller than a previous one",
    send: (c, b) => c.write(new Uint8Array([...headers(5, b, true), ...headers(3, b, true)])),
    rfc: PROTOCOL_ERROR,
    // nghttp2 ignores a HEADERS frame on a lower id it never saw, by design: it cannot tell
    // a skipped id from a stream it forgot (lib/nghttp2_session.c explains why)
    silentReference: true,
  },
  {
    name: "§5.3.1 HEADERS whose priority depends on its own stream",
    send: (c, b) => {
      const p = new Uint8Array(5 + b.length);
      new DataView(p.buffer).setUint32(0, 1);
      p[4] = 15;
      p.set(b, 5);
      return c.write(
        frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM | FLAG.PRIORITY, 1, p),
      );
    },
    rfc: "stream error PROTOCOL_ERROR",
  },
  {
    name: "§5.3.1 PRIORITY that depends on its own stream",
    send: (c) => c.write(priority(1, 1)),
    rfc: "stream error PROTOCOL_ERROR",
  },
  {
    name: "§6.3 PRIORITY on stream 0",
    send: (c) => c.write(priority(0, 1)),
    rfc: PROTOCOL_ERROR,
  },
];

/** The server's answer to `cs`: its first GOAWAY or RST_STREAM, a close, or nothing within the bound. */
async function answer(target: Target, cs: Case, ca: string): Promise<Answer> {
  const c = await RawH2Client.open(target.port, { tlsCa: target.tls ? ca : undefined });
  try {
    await c.until(() => c.frames.some((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK)));
    const error = () =>
      c.frames.find((f) =>
        f.type === FRAME.GOAWAY ||
        (f.type === FRAME.RST_STREAM && new DataView(f.payload.buffer).getUint32(0) !== 0)
      );
    await cs.send(c, request(target.tls));
    try {
      await c.until(() => error() !== undefined, BOUND_MS);
    } catch {
      return "nothing";
    }
    const f = error();
    if (!f) return "closed";
    const v = new DataView(f.payload.buffer);
    const code = f.type === FRAME.GOAWAY ? v.getUint32(4) : v.getUint32(0);
    return `${f.type === FRAME.GOAWAY ? "GOAWAY" : "RST_STREAM"} ${CODE_NAMES[code] ?? code}`;
  } finally {
    await c.close();
  }
}

/** nghttpd serving an empty folder, on h2c or TLS with the dev PKI's server certificate. */
async function nghttpd(tls: boolean): Promise<Target> {
  const pki = await testPki();
  const dir = await Deno.makeTempDir({ prefix: "sbilab_conformance_" });
  await Deno.writeTextFile(`${dir}/key.pem`, pki.serverKeyPem);
  await Deno.writeTextFile(`${dir}/cert.pem`, pki.serverCertPem);
  const port = freePort();
  const args = ["-a", "127.0.0.1", "-d", dir];
  args.push(
    ...(tls ? [String(port), `${dir}/key.pem`, `${dir}/cert.pem`] : ["--no-tls", String(port)]),
  );
  const child = new Deno.Command("nghttpd", { args, stdout: "null", stderr: "null" }).spawn();
  await waitForPort(port);
  return {
    port,
    tls,
    close: async () => {
      child.kill("SIGTERM");
      await child.status;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** `lab serve`'s server of `stack` around the default handler. */
async function ours(stack: StackName, tls: boolean): Promise<Target> {
  const pki = await testPki();
  const server = await createServer(tls ? "h2-tls" : "h2c", createHandler(), {
    stack,
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    onError: () => {},
  });
  return { port: Number(new URL(server.url).port), tls, close: () => server.close() };
}

async function answers(target: Promise<Target>): Promise<Answer[]> {
  const t = await target;
  const ca = (await testPki()).caCertPem;
  try {
    const out: Answer[] = [];
    for (const cs of CASES) out.push(await answer(t, cs, ca));
    return out;
  } finally {
    await t.close();
  }
}

/** Deno.serve's answers where they differ from nghttpd's, as docs/h2_conformance.md states them. */
const DENO_SERVE_DIFFERS: Record<string, Answer> = {
  "§5.1 closed: DATA after the client sent RST_STREAM": "RST_STREAM STREAM_CLOSED",
  "§5.1 closed: HEADERS after the client sent RST_STREAM": "GOAWAY PROTOCOL_ERROR",
  "§5.1 closed: DATA on a stream the response closed": "RST_STREAM STREAM_CLOSED",
  "§5.1 closed: HEADERS on a stream the response closed": "GOAWAY PROTOCOL_ERROR",
  "§5.1 half-closed (remote): DATA after the client ended the stream": "GOAWAY PROTOCOL_ERROR",
  "§5.1.1 HEADERS on a stream id smaller than a previous one": "GOAWAY PROTOCOL_ERROR",
  "§5.3.1 HEADERS whose priority depends on its own stream": "RST_STREAM PROTOCOL_ERROR",
  "§5.3.1 PRIORITY that depends on its own stream": "RST_STREAM PROTOCOL_ERROR",
};

const noNghttpd = needsTool("nghttpd", "nghttp2-server");

for (const tls of [false, true]) {
  const transport = tls ? "h2-tls" : "h2c";
  Deno.test({
    name: `native ${transport} server answers each frame-level conformance case as nghttpd does`,
    ignore: noNghttpd || H2_NATIVE_SKIP !== null,
    fn: async () => {
      const reference = await answers(nghttpd(tls));
      const got = await answers(ours("native", tls));
      // every case is a violation: a silent reference would make the comparison worthless
      CASES.forEach((cs, i) => {
        if (!cs.silentReference) assert.notEqual(reference[i], "nothing", `nghttpd: ${cs.name}`);
      });
      assert.deepEqual(
        CASES.map((cs, i) => `${cs.name}: ${got[i]}`),
        CASES.map((cs, i) => `${cs.name}: ${reference[i]}`),
      );
    },
  });

  Deno.test({
    name: `Deno.serve ${transport} answers the conformance cases as documented`,
    ignore: noNghttpd,
    fn: async () => {
      const reference = await answers(nghttpd(tls));
      const got = await answers(ours("deno", tls));
      assert.deepEqual(
        CASES.map((cs, i) => `${cs.name}: ${got[i]}`),
        CASES.map((cs, i) => `${cs.name}: ${DENO_SERVE_DIFFERS[cs.name] ?? reference[i]}`),
      );
    },
  });
}

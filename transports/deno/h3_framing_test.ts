import assert from "node:assert/strict";
import { WIRE_EVENT } from "../native/wire.ts";
import { H3Framing } from "./h3_framing.ts";
import { loadDh3Library } from "./h3_loader.ts";

const { symbols } = await loadDh3Library();

/**
 * A client and a server layer joined by memory, as QUIC would join them; the
 * client's bytes reach the server in pieces of at most `piece` bytes.
 */
function pair(
  maxBodyBytes = 1 << 20,
  options: { piece?: number; clientMaxFieldSectionBytes?: number } = {},
) {
  const client = new H3Framing(symbols, false, {
    maxBodyBytes,
    maxFieldSectionBytes: options.clientMaxFieldSectionBytes,
  });
  const server = new H3Framing(symbols, true, { maxBodyBytes });
  const piece = options.piece ?? Infinity;
  server.setMaxStreams(100);
  client.bind(2, 6, 10);
  server.bind(3, 7, 11);
  const pump = () => {
    for (let moved = true; moved;) {
      moved = false;
      for (const c of client.drain()) {
        for (let o = 0; o < c.bytes.length || (o === 0 && c.fin); o += piece) {
          const end = Math.min(o + piece, c.bytes.length);
          server.read(c.streamId, c.bytes.subarray(o, end), c.fin && end === c.bytes.length);
        }
        moved = true;
      }
      for (const c of server.drain()) {
        client.read(c.streamId, c.bytes, c.fin);
        moved = true;
      }
    }
  };
  return { client, server, pump };
}

const REQUEST: [string, string][] = [
  [":method", "POST"],
  [":scheme", "https"],
  [":authority", "x"],
  [":path", "/nbench/v1/echo"],
  ["content-type", "application/json"],
];

Deno.test("sbdh3 carries a 16 KiB POST and its answer between a client and a server layer", () => {
  const { client, server, pump } = pair();
  const body = new Uint8Array(16384).map((_, i) => i % 251);
  client.request(0, REQUEST, body);
  pump();
  const [req] = server.poll();
  assert.equal(req.type, WIRE_EVENT.MESSAGE);
  assert.equal(req.streamId, 0);
  assert.deepEqual(req.headers.slice(0, 4), REQUEST.slice(0, 4));
  assert.deepEqual(req.body, body);
  server.respond(0, [[":status", "200"], ["content-type", "application/json"]], req.body);
  pump();
  const [res] = client.poll();
  assert.equal(res.type, WIRE_EVENT.MESSAGE);
  assert.deepEqual(res.headers, [[":status", "200"], ["content-type", "application/json"]]);
  assert.deepEqual(res.body, body);
  client.close();
  server.close();
});

Deno.test("sbdh3 reports a request body over the limit as TOO_LARGE with its headers", () => {
  const { client, server, pump } = pair(1000);
  client.request(0, REQUEST, new Uint8Array(5000));
  pump();
  const events = server.poll();
  assert.equal(events.length, 1);
  assert.equal(events[0].type, WIRE_EVENT.TOO_LARGE);
  assert.equal(events[0].code, 413, "the status to answer, as every module reports it");
  assert.equal(events[0].body.length, 0);
  assert.deepEqual(events[0].headers[3], [":path", "/nbench/v1/echo"]);
  client.close();
  server.close();
});

Deno.test("sbdh3 refuses bad calls with H3FramingError and frees twice safely", () => {
  const { client, server } = pair();
  assert.throws(() => server.request(0, REQUEST, new Uint8Array()), { name: "H3FramingError" });
  assert.throws(() => server.respond(4, [[":status", "200"]], new Uint8Array()), {
    name: "H3FramingError",
  });
  // a control stream whose first frame is DATA, not SETTINGS: H3_MISSING_SETTINGS (0x10a)
  assert.throws(() => client.read(3, new Uint8Array([0x00, 0x00, 0x00]), false), {
    name: "H3FramingError",
    h3Code: 0x10a,
  });
  client.close();
  client.close();
  server.close();
  assert.throws(() => server.poll(), /closed/);
});

Deno.test("sbdh3 gives up a request whose header section passes its cap: a RESET with H3_EXCESSIVE_LOAD, the rest of the stream read quietly, the next request served", () => {
  // Carried in 1000-byte pieces, as QUIC hands a large header block over.
  const { client, server, pump } = pair(1 << 20, {
    piece: 1000,
    clientMaxFieldSectionBytes: 1 << 20,
  });
  client.request(0, [...REQUEST, ["x-big", "b".repeat(20000)]], new Uint8Array());
  pump();
  const events = server.poll();
  assert.deepEqual(events.map((e) => [e.type, e.streamId, e.code]), [[WIRE_EVENT.RESET, 0, 0x107]]);
  server.closeStream(0, 0x107);
  client.request(4, REQUEST, new Uint8Array(10));
  pump();
  const [next] = server.poll();
  assert.equal(next.type, WIRE_EVENT.MESSAGE);
  assert.equal(next.streamId, 4);
  client.close();
  server.close();
});

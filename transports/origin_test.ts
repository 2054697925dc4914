import assert from "node:assert/strict";
import { parseOrigin } from "./origin.ts";

Deno.test("parseOrigin accepts http and https and keeps host and port", () => {
  const u = parseOrigin("https://[::1]:7778");
  assert.equal(u.hostname, "[::1]");
  assert.equal(u.port, "7778");
  assert.equal(parseOrigin("http://127.0.0.1:7777").protocol, "http:");
});

Deno.test("parseOrigin rejects malformed URLs and other schemes in one line", () => {
  assert.throws(() => parseOrigin("not a url"), {
    name: "TypeError",
    message: "Invalid URL: not a url",
  });
  assert.throws(() => parseOrigin("ftp://x/"), {
    name: "TypeError",
    message: "Unsupported scheme ftp: (use http:// or https://)",
  });
  assert.throws(() => parseOrigin("http://x/", ["https:"]), {
    name: "TypeError",
    message: "Unsupported scheme http: (use https://)",
  });
});

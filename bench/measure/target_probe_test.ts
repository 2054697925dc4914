import assert from "node:assert/strict";
import { altSvcH3Origin, probeTargets } from "./target_probe.ts";
import type { SbiClient, TransportName } from "../../transports/types.ts";

Deno.test("Alt-Svc's h3 entry gives h3's origin: a port alone keeps the host, a host:port replaces both", () => {
  const base = "https://nrf.example:8443";
  assert.equal(altSvcH3Origin('h3=":9443"; ma=86400', base), "https://nrf.example:9443");
  assert.equal(altSvcH3Origin('h2=":1", h3="alt.example:9443"', base), "https://alt.example:9443");
  assert.equal(altSvcH3Origin('h3-29=":9443"', base), undefined, "a draft version is not h3");
  assert.equal(altSvcH3Origin('h3=":0"', base), undefined);
  assert.equal(altSvcH3Origin(undefined, base), undefined);
});

function fakeClient(transport: TransportName, answer: () => Record<string, string>): SbiClient {
  return {
    transport,
    request: () => Promise.resolve({ status: 200, headers: answer(), body: new Uint8Array() }),
    close: () => Promise.resolve(),
  };
}

Deno.test("probing a target keeps what answers, names what failed and why, and follows Alt-Svc for h3", async () => {
  const live = new Set(["h2-tls https://t:1", "h3 https://t:2"]);
  const tried: string[] = [];
  const open = (t: TransportName, origin: string) => {
    tried.push(`${t} ${origin}`);
    if (!live.has(`${t} ${origin}`)) {
      return Promise.resolve({
        ...fakeClient(t, () => ({})),
        request: () => Promise.reject(new Error("nothing listens at the server's UDP port")),
      });
    }
    return Promise.resolve(fakeClient(t, () => ({ "alt-svc": 'h3=":2"' })));
  };
  const urls = { "h2-tls": "https://t:1", h3: "https://t:1" };
  const found = await probeTargets(urls, ["h3", "h2-tls"], { open, altSvc: true });
  assert.deepEqual(found.reachable, ["h3", "h2-tls"], "the caller's order is kept");
  assert.equal(found.urls.h3, "https://t:2");
  assert.equal(found.altSvc, "https://t:2");
  assert.deepEqual(found.failed, []);
  assert.deepEqual(tried, ["h2-tls https://t:1", "h3 https://t:1", "h3 https://t:2"]);

  const without = await probeTargets(urls, ["h2-tls", "h3"], { open, altSvc: false });
  assert.deepEqual(without.reachable, ["h2-tls"]);
  assert.deepEqual(without.failed, [{
    transport: "h3",
    origin: "https://t:1",
    reason: "nothing listens at the server's UDP port",
  }]);
});

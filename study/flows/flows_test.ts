import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import type { SbiHandler } from "../../handler/types.ts";
import type { ClientResponse, TransportName } from "../../transports/types.ts";
import { createClient, createServer } from "../../transports/mod.ts";
import { testPki, testTransports } from "../../tests/support.ts";
import { counterIds, directPool } from "./_test_util.ts";
import {
  HANDOVER,
  JOURNEY,
  NF_REGISTER,
  PDU_SESSION,
  SERVICE_REQUEST,
  WARM_GET,
} from "./definitions.ts";
import type { FlowDefinition, FlowStep } from "./definitions.ts";
import { type ConnectionPool, DiscoveryCache, runFlow, runStep, ueVars } from "./runner.ts";

const NFS = [
  ["AUSF", "nausf-auth"],
  ["UDM", "nudm-sdm"],
  ["PCF", "npcf-am-policy-control"],
  ["SMF", "nsmf-pdusession"],
  ["AMF", "namf-comm"],
] as const;

/** Registers one profile per NF type and returns the NF variables the flows need. */
async function registerNfs(pool: ConnectionPool, ids: () => string) {
  const vars: Record<string, string> = {};
  for (const [nfType, serviceName] of NFS) {
    const nfInstanceId = ids();
    await runStep(NF_REGISTER, { nfInstanceId, nfType, serviceName }, { pool }, nfType);
    vars[`${nfType.toLowerCase()}InstanceId`] = nfInstanceId;
  }
  return vars;
}

interface Recorded {
  step: string;
  status: number;
  contentType?: string;
  location?: string;
  body: Uint8Array;
}

/** Runs registration, PDU session and service request for two UEs; records every answer. */
async function journeyOver(pool: ConnectionPool) {
  const record: Recorded[] = [];
  const onResponse = (step: FlowStep, r: ClientResponse) =>
    record.push({
      step: step.name,
      status: r.status,
      contentType: r.headers["content-type"],
      location: r.headers["location"],
      body: r.body,
    });
  const nf = await registerNfs(pool, counterIds(0xf));
  const discovery = new DiscoveryCache();
  const outcomes = [];
  for (let ue = 0; ue < 2; ue++) {
    const vars = { ...nf, ...ueVars(ue, 1000) };
    for (const flow of [...JOURNEY, WARM_GET]) {
      outcomes.push(await runFlow(flow, vars, { pool, discovery, onResponse }));
    }
  }
  return { record, outcomes };
}

Deno.test("the UE journey runs every step against the handler, discovering once per validity period", async () => {
  const handler = createHandler({ newId: counterIds() });
  const { record, outcomes } = await journeyOver(directPool(handler));
  for (const o of outcomes) assert.equal(o.ok, true, `${o.flow}: ${o.error}`);
  const steps = (f: FlowDefinition) => f.steps.filter((s) => !s.discover).length;
  const discoveries = record.filter((r) => r.step.startsWith("nrf.discover")).length;
  // Two UEs: the first discovers AUSF, UDM, PCF, SMF (AMF) and UDM, PCF (SMF); the second none.
  assert.equal(discoveries, 6);
  assert.equal(
    record.length,
    discoveries + 2 * [...JOURNEY, WARM_GET].reduce((n, f) => n + steps(f), 0),
  );
  const create = record.find((r) => r.step === "smf.create-sm-context")!;
  assert.equal(create.status, 201);
  assert.match(
    create.location!,
    /^\/nsmf-pdusession\/v1\/sm-contexts\/00000000-0000-4000-8000-[0-9a-f]{12}$/,
  );
  const activate = record.find((r) => r.step === "smf.update-activate")!;
  assert.match(activate.contentType!, /^multipart\/related; boundary=/);
});

Deno.test("a flow whose step fails is reported failed with that step and its cause", async () => {
  const handler = createHandler({ newId: counterIds() });
  const pool = directPool(handler);
  const nf = await registerNfs(pool, counterIds(0xf));
  // No registration first: the UDM refuses the SMF's sm-data get.
  const o = await runFlow(PDU_SESSION, { ...nf, ...ueVars(7) }, { pool });
  assert.equal(o.ok, false);
  assert.equal(o.failedStep, "udm.sdm-sm-data");
  assert.match(o.error!, /answered 404 \(USER_NOT_FOUND\)/);
  assert.deepEqual(o.steps.map((s) => s.step), [
    "nrf.discover-smf",
    "smf.create-sm-context",
    "nrf.discover-udm",
    "udm.sdm-sm-data",
  ]);
  // A handover for an SM context that is not active yet (created, no N1N2 transfer): out of order.
  const vars = { ...nf, ...ueVars(9) };
  const createOnly = { ...PDU_SESSION, steps: PDU_SESSION.steps.slice(0, 2) };
  assert.equal((await runFlow(createOnly, vars, { pool })).ok, true);
  const h = await runFlow(HANDOVER, vars, { pool });
  assert.equal(h.failedStep, "smf.update-ho-required");
  assert.match(h.error!, /400 \(UNSPECIFIED_MSG_FAILURE\)/);
  // A service request for an SM context the SMF never made: 404 CONTEXT_NOT_FOUND.
  const s = await runFlow(SERVICE_REQUEST, { ...nf, ...ueVars(8), smContextRef: "nope" }, {
    pool,
  });
  assert.equal(s.failedStep, "smf.update-deactivate");
  assert.match(s.error!, /404 \(CONTEXT_NOT_FOUND\)/);
});

Deno.test("a request that throws is retried once and counted, then the flow fails at that step", async () => {
  let calls = 0;
  const pool: ConnectionPool = {
    client: () =>
      Promise.resolve({
        transport: "h2c",
        request: () => {
          calls++;
          return Promise.reject(new Error("connection reset"));
        },
        close: () => Promise.resolve(),
      }),
  };
  const o = await runFlow(WARM_GET, ueVars(1), { pool, retries: 1 });
  assert.equal(calls, 2);
  assert.equal(o.ok, false);
  assert.equal(o.retries, 1);
  assert.equal(o.failedStep, "nbench.get");
  assert.match(o.error!, /connection reset/);
});

/** A pool over one transport: one connection per NF pair, as NFs hold them. */
async function transportPool(transport: TransportName, handler: SbiHandler) {
  const pki = await testPki();
  const server = await createServer(transport, handler, {
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
  });
  const clients = new Map<string, Awaited<ReturnType<typeof createClient>>>();
  const pool: ConnectionPool = {
    async client(from, to) {
      const key = `${from}/${to}`;
      let c = clients.get(key);
      if (!c) {
        c = await createClient(transport, server.url, { tls: { ca: pki.caCertPem }, nfType: from });
        clients.set(key, c);
      }
      return c;
    },
  };
  return {
    pool,
    connections: () => clients.size,
    async close() {
      await Promise.allSettled([...clients.values()].map((c) => c.close()));
      await server.close();
    },
  };
}

Deno.test("every flow step answers with identical bytes directly and over every transport", async () => {
  const direct = await journeyOver(directPool(createHandler({ newId: counterIds() })));
  for (const transport of await testTransports()) {
    const t = await transportPool(transport, createHandler({ newId: counterIds() }));
    try {
      const over = await journeyOver(t.pool);
      for (const o of over.outcomes) assert.equal(o.ok, true, `${transport} ${o.flow}: ${o.error}`);
      assert.equal(over.record.length, direct.record.length, transport);
      over.record.forEach((r, i) => {
        assert.deepEqual(r, direct.record[i], `${transport} step ${i} ${r.step}`);
      });
      // One connection per NF pair (registrations count as each NF's NRF connection).
      assert.ok(t.connections() >= 9 && t.connections() <= 14, `${t.connections()} connections`);
    } finally {
      await t.close();
    }
  }
});

import assert from "node:assert/strict";
import { findTool, runLab } from "./support.ts";
import { jobManifests, recordsFromLogs } from "../cli/k8s.ts";
import { RECORD_BEGIN, RECORD_END } from "../cli/load.ts";
import { UsageError } from "../cli/args.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

/** Our own check of the fields a cluster needs before it runs the Job (what a schema would refuse). */
function checkManifests(docs: Obj[], shards: number): void {
  assert.equal(docs.length, 2);
  const [cm, job] = docs;
  assert.equal(cm.apiVersion, "v1");
  assert.equal(cm.kind, "ConfigMap");
  assert.match(cm.metadata.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  for (const v of Object.values(cm.data)) assert.equal(typeof v, "string");
  assert.equal(job.apiVersion, "batch/v1");
  assert.equal(job.kind, "Job");
  assert.match(job.metadata.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  assert.equal(job.spec.completionMode, "Indexed");
  assert.equal(job.spec.completions, shards);
  assert.equal(job.spec.parallelism, shards);
  const pod = job.spec.template.spec;
  assert.ok(
    ["Never", "OnFailure"].includes(pod.restartPolicy),
    "a Job's pods never restart Always",
  );
  assert.ok(pod.containers.length >= 1);
  const volumes = new Map(pod.volumes.map((v: Obj) => [v.name, v]));
  for (const c of pod.containers) {
    assert.ok(c.name && c.image, "every container has a name and an image");
    for (const e of c.env ?? []) assert.equal(typeof e.value, "string", `env ${e.name} is text`);
    for (const m of c.volumeMounts ?? []) assert.ok(volumes.has(m.name), `volume ${m.name} exists`);
  }
  const planVolume = volumes.get("plan") as Obj;
  assert.equal(planVolume.configMap.name, cm.metadata.name);
}

Deno.test("lab k8s job prints an Indexed Job and its ConfigMap that kubectl parses", async () => {
  const ca = await Deno.makeTempFile({ suffix: ".pem" });
  await Deno.writeTextFile(ca, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  const out = await runLab([
    "k8s",
    "job",
    "https://nrf.core.svc:8443/nnrf-disc/v1/nf-instances?target-nf-type=SMF",
    "-c",
    "10",
    "-m",
    "8",
    "-D",
    "30s",
    "--rate",
    "3000",
    "--shards",
    "3",
    "--image",
    "registry.example/sbilab:1",
    "--ca",
    ca,
    "--start-at",
    "2030-01-01T00:00:00Z",
  ]);
  await Deno.remove(ca);
  assert.equal(out.code, 0, out.stderr);
  const yaml = new TextDecoder().decode(out.stdout);
  const kubectl = findTool("kubectl");
  if (!kubectl) {
    console.warn(
      "skipping the kubectl checks: kubectl not found (apt-get install kubernetes-client)",
    );
    return;
  }
  // kubectl's own parser, offline: kustomize reads every document and writes them back as JSON-able YAML
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/job.yaml`, yaml);
    await Deno.writeTextFile(`${dir}/kustomization.yaml`, "resources:\n- job.yaml\n");
    const kz = await new Deno.Command(kubectl, { args: ["kustomize", dir], stderr: "piped" })
      .output();
    assert.ok(kz.success, new TextDecoder().decode(kz.stderr));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  // apply --dry-run=client parses every document; without a cluster it can only fail at API discovery
  const child = new Deno.Command(kubectl, {
    args: ["apply", "--dry-run=client", "--validate=false", "-o", "json", "-f", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { KUBECONFIG: "/dev/null" },
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(yaml));
  await w.close();
  const applied = await child.output();
  const err = new TextDecoder().decode(applied.stderr);
  assert.doesNotMatch(err, /error parsing|error converting YAML/);
  if (!applied.success) {
    assert.match(err, /unable to recognize/, err);
  }
  // the same documents as data, for our own field check
  const docs = yaml.split(/^---$/m).filter((d) => d.trim()).map(yamlToJson);
  checkManifests(docs, 3);
  const args: string[] = docs[1].spec.template.spec.containers[0].args;
  assert.deepEqual(args.slice(0, 2), [
    "load",
    "https://nrf.core.svc:8443/nnrf-disc/v1/nf-instances?target-nf-type=SMF",
  ]);
  assert.ok(args.includes("--record-to-log"));
  assert.equal(args[args.indexOf("--start-at") + 1], String(Date.parse("2030-01-01T00:00:00Z")));
  assert.equal(args[args.indexOf("--ca") + 1], "/etc/sbilab/ca.pem");
  assert.match(docs[0].data["ca.pem"], /BEGIN CERTIFICATE/);
  const plan = JSON.parse(docs[0].data["plan.json"]);
  assert.deepEqual(plan.shares.map((s: Obj) => s.connections), [4, 3, 3]);
  assert.deepEqual(plan.shares.map((s: Obj) => s.rate), [1000, 1000, 1000]);
});

Deno.test("lab k8s job reads the load options with lab load's own parser: attached and long forms share out, bad ones are refused", () => {
  const base = {
    url: "http://nrf.core.svc:8080/nnrf-disc/v1/nf-instances",
    shards: 3,
    image: "registry.example/sbilab:1",
    startAtMs: 0,
  };
  const plan = (loadArgs: string[]) => {
    const cm: Obj = jobManifests({ ...base, loadArgs })[0];
    return JSON.parse(cm.data["plan.json"]);
  };
  const shares = plan(["-c10", "--requests=9", "--rate=3000", "-m", "4"]).shares;
  assert.deepEqual(shares.map((s: Obj) => s.connections), [4, 3, 3]);
  assert.deepEqual(shares.map((s: Obj) => s.requests), [3, 3, 3]);
  assert.deepEqual(shares.map((s: Obj) => s.rate), [1000, 1000, 1000]);
  const refused = (loadArgs: string[], why: RegExp) =>
    assert.throws(() => plan(loadArgs), (e) => e instanceof UsageError && why.test(e.message));
  refused(["-c", "10", "-D", "30s", "--bogus"], /^lab load options: unknown option '--bogus'/);
  refused(["-c", "10", "-n", "0"], /^-n must be/);
  refused(["-c", "10"], /^Give either -n N or -D DURATION$/);
  refused(["-c", "10", "-D", "30s", "extra"], /unexpected argument 'extra'/);
});

/** The subset of YAML `lab k8s job` writes: block maps and lists, JSON-quoted strings, numbers, booleans. */
function yamlToJson(text: string): Obj {
  const lines = text.split("\n").filter((l) => l.trim()).map((l) => ({
    indent: l.length - l.trimStart().length,
    body: l.trim(),
  }));
  let i = 0;
  const scalar = (
    s: string,
  ): Obj => (s.startsWith('"')
    ? JSON.parse(s)
    : s === "[]"
    ? []
    : s === "{}"
    ? {}
    : s === "true"
    ? true
    : s === "false"
    ? false
    : Number(s));
  const block = (indent: number): Obj => {
    if (lines[i].body.startsWith("- ")) {
      const out: Obj[] = [];
      while (i < lines.length && lines[i].indent === indent && lines[i].body.startsWith("- ")) {
        // a list item: rewrite "- x" as x at indent + 2
        lines[i] = { indent: indent + 2, body: lines[i].body.slice(2) };
        out.push(
          /^[\w.\/-]+:( |$)/.test(lines[i].body) ? block(indent + 2) : scalar(lines[i++].body),
        );
      }
      return out;
    }
    const out: Obj = {};
    while (i < lines.length && lines[i].indent === indent) {
      const m = /^("[^"]*"|[\w.\/-]+):(?: (.*))?$/.exec(lines[i].body);
      if (!m) throw new SyntaxError(`Unexpected YAML line: ${lines[i].body}`);
      const key = m[1].startsWith('"') ? JSON.parse(m[1]) : m[1];
      i++;
      out[key] = m[2] !== undefined ? scalar(m[2]) : block(lines[i].indent);
    }
    return out;
  };
  return block(lines[0].indent);
}

Deno.test("lab k8s collect finds each pod's record in interleaved kubectl logs --prefix output", async () => {
  const rec = (i: number) =>
    JSON.stringify({ schema: "sbilab-load/1", shard: { index: i, count: 3 } }, null, 2).split("\n");
  const pods = [0, 1, 2].map((i) => ({
    p: `[pod/sbilab-load-${i}-abc/load]`,
    lines: ["summary line", RECORD_BEGIN, ...rec(i), RECORD_END],
  }));
  // cut shard 2 short, as a pod killed mid-print would be
  pods[2].lines = pods[2].lines.slice(0, 4);
  const logs: string[] = [];
  for (let k = 0; k < 20; k++) {
    for (const pod of pods) if (pod.lines[k] !== undefined) logs.push(`${pod.p} ${pod.lines[k]}`);
  }
  const found = recordsFromLogs(logs.join("\n") + "\n");
  assert.deepEqual(found.records.map((r) => JSON.parse(r.text).shard.index), [0, 1]);
  assert.deepEqual(found.cutOff, ["[pod/sbilab-load-2-abc/load]"]);

  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/logs.txt`;
    await Deno.writeTextFile(file, logs.join("\n"));
    const out = await runLab(["k8s", "collect", file, "-d", `${dir}/shards`]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stderr, /pod\/sbilab-load-2-abc\/load\]: its record is cut off/);
    const names = [...Deno.readDirSync(`${dir}/shards`)].map((e) => e.name).sort();
    assert.deepEqual(names, ["shard-0.json", "shard-1.json"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

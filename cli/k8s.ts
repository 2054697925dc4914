/**
 * `lab k8s job`: the manifests that run `lab load` as N shards on Kubernetes
 * (an Indexed Job and a ConfigMap), and `lab k8s collect`: the shard records
 * back out of `kubectl logs`.
 */
import type { Command } from "commander";
import { invalid, parseInteger, UsageError } from "./args.ts";
import { RECORD_BEGIN, RECORD_END } from "./load.ts";
import { loadShape, parseLoadOptions, parseStartAt, SHARD_COUNT_ENV } from "./load_options.ts";
import { MAX_SHARDS, shardLabel, shareOf } from "../load/mod.ts";
import { parseDuration } from "../linkemu/link_spec.ts";

/** Where the ConfigMap is mounted in every pod. */
export const PLAN_DIR = "/etc/sbilab";

/** What `lab k8s job` needs besides the load options. */
export interface JobOptions {
  /** Load URL. */
  url: string;
  /** `lab load` options each pod passes on (the shard's share is divided by `lab load` itself). */
  loadArgs: string[];
  shards: number;
  /** Image holding the ops-host executable as its entry point (see the Containerfile). */
  image: string;
  /** Job name (the ConfigMap is `<name>-plan`). Default `sbilab-load`. */
  name?: string;
  /** Namespace. Default: kubectl's. */
  namespace?: string;
  /** Planned start of the measured phase, ms since the epoch. */
  startAtMs: number;
  /** CA certificate (PEM text) every pod trusts. Default none. */
  caPem?: string;
}

type Json = string | number | boolean | null | Json[] | { [k: string]: Json };

/** YAML block style for plain data (strings double-quoted, so no value needs escaping rules of its own). */
export function toYaml(v: Json, indent = ""): string {
  if (Array.isArray(v)) {
    if (!v.length) return "[]";
    return v.map((x) => {
      const inner = toYaml(x, indent + "  ");
      return `\n${indent}- ${isBlock(x) ? inner.trimStart() : inner}`;
    }).join("");
  }
  if (v !== null && typeof v === "object") {
    const keys = Object.keys(v);
    if (!keys.length) return "{}";
    return keys.map((k) => {
      const x = v[k];
      return `\n${indent}${k}:${isBlock(x) ? "" : " "}${toYaml(x, indent + "  ")}`;
    }).join("");
  }
  return typeof v === "string" ? JSON.stringify(v) : String(v);
}

function isBlock(v: Json): boolean {
  return v !== null && typeof v === "object" &&
    (Array.isArray(v) ? v.length > 0 : Object.keys(v).length > 0);
}

/**
 * The ConfigMap and the Indexed Job for `o`, as objects (in apply order).
 * `o.loadArgs` are parsed and checked by `lab load`'s own parser; a bad one
 * throws `UsageError`.
 */
export function jobManifests(o: JobOptions): Record<string, Json>[] {
  const name = o.name ?? "sbilab-load";
  if (!/^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$/.test(name)) {
    throw new RangeError(`A Job name is lower-case letters, digits and '-', got "${name}"`);
  }
  const meta = (n: string): Record<string, Json> => ({
    name: n,
    ...(o.namespace ? { namespace: o.namespace } : {}),
    labels: { "app.kubernetes.io/name": "sbilab-load", "app.kubernetes.io/instance": name },
  });
  const { connections = 1, requests, rate } = loadShape(parseLoadOptions(o.loadArgs));
  const shares = Array.from({ length: o.shards }, (_, index) => {
    const s = { index, count: o.shards };
    return {
      shard: shardLabel(s),
      connections: shareOf(connections, s),
      ...(requests !== undefined ? { requests: shareOf(requests, s) } : {}),
      ...(rate !== undefined ? { rate: rate / o.shards } : {}),
    };
  });
  const plan = {
    url: o.url,
    shards: o.shards,
    startAt: new Date(o.startAtMs).toISOString(),
    loadArgs: o.loadArgs,
    shares,
  };
  const args = [
    "load",
    o.url,
    ...o.loadArgs,
    ...(o.caPem ? ["--ca", `${PLAN_DIR}/ca.pem`] : []),
    "--start-at",
    String(o.startAtMs),
    "--record-to-log",
    "--no-progress",
  ];
  const configMap = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: meta(`${name}-plan`),
    data: {
      "plan.json": JSON.stringify(plan, null, 2) + "\n",
      ...(o.caPem ? { "ca.pem": o.caPem } : {}),
    },
  };
  const job = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: meta(name),
    spec: {
      completionMode: "Indexed",
      completions: o.shards,
      parallelism: o.shards,
      // a shard run again would start late: the merge marks it missing instead
      backoffLimit: 0,
      ttlSecondsAfterFinished: 86_400,
      template: {
        metadata: { labels: { "app.kubernetes.io/name": "sbilab-load" } },
        spec: {
          restartPolicy: "Never",
          affinity: {
            podAntiAffinity: {
              // one shard per node where the cluster has enough of them
              preferredDuringSchedulingIgnoredDuringExecution: [{
                weight: 100,
                podAffinityTerm: {
                  topologyKey: "kubernetes.io/hostname",
                  labelSelector: { matchLabels: { "batch.kubernetes.io/job-name": name } },
                },
              }],
            },
          },
          containers: [{
            name: "load",
            image: o.image,
            args,
            env: [{ name: SHARD_COUNT_ENV, value: String(o.shards) }],
            volumeMounts: [{ name: "plan", mountPath: PLAN_DIR, readOnly: true }],
          }],
          volumes: [{ name: "plan", configMap: { name: `${name}-plan` } }],
        },
      },
    },
  };
  return [configMap, job];
}

/** The manifests as one multi-document YAML text. */
export function jobYaml(o: JobOptions): string {
  return jobManifests(o).map((m) => `---${toYaml(m)}\n`).join("");
}

/** A record block found in logs: which pod printed it and its text. */
export interface LoggedRecord {
  /** The `--prefix` of `kubectl logs` (`[pod/NAME/CONTAINER]`), or "" without one. */
  source: string;
  text: string;
}

/**
 * Finds every run record between marker lines in `kubectl logs` output (with
 * or without `--prefix`, pods' lines interleaved or not). Returns the records
 * and the sources whose record was cut off.
 */
export function recordsFromLogs(logs: string): { records: LoggedRecord[]; cutOff: string[] } {
  const open = new Map<string, string[]>();
  const records: LoggedRecord[] = [];
  for (const raw of logs.split("\n")) {
    const m = /^(\[[^\]\s]+\]) ?(.*)$/.exec(raw);
    const [source, line] = m ? [m[1], m[2]] : ["", raw];
    if (line.trimEnd() === RECORD_BEGIN) open.set(source, []);
    else if (line.trimEnd() === RECORD_END && open.has(source)) {
      records.push({ source, text: open.get(source)!.join("\n") });
      open.delete(source);
    } else open.get(source)?.push(line);
  }
  return { records, cutOff: [...open.keys()] };
}

interface JobFlags {
  shards: string;
  image: string;
  name?: string;
  namespace?: string;
  startAt?: string;
  startIn: string;
  ca?: string;
}

async function job(url: string, loadArgs: string[], f: JobFlags): Promise<void> {
  const shards = parseInteger(f.shards, "--shards", { min: 1, max: MAX_SHARDS });
  const { connections = 1 } = loadShape(parseLoadOptions(loadArgs));
  if (connections < shards) {
    throw new UsageError(
      `${shards} shards need at least ${shards} connections (-c), got ${connections}`,
    );
  }
  let startAtMs: number;
  if (f.startAt !== undefined) {
    startAtMs = parseStartAt(f.startAt);
  } else {
    try {
      startAtMs = Date.now() + parseDuration("--start-in", f.startIn);
    } catch {
      throw invalid("--start-in", "a duration like 120s", f.startIn);
    }
  }
  let caPem: string | undefined;
  if (f.ca) {
    try {
      caPem = await Deno.readTextFile(f.ca);
    } catch {
      throw new UsageError(`Cannot read ${f.ca}`);
    }
  }
  try {
    console.log(
      jobYaml({
        url,
        loadArgs,
        shards,
        image: f.image,
        name: f.name,
        namespace: f.namespace,
        startAtMs,
        caPem,
      }).trimEnd(),
    );
  } catch (err) {
    if (err instanceof RangeError) throw new UsageError(err.message);
    throw err;
  }
}

async function collect(file: string | undefined, dir: string): Promise<void> {
  let logs: string;
  try {
    logs = file && file !== "-"
      ? await Deno.readTextFile(file)
      : await new Response(Deno.stdin.readable).text();
  } catch {
    throw new UsageError(`Cannot read ${file}`);
  }
  const { records, cutOff } = recordsFromLogs(logs);
  for (const s of cutOff) console.error(`${s || "log"}: its record is cut off (no end line)`);
  if (!records.length) {
    throw new UsageError("No run records in the logs (was --record-to-log given?)");
  }
  await Deno.mkdir(dir, { recursive: true });
  for (const r of records) {
    let rec;
    try {
      rec = JSON.parse(r.text);
    } catch {
      console.error(`${r.source || "log"}: its record is not JSON, skipped`);
      continue;
    }
    const name = rec.shard ? `shard-${rec.shard.index}.json` : "run.json";
    await Deno.writeTextFile(`${dir}/${name}`, JSON.stringify(rec, null, 2) + "\n");
    console.error(`wrote ${dir}/${name}${r.source ? ` from ${r.source}` : ""}`);
  }
}

/** Adds `k8s job` and `k8s collect`. */
export function registerK8sCommands(program: Command): void {
  const k8s = program.command("k8s").description("run lab load as shards on Kubernetes");
  k8s.command("job")
    .description("print an Indexed Job and a ConfigMap that run `lab load` as N shards")
    .argument("<url>", "load URL, as for lab load")
    .argument("[load-options...]", "lab load options (-c, -m, -n or -D, --rate, --warm-up, …)")
    .requiredOption("--shards <n>", "shards (pods), each running its share of the plan")
    .requiredOption("--image <ref>", "image with the ops-host executable (see Containerfile)")
    .option("--name <name>", "Job name (the ConfigMap is NAME-plan)", "sbilab-load")
    .option("--namespace <ns>", "namespace of both objects")
    .option("--start-at <time>", "when every shard starts measuring (ISO, or ms since epoch)")
    .option("--start-in <time>", "or this long after the manifests are printed", "120s")
    .option("--ca <file>", "CA certificate the pods trust (put in the ConfigMap)")
    .allowUnknownOption(true)
    .action(async (url: string, loadArgs: string[], flags: JobFlags) => {
      await job(url, loadArgs, flags);
    });
  k8s.command("collect")
    .description("write the shard records found in `kubectl logs` output (file or stdin)")
    .argument("[file]", "kubectl logs output; - or none reads stdin")
    .option("-d, --dir <dir>", "where to write shard-I.json", ".")
    .action(async (file: string | undefined, flags: { dir: string }) => {
      await collect(file, flags.dir);
    });
}

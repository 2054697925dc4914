/**
 * The self-unpacking `build/lab` (`deno task compile` without DENORT_BIN):
 * its first run unpacks once per cache folder even when two start at once, a
 * damaged copy refuses to run, and on a clean Debian root (debootstrap
 * minbase: no Deno, no npm, none of sbilab's packages, an empty HOME and only
 * loopback) it serves, requests, loads and benchmarks on h2c, h2-TLS and h3
 * with every library beyond glibc loaded from its own folder.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import { packExecutable, type PackResult } from "../scripts/pack.ts";
import { cleanRootMissing, ensureCleanRoot } from "../scripts/clean_root.ts";
import { directCall, startLabServe } from "./support.ts";
import { pathExists } from "../lib/host.ts";

const dec = new TextDecoder();

let packed: Promise<PackResult> | undefined;
/** Packs build/lab once per test process. */
function lab(): Promise<PackResult> {
  return packed ??= packExecutable();
}

interface Run {
  code: number;
  stdout: Uint8Array;
  stderr: string;
}

async function run(cmd: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<Run> {
  const child = new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const out = await child.output();
  clearTimeout(timer);
  return { code: out.code, stdout: out.stdout, stderr: dec.decode(out.stderr) };
}

async function cacheEntries(base: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(base)) names.push(e.name);
  return names.sort();
}

Deno.test("two first runs of lab at once unpack one cache folder and remove an older version's", async () => {
  const { path, id } = await lab();
  const cache = await Deno.makeTempDir({ prefix: "sbilab-cache-" });
  try {
    await Deno.mkdir(`${cache}/sbilab/0.0.1-000000000000`, { recursive: true });
    await Deno.writeTextFile(`${cache}/sbilab/0.0.1-000000000000/.lock`, "");
    const env = { PATH: "/usr/bin:/bin", HOME: "/nonexistent", XDG_CACHE_HOME: cache };
    const [a, b] = await Promise.all([
      run([path, "--version"], env),
      run([path, "--version"], env),
    ]);
    for (const r of [a, b]) {
      assert.equal(r.code, 0, r.stderr);
      assert.equal(
        dec.decode(r.stdout).trim(),
        `lab 0.1.0 (self-unpacking executable, unpacked in ${cache}/sbilab/${id}; deno ${Deno.version.deno})`,
      );
    }
    assert.deepEqual(await cacheEntries(`${cache}/sbilab`), [id]);
    // a later run starts from the folder as it is
    await Deno.writeTextFile(`${cache}/sbilab/${id}/marker`, "kept");
    const again = await run([path, "--version"], env);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(await Deno.readTextFile(`${cache}/sbilab/${id}/marker`), "kept");
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("a lab whose archive was damaged refuses to run and leaves no cache folder", async () => {
  const { path } = await lab();
  const dir = await Deno.makeTempDir({ prefix: "sbilab-damaged-" });
  try {
    const bytes = await Deno.readFile(path);
    bytes[bytes.length - 100] ^= 0xff;
    await Deno.writeFile(`${dir}/lab`, bytes, { mode: 0o755 });
    const env = { PATH: "/usr/bin:/bin", HOME: "/nonexistent", XDG_CACHE_HOME: `${dir}/cache` };
    const r = await run([`${dir}/lab`, "--version"], env);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^error: .*lab is damaged \(its archive does not match SHA-256 [0-9a-f]{64}\)/,
    );
    assert.deepEqual(await cacheEntries(`${dir}/cache/sbilab`), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "a lab without room to unpack says how much it needs and leaves nothing behind",
  ignore: Deno.uid() !== 0,
  fn: async () => {
    const { path } = await lab();
    const dir = await Deno.makeTempDir({ prefix: "sbilab-small-" });
    const mount = (args: string[]) => new Deno.Command(args[0], { args: args.slice(1) }).output();
    assert.ok((await mount(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", dir])).success);
    try {
      const env = { PATH: "/usr/bin:/bin", HOME: "/nonexistent", XDG_CACHE_HOME: dir };
      const r = await run([path, "--version"], env);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^error: unpacking .*lab into .* failed \(it needs \d{2,} MB there\)/);
      assert.deepEqual(await cacheEntries(`${dir}/sbilab`), []);
    } finally {
      await mount(["umount", dir]);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** A clean root entered through a private network (loopback only) and mount namespace. */
class CleanHost {
  readonly home = "/home/op";
  readonly env = { HOME: "/home/op", PATH: "/usr/local/bin:/usr/bin:/bin" };
  private constructor(
    readonly root: string,
    private holder: Deno.ChildProcess,
    private out: ReadableStreamDefaultReader<string>,
  ) {}

  static async start(root: string, labPath: string): Promise<CleanHost> {
    await Deno.remove(`${root}/home/op`, { recursive: true }).catch(() => {});
    await Deno.mkdir(`${root}/home/op`, { recursive: true });
    await Deno.copyFile(labPath, `${root}/usr/local/bin/lab`);
    await Deno.chmod(`${root}/usr/local/bin/lab`, 0o755);
    const holder = new Deno.Command("unshare", {
      args: [
        "--net",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        'ip link set lo up && mount -t proc proc "$1/proc" && echo ready && exec sleep 3600',
        "sh",
        root,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = holder.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const host = new CleanHost(root, holder, reader);
    const first = await reader.read();
    if (first.value?.trim() !== "ready") {
      await host.stop();
      throw new Error("The clean host's namespaces could not be set up");
    }
    return host;
  }

  /** The command that runs `argv` inside the root, with the clean environment. */
  inside(argv: string[]): string[] {
    const env = Object.entries(this.env).map(([k, v]) => `${k}=${v}`);
    return [
      "nsenter",
      "-t",
      String(this.holder.pid),
      "-n",
      "-m",
      "chroot",
      this.root,
      "env",
      "-i",
      ...env,
      ...argv,
    ];
  }

  exec(argv: string[], timeoutMs?: number): Promise<Run> {
    return run(this.inside(argv), { PATH: "/usr/bin:/bin:/usr/sbin:/sbin" }, timeoutMs);
  }

  async stop(): Promise<void> {
    try {
      this.holder.kill("SIGKILL");
    } catch {
      // already gone
    }
    await this.holder.status;
    await this.out.cancel().catch(() => {});
    await Deno.remove(`${this.root}/home/op`, { recursive: true }).catch(() => {});
    await Deno.remove(`${this.root}/usr/local/bin/lab`).catch(() => {});
  }
}

const missing = cleanRootMissing();
if (missing && Deno.env.get("CI")) {
  throw new Error(`The clean-host test cannot run in CI: ${missing}`);
}
if (missing) console.warn(`skipping the clean-host test: ${missing}`);

/** Libraries the native modules link that must come from the executable's own folder. */
const CARRIED = [
  "libnghttp2.so.14",
  "libngtcp2.so.9",
  "libngtcp2_crypto_gnutls.so.2",
  "libnghttp3.so.3",
  "libgnutls.so.30",
  "libnettle.so.8",
  "libhogweed.so.6",
  "libgmp.so.10",
];

/** What the host gives: glibc, and libgcc_s (Deno's own dependency). */
const GLIBC = [
  "libc.so.6",
  "libm.so.6",
  "libpthread.so.0",
  "librt.so.1",
  "libdl.so.2",
  "ld-linux-x86-64.so.2",
  "libgcc_s.so.1",
];

Deno.test({
  name:
    "lab on a clean Debian root serves, requests, loads and benchmarks h2c, h2-tls and h3 offline from its own libraries",
  ignore: missing !== undefined,
  fn: async () => {
    const [{ path, id }, root] = await Promise.all([lab(), ensureCleanRoot()]);
    // the root lacks what the modules link: they can only load from what lab carries
    for (const lib of ["libnghttp2.so.14", "libngtcp2.so.9", "libnghttp3.so.3"]) {
      assert.ok(!(await pathExists(`${root}/usr/lib/x86_64-linux-gnu/${lib}`)), lib);
    }
    const host = await CleanHost.start(root, path);
    try {
      const ifaces = dec.decode((await host.exec(["cat", "/proc/net/dev"])).stdout)
        .split("\n").slice(2).map((l) => l.split(":")[0].trim()).filter(Boolean);
      assert.deepEqual(ifaces, ["lo"]);
      const tools = await host.exec(["sh", "-c", "command -v deno npm node npx || true"]);
      assert.equal(dec.decode(tools.stdout), "");

      const cache = `${host.home}/.cache/sbilab/${id}`;
      const version = await host.exec(["lab", "--version"]);
      assert.equal(version.code, 0, version.stderr);
      assert.match(
        dec.decode(version.stdout),
        new RegExp(`self-unpacking executable, unpacked in ${cache};`),
      );

      const doctor = await host.exec(["lab", "doctor"]);
      assert.equal(doctor.code, 0, doctor.stderr);
      const rows = dec.decode(doctor.stdout).split("\n");
      assert.ok(
        rows.some((r) =>
          r.startsWith("h2 module") && r.endsWith(`${cache}/app/build/libsbilab_h2.so`)
        ),
        rows.join("\n"),
      );
      assert.ok(
        rows.some((r) =>
          r.startsWith("h3 module") && r.endsWith(`${cache}/app/build/libsbilab_h3.so`)
        ),
        rows.join("\n"),
      );
      const mapped = new Map(
        rows.filter((r) => r.startsWith("  ")).map((r) =>
          r.trim().split(/\s+/) as [string, string]
        ),
      );
      for (const lib of CARRIED) {
        assert.equal(mapped.get(lib), `${cache}/app/build/lib/${lib}`, rows.join("\n"));
      }
      for (const [lib, file] of mapped) {
        if (GLIBC.includes(lib)) assert.match(file, /^\/(usr\/)?lib/, lib);
        else assert.ok(file.startsWith(`${cache}/app/build/`), `${lib} from ${file}`);
      }

      const srv = await startLabServe(
        { transports: ["h2c", "h2-tls", "h3"], stateDir: `${host.home}/state` },
        { lab: host.inside(["lab"]) },
      );
      try {
        const target = "/nbench/v1/payload?size=300";
        const want = (await directCall(createHandler(), "GET", target)).body;
        const ca = ["--ca", `${host.home}/state/ca.pem`];
        for (
          const argv of [
            ["request", `${srv.urls["h2c"]}${target}`],
            ["request", ...ca, `${srv.urls["h2-tls"]}${target}`],
            ["request", "--h3", ...ca, `${srv.urls["h3"]}${target}`],
          ]
        ) {
          const r = await host.exec(["lab", ...argv]);
          assert.equal(r.code, 0, `${argv.join(" ")}: ${r.stderr}`);
          assert.deepEqual(r.stdout, want, argv.join(" "));
        }
        const load = await host.exec([
          "lab",
          "load",
          "--h3",
          "-n",
          "1000",
          "--no-progress",
          ...ca,
          `${srv.urls["h3"]}/nbench/v1/payload?size=256`,
        ]);
        assert.equal(load.code, 0, load.stderr);
        assert.match(
          dec.decode(load.stdout),
          /requests: \d+ sent, 1000 completed: 1000 succeeded, 0 failed, 0 errors/,
        );
      } finally {
        await srv.stop();
      }

      const bench = await host.exec(["lab", "bench", "--quick"], 300_000);
      assert.equal(bench.code, 0, bench.stderr);
      const table = dec.decode(bench.stdout);
      for (const t of ["h2c", "h2-tls", "h3"]) {
        assert.match(table, new RegExp(`^${t}\\s+native\\s+GET 256 B`, "m"), table);
      }
    } finally {
      await host.stop();
    }
  },
});

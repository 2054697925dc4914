/** `lab doctor`: what this machine offers sbilab. */
import type { Command } from "commander";
import { versionLine } from "./version.ts";
import { findTool, pathExists } from "../lib/host.ts";
import { systemLibraryVersion } from "../transports/native/library.ts";

async function run(cmd: string[]): Promise<boolean> {
  try {
    const r = await new Deno.Command(cmd[0], { args: cmd.slice(1), stdout: "null", stderr: "null" })
      .output();
    return r.success;
  } catch {
    return false;
  }
}

/**
 * The shared libraries mapped into this process, in address order, each with
 * the file it was loaded from (read from /proc/self/maps, so the dynamic loader's
 * actual choice, not a guess from its search path). The Deno binary is left out.
 */
export async function loadedLibraries(): Promise<{ name: string; path: string }[]> {
  const maps = await Deno.readTextFile("/proc/self/maps").catch(() => "");
  const seen = new Set<string>();
  const libs: { name: string; path: string }[] = [];
  for (const line of maps.split("\n")) {
    // a deno compile executable's embedded copy is removed once mapped: "(deleted)"
    const path = line.split(/\s+/).slice(5).join(" ").replace(/ \(deleted\)$/, "");
    if (!path.startsWith("/") || seen.has(path) || path === Deno.execPath()) continue;
    const file = path.slice(path.lastIndexOf("/") + 1);
    if (!/\.so(\.|$)/.test(file)) continue;
    // libgnutls.so.30.34.3 -> libgnutls.so.30, the name the modules ask for
    const name = file.replace(/(\.so\.\d+)(\.\d+)+$/, "$1");
    seen.add(path);
    libs.push({ name, path });
  }
  return libs;
}

/** Collects the doctor's findings as `[label, value]` rows. */
export async function doctorReport(): Promise<[string, string][]> {
  const rows: [string, string][] = [];
  rows.push(["lab", versionLine()]);
  rows.push([
    "deno",
    `${Deno.version.deno} (v8 ${Deno.version.v8}, typescript ${Deno.version.typescript})`,
  ]);
  rows.push(["os", `${Deno.build.os} ${Deno.build.arch} ${Deno.osRelease()}`]);
  const uid = Deno.uid();
  rows.push([
    "user",
    uid === 0
      ? "root (network namespaces and TUN allowed)"
      : `uid ${uid} (not root: link emulation needs root)`,
  ]);
  // the modules first: they find their libraries through their RPATH, and the
  // soname probes below then see the copies already loaded, not the host's
  const moduleRows: [string, string][] = [];
  try {
    const h2 = await import("../transports/h2/mod.ts");
    moduleRows.push(["h2 module", await h2.h2ModuleInfo()]);
  } catch (err) {
    moduleRows.push(["h2 module", `unavailable: ${(err as Error).message.split("\n")[0]}`]);
  }
  try {
    const h3 = await import("../transports/h3/mod.ts");
    const v = await h3.h3Versions();
    moduleRows.push([
      "h3 module",
      `sbh3 ${v.shim} (ngtcp2 ${v.ngtcp2}, nghttp3 ${v.nghttp3}, gnutls ${v.gnutls}) at ${v.path}`,
    ]);
  } catch (err) {
    moduleRows.push(["h3 module", `unavailable: ${(err as Error).message.split("\n")[0]}`]);
  }
  rows.push([
    "libnghttp2",
    systemLibraryVersion("libnghttp2.so.14", "nghttp2_version") ??
      "missing (apt-get install libnghttp2-14)",
  ]);
  rows.push([
    "libngtcp2",
    systemLibraryVersion("libngtcp2.so.9", "ngtcp2_version") ??
      "missing (apt-get install libngtcp2-9)",
  ]);
  rows.push([
    "libnghttp3",
    systemLibraryVersion("libnghttp3.so.3", "nghttp3_version") ??
      "missing (apt-get install libnghttp3-3)",
  ]);
  rows.push(...moduleRows);
  rows.push(["loaded from", "(what the modules and Deno map, from /proc/self/maps)"]);
  for (const { name, path } of await loadedLibraries()) rows.push([`  ${name}`, path]);
  const tools: [string, string][] = [
    ["nghttp", "nghttp2-client"],
    ["h2load", "nghttp2-client"],
    ["nghttpd", "nghttp2-server"],
    ["curl", "curl"],
    ["gtlsclient", "ngtcp2-client"],
    ["gtlsserver", "ngtcp2-server"],
    ["valgrind", "valgrind"],
    ["cc", "gcc"],
    ["ip", "iproute2"],
    ["tc", "iproute2"],
  ];
  for (const [tool, pkg] of tools) {
    const path = findTool(tool);
    rows.push([tool, path ?? `missing (apt-get install ${pkg})`]);
  }
  rows.push([
    "/dev/net/tun",
    (await pathExists("/dev/net/tun")) ? "present" : "missing (TUN link emulation unavailable)",
  ]);
  const netns = uid === 0 && await run(["ip", "netns", "list"]);
  rows.push(["network namespaces", netns ? "available" : "unavailable (needs root and iproute2)"]);
  const release = Deno.osRelease();
  const netem = (await pathExists(`/lib/modules/${release}/kernel/net/sched/sch_netem.ko`)) ||
    (await pathExists(`/lib/modules/${release}/kernel/net/sched/sch_netem.ko.xz`)) ||
    (await Deno.readTextFile("/proc/modules").catch(() => "")).includes("sch_netem");
  rows.push([
    "tc netem",
    netem ? "available" : "not in this kernel (the built-in TUN relay is used)",
  ]);
  return rows;
}

/** Adds `doctor`. */
export function registerDoctorCommand(program: Command): void {
  program.command("doctor")
    .description("report the runtime, libraries, tools and privileges sbilab can use")
    .action(async () => {
      const rows = await doctorReport();
      const w = Math.max(...rows.map(([k]) => k.length));
      for (const [k, v] of rows) console.log(`${k.padEnd(w)}  ${v}`);
    });
}

/**
 * The project's native code: one entry per artefact. Each owner edits only its
 * own entry. Sources are relative to the repository root.
 */

/** How one native artefact is built. */
export interface NativeTarget {
  /** Output file name inside the build folder (e.g. `libsbilab_h3.so`). */
  output: string;
  /** `shared` for a dlopen-able library, `exe` for a program. */
  kind: "shared" | "exe";
  /** C sources, relative to the repository root. */
  sources: string[];
  /** Extra files whose change forces a rebuild (headers). */
  deps?: string[];
  /** Extra compiler flags. */
  cflags?: string[];
  /** Linker inputs: `-l…` flags or absolute paths of static archives (`.a`). */
  libs?: string[];
  /** Headers that must exist, each with the apt package that ships it. */
  requires?: { header: string; apt: string }[];
}

/** Every native target, by name. */
export const NATIVE_TARGETS: Record<string, NativeTarget> = {
  /** Kernel TCP/UDP ping-pong floor for the benchmark (bench/floors.ts). */
  pingpong: {
    output: "sbilab_pingpong",
    kind: "exe",
    sources: ["bench/native/pingpong.c"],
  },
  // linkemu (issue 5): the TUN relay and the selftest's UDP probe.
  linkrelay: {
    output: "sbilab-linkrelay",
    kind: "exe",
    sources: ["linkemu/native/relay.c"],
  },
  linkprobe: {
    output: "sbilab-linkprobe",
    kind: "exe",
    sources: ["linkemu/native/probe.c"],
  },
};

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

/**
 * Linker flag for everything that links the nghttp2/ngtcp2/nghttp3/GnuTLS
 * libraries: look for them first in `lib/` beside the artefact. The
 * self-unpacking executable (scripts/pack.ts) puts its copies there; a
 * checkout has no `build/lib/` and uses the system's. DT_RPATH (not RUNPATH)
 * also covers the libraries' own dependencies (GnuTLS's nettle, gmp, ...).
 */
const OWN_LIB_DIR = "-Wl,--disable-new-dtags,-rpath,$ORIGIN/lib";

/** The one HTTP/3 layer (nghttp3) both h3 modules link (transports/native/sbhttp3.h). */
const HTTP3_LAYER = "transports/native/sbhttp3.c";
const HTTP3_LAYER_HEADERS = ["transports/native/sbhttp3.h", "transports/native/sbwire.h"];

/** The I/O thread a module runs its own sockets on (transports/native/sbloop.h), linked into each module. */
const IO_LOOP = "transports/native/sbloop.c";
const IO_LOOP_HEADER = "transports/native/sbloop.h";

/** The h3 module's sources, one file per role (see transports/h3/native/sbh3_int.h), and the HTTP/3 layer. */
const H3_SOURCES = [
  ...["common", "conn", "client", "server", "udp", "tls"].map((f) =>
    `transports/h3/native/sbh3_${f}.c`
  ),
  HTTP3_LAYER,
  IO_LOOP,
];
const H3_HEADERS = [
  "transports/h3/native/sbh3.h",
  "transports/h3/native/sbh3_int.h",
  "transports/native/sb_tls.h",
  ...HTTP3_LAYER_HEADERS,
  IO_LOOP_HEADER,
];

/** Linker inputs and headers of the programs built on the h3 module's sources. */
const H3_EXE_LIBS = ["-lngtcp2_crypto_gnutls", "-lngtcp2", "-lnghttp3", "-lgnutls", OWN_LIB_DIR];
const H3_EXE_REQUIRES = [
  { header: "/usr/include/ngtcp2/ngtcp2.h", apt: "libngtcp2-dev" },
  { header: "/usr/include/nghttp3/nghttp3.h", apt: "libnghttp3-dev" },
];

/** The load engine's shared part, linked into the h2 and h3 modules (load/). */
const LOAD_SOURCES = ["load/native/sbl_load.c", "load/native/sbl_hist.c"];
const LOAD_HEADERS = ["load/native/sbl_load.h", "load/native/sbl_hist.h"];

/** Every native target, by name. */
export const NATIVE_TARGETS: Record<string, NativeTarget> = {
  /** Kernel TCP/UDP ping-pong floor for the benchmark (bench/measure/floors.ts). */
  pingpong: {
    output: "sbilab_pingpong",
    kind: "exe",
    sources: ["bench/native/pingpong.c"],
  },
  // The wake-up probe (profile/wakeup/): a UDP I/O thread handing JavaScript batches through a
  // ring in shared memory, and its ping peer with the kernel's echo.
  wakeup: {
    output: "libsbilab_wakeup.so",
    kind: "shared",
    sources: ["bench/native/wakeup/wakeup.c"],
    deps: ["bench/native/wakeup/wakeup.h"],
    libs: ["-lpthread"],
  },
  wakeup_peer: {
    output: "sbilab_wakeup_peer",
    kind: "exe",
    sources: ["bench/native/wakeup/peer.c"],
  },
  // linkemu: the TUN relay and the selftest's UDP probe.
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
  // HTTP/3: the sbh3 shim over ngtcp2 + nghttp3 + GnuTLS. Debian's
  // libngtcp2.a / libnghttp3.a are built without -fPIC and cannot go into a
  // shared object, so the libraries are linked dynamically.
  h3: {
    output: "libsbilab_h3.so",
    kind: "shared",
    sources: [...H3_SOURCES, ...LOAD_SOURCES, "load/native/sbl_h3.c"],
    deps: [...H3_HEADERS, ...LOAD_HEADERS],
    libs: ["-lngtcp2_crypto_gnutls", "-lngtcp2", "-lnghttp3", "-lgnutls", "-lpthread", OWN_LIB_DIR],
    requires: [
      { header: "/usr/include/ngtcp2/ngtcp2.h", apt: "libngtcp2-dev" },
      {
        header: "/usr/include/ngtcp2/ngtcp2_crypto_gnutls.h",
        apt: "libngtcp2-crypto-gnutls-dev",
      },
      { header: "/usr/include/nghttp3/nghttp3.h", apt: "libnghttp3-dev" },
      { header: "/usr/include/gnutls/gnutls.h", apt: "libgnutls28-dev" },
    ],
  },
  // HTTP/3 framing for the deno stack: nghttp3 over the streams of Deno's own QUIC
  // (quinn), so its h3 differs from the native one only in the QUIC layer.
  dh3: {
    output: "libsbilab_dh3.so",
    kind: "shared",
    sources: ["transports/deno/native/sbdh3.c", HTTP3_LAYER],
    deps: ["transports/deno/native/sbdh3.h", ...HTTP3_LAYER_HEADERS],
    libs: ["-lnghttp3"],
    requires: [{ header: "/usr/include/nghttp3/nghttp3.h", apt: "libnghttp3-dev" }],
  },
  // HTTP/2 client and server: the sbh2 shim over nghttp2 (transports/h2/client.ts,
  // transports/h2/server.ts) and its TLS 1.3 record layer on GnuTLS
  // (sbh2_tls.c), with the TLS settings shared with h3 (transports/native/sb_tls.h).
  h2: {
    output: "libsbilab_h2.so",
    kind: "shared",
    sources: [
      "transports/h2/native/sbh2.c",
      "transports/h2/native/sbh2_server.c",
      "transports/h2/native/sbh2_tls.c",
      "transports/h2/native/sbh2_loop.c",
      "transports/h2/native/sbh2_client_loop.c",
      IO_LOOP,
      ...LOAD_SOURCES,
      "load/native/sbl_h2.c",
    ],
    deps: [
      "transports/h2/native/sbh2.h",
      "transports/h2/native/sbh2_server.h",
      "transports/h2/native/sbh2_common.h",
      "transports/h2/native/sbh2_tls.h",
      "transports/native/sbwire.h",
      "transports/native/sb_tls.h",
      IO_LOOP_HEADER,
      ...LOAD_HEADERS,
    ],
    libs: ["-lnghttp2", "-lgnutls", "-lpthread", OWN_LIB_DIR],
    requires: [
      { header: "/usr/include/nghttp2/nghttp2.h", apt: "libnghttp2-dev" },
      { header: "/usr/include/gnutls/gnutls.h", apt: "libgnutls28-dev" },
    ],
  },
  // Check driver for the load engines' histogram (load/histogram_test.ts).
  load_histcheck: {
    output: "sbilab_load_histcheck",
    kind: "exe",
    sources: ["load/native/sbl_hist_check.c", "load/native/sbl_hist.c"],
    deps: ["load/native/sbl_hist.h"],
  },
  // Leak check driver of both load engines (tests/load_leak_test.ts).
  load_check: {
    output: "sbilab_load_check",
    kind: "exe",
    sources: [
      "load/native/sbl_load_check.c",
      ...LOAD_SOURCES,
      "load/native/sbl_h2.c",
      "transports/h2/native/sbh2_tls.c",
      "transports/h2/native/sbh2.c",
      "transports/h2/native/sbh2_server.c",
      "load/native/sbl_h3.c",
      ...H3_SOURCES,
    ],
    deps: [
      ...H3_HEADERS,
      ...LOAD_HEADERS,
      "transports/native/sbwire.h",
      "transports/h2/native/sbh2_tls.h",
    ],
    cflags: ["-O0"],
    libs: [
      "-lnghttp2",
      "-lngtcp2_crypto_gnutls",
      "-lngtcp2",
      "-lnghttp3",
      "-lgnutls",
      "-lpthread",
      OWN_LIB_DIR,
    ],
  },
  // The h2 server module (h2c, or h2 over TLS) hosted by a plain C loop: a reference server
  // of the peers scenario (bench/scenarios/peers.ts) and of the stacks-alone arms of rtt
  // (bench/scenarios/rtt_stacks_arms.ts), to tell the module's cost from Deno's around it.
  h2host: {
    output: "sbilab_h2host",
    kind: "exe",
    sources: [
      "bench/native/h2host.c",
      "transports/h2/native/sbh2.c",
      "transports/h2/native/sbh2_server.c",
      "transports/h2/native/sbh2_tls.c",
    ],
    deps: [
      "transports/h2/native/sbh2.h",
      "transports/h2/native/sbh2_server.h",
      "transports/h2/native/sbh2_common.h",
      "transports/h2/native/sbh2_tls.h",
      "transports/native/sbwire.h",
      "transports/native/sb_tls.h",
      "bench/native/host_common.h",
    ],
    libs: ["-lnghttp2", "-lgnutls", OWN_LIB_DIR],
    requires: [
      { header: "/usr/include/nghttp2/nghttp2.h", apt: "libnghttp2-dev" },
      { header: "/usr/include/gnutls/gnutls.h", apt: "libgnutls28-dev" },
    ],
  },
  // The h3 module hosted by a plain C loop: a reference server of the peers scenario
  // (bench/scenarios/peers.ts), to tell the module's cost from Deno's around it.
  h3host: {
    output: "sbilab_h3host",
    kind: "exe",
    sources: ["bench/native/h3host.c", ...H3_SOURCES],
    deps: [...H3_HEADERS, "bench/native/host_common.h"],
    libs: H3_EXE_LIBS,
    requires: H3_EXE_REQUIRES,
  },
  // Leak check driver for the h3 shim: a client and a server talking in memory.
  h3_leakcheck: {
    output: "sbilab_h3_leakcheck",
    kind: "exe",
    sources: ["transports/h3/native/leakcheck.c", ...H3_SOURCES],
    deps: H3_HEADERS,
    cflags: ["-O0"],
    libs: H3_EXE_LIBS,
    requires: H3_EXE_REQUIRES,
  }, // The h3 interop probe: a client that misbehaves on purpose (interop/).
  h3_probe: {
    output: "sbilab_h3_probe",
    kind: "exe",
    sources: ["transports/h3/native/probe.c", ...H3_SOURCES],
    deps: H3_HEADERS,
    libs: H3_EXE_LIBS,
    requires: H3_EXE_REQUIRES,
  },
};

/**
 * The libc functions sbilab calls through FFI for sockets Deno does not expose
 * (TCP_NODELAY, TCP_INFO, shutdown, a send that never waits, a peek at what a
 * socket holds), for the process's fd limit and for the
 * monotonic clock V8's CPU profiles are stamped with, for the kernel's
 * clock discipline (adjtimex), and for glibc's allocator (mallopt,
 * malloc_trim: giving freed memory back to the system). One `Deno.dlopen`
 * table, opened once per process; Linux with glibc only.
 */

/** The symbols, C prototype on each. */
const SYMBOLS = {
  /** int setsockopt(int fd, int level, int name, const void *val, socklen_t len) */
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
  /** int getsockopt(int fd, int level, int name, void *val, socklen_t *len) */
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  /** int getsockname(int fd, struct sockaddr *addr, socklen_t *len) */
  getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  /** int getpeername(int fd, struct sockaddr *addr, socklen_t *len) */
  getpeername: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  /** ssize_t send(int fd, const void *buf, size_t len, int flags), len below 4 GiB */
  send: { parameters: ["i32", "buffer", "u32", "i32"], result: "i32" },
  /** ssize_t recv(int fd, void *buf, size_t len, int flags), len below 4 GiB */
  recv: { parameters: ["i32", "buffer", "u32", "i32"], result: "i32" },
  /** int shutdown(int fd, int how) */
  shutdown: { parameters: ["i32", "i32"], result: "i32" },
  /** int getrlimit(int resource, struct rlimit *rlim) */
  getrlimit: { parameters: ["i32", "buffer"], result: "i32" },
  /** int setrlimit(int resource, const struct rlimit *rlim) */
  setrlimit: { parameters: ["i32", "buffer"], result: "i32" },
  /** int clock_gettime(clockid_t clk, struct timespec *tp) */
  clock_gettime: { parameters: ["i32", "buffer"], result: "i32" },
  /** int adjtimex(struct timex *buf) */
  adjtimex: { parameters: ["buffer"], result: "i32" },
  /** int mallopt(int param, int value) */
  mallopt: { parameters: ["i32", "i32"], result: "i32" },
  /** int malloc_trim(size_t pad) */
  malloc_trim: { parameters: ["usize"], result: "i32" },
} as const;

let lib: Deno.DynamicLibrary<typeof SYMBOLS> | undefined;

/** libc's symbols, opened on first use; throws where there is no glibc. */
export function libc(): Deno.DynamicLibrary<typeof SYMBOLS>["symbols"] {
  lib ??= Deno.dlopen("libc.so.6", SYMBOLS);
  return lib.symbols;
}

const CLOCK_MONOTONIC = 1;
const timespec = new BigInt64Array(2);

/** CLOCK_MONOTONIC in µs: the clock of `--cpu-prof` profiles' timestamps (Linux). */
export function monotonicUs(): number {
  if (libc().clock_gettime(CLOCK_MONOTONIC, timespec) !== 0) {
    throw new Error("clock_gettime(CLOCK_MONOTONIC) failed");
  }
  return Number(timespec[0]) * 1e6 + Number(timespec[1]) / 1e3;
}

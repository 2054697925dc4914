import assert from "node:assert/strict";
import { parseProcStatus, readProcMemory } from "./proc_status.ts";

// The opening of a real /proc/<pid>/status (Linux 6.1), tabs and padding as the kernel writes them.
const STATUS = [
  "Name:\tdeno",
  "Umask:\t0022",
  "State:\tS (sleeping)",
  "Pid:\t4242",
  "VmPeak:\t 3411012 kB",
  "VmSize:\t 3345476 kB",
  "VmLck:\t       0 kB",
  "VmHWM:\t  101324 kB",
  "VmRSS:\t   98760 kB",
  "RssAnon:\t   61440 kB",
  "RssFile:\t   37320 kB",
  "Threads:\t9",
  "",
].join("\n");

Deno.test("parseProcStatus reads VmRSS and VmHWM in bytes, not VmPeak or RssAnon", () => {
  assert.deepEqual(parseProcStatus(STATUS), {
    name: "deno",
    rssBytes: 98760 * 1024,
    peakBytes: 101324 * 1024,
  });
});

Deno.test("parseProcStatus refuses a status without memory lines (a kernel thread, a zombie)", () => {
  const kthread = "Name:\tkthreadd\nUmask:\t0000\nState:\tS (sleeping)\nThreads:\t1\n";
  assert.throws(() => parseProcStatus(kthread), {
    name: "SyntaxError",
    message: "/proc status text has no VmRSS line",
  });
  assert.throws(
    () => parseProcStatus(STATUS.replace(/^VmHWM:.*\n/m, "")),
    /no VmHWM line/,
  );
});

Deno.test({
  name: "readProcMemory reads this process and reports a process that is gone as undefined",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const self = readProcMemory("self");
    assert.ok(self, "no /proc/self/status");
    assert.equal(self.name, "deno");
    assert.ok(self.rssBytes > 1024 * 1024 && self.peakBytes >= self.rssBytes);
    const child = new Deno.Command("true").spawn();
    await child.status; // reaped: its /proc entry is gone
    assert.equal(readProcMemory(child.pid), undefined);
  },
});

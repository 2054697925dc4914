/**
 * A process's memory from Linux's `/proc/<pid>/status`: its resident set size
 * now (`VmRSS`) and the highest it has been since the process started
 * (`VmHWM`). The one reader for every place that watches a process's memory.
 */

/** Memory of one process, as `/proc/<pid>/status` reports it. */
export interface ProcMemory {
  /** The process's name (the `Name:` line, at most 15 characters), e.g. `deno`. */
  name: string;
  /** Resident set size now (`VmRSS`), bytes. */
  rssBytes: number;
  /** Highest resident set size since the process started (`VmHWM`), bytes. */
  peakBytes: number;
}

function kilobytes(text: string, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(text);
  if (!m) throw new SyntaxError(`/proc status text has no ${field} line`);
  return Number(m[1]) * 1024;
}

/**
 * Parses the text of `/proc/<pid>/status`. Throws `SyntaxError` when the
 * `VmRSS` or `VmHWM` line is missing (a kernel thread, or a process that has
 * exited and not yet been reaped).
 */
export function parseProcStatus(text: string): ProcMemory {
  const name = /^Name:\t(.*)$/m.exec(text)?.[1] ?? "";
  return { name, rssBytes: kilobytes(text, "VmRSS"), peakBytes: kilobytes(text, "VmHWM") };
}

/**
 * Reads `/proc/<pid>/status` (`"self"`: this process). Undefined when the
 * process is gone, has no memory left to report, or the host has no procfs.
 */
export function readProcMemory(pid: number | "self"): ProcMemory | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync(`/proc/${pid}/status`);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  try {
    return parseProcStatus(text);
  } catch (err) {
    if (err instanceof SyntaxError) return undefined;
    throw err;
  }
}

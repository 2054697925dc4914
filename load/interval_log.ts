/**
 * HdrHistogram interval logs: the text format `HistogramLogWriter` writes
 * (HdrHistogram's own, read by its `HistogramLogReader`, HdrHistogramVisualizer
 * and the hdr-plot tools), so a shard's latencies leave sbilab in a format
 * other tools read. Values are ns; `Interval_Max` is printed in ms.
 */
import * as hdr from "hdr-histogram-js";

/** One interval of the log: its tagged histograms over [startMs, endMs] (ms since the epoch). */
export interface LogInterval {
  startMs: number;
  endMs: number;
  /** Tag → histogram (tags must not hold commas or spaces). */
  histograms: Record<string, hdr.Histogram>;
}

/** Writes `intervals` as an interval log whose start and base time are the first interval's start. */
export function writeIntervalLog(intervals: LogInterval[], comment?: string): string {
  let text = "";
  const w = new hdr.HistogramLogWriter((s) => (text += s));
  const base = intervals.length ? Math.min(...intervals.map((i) => i.startMs)) : 0;
  w.outputLogFormatVersion();
  if (comment) w.outputComment(comment);
  // as HdrHistogram's Java writer words it (hdr-histogram-js's outputStartTime adds a blank line)
  w.outputComment(
    `[StartTime: ${(base / 1000).toFixed(3)} (seconds since epoch), ${
      new Date(base).toUTCString()
    }]`,
  );
  w.outputComment(`[BaseTime: ${(base / 1000).toFixed(3)} (seconds since epoch)]`);
  w.outputLegend();
  w.baseTime = base;
  for (const iv of intervals) {
    for (const [tag, h] of Object.entries(iv.histograms)) {
      if (/[\s,]/.test(tag)) {
        throw new RangeError(`A log tag cannot hold spaces or commas: "${tag}"`);
      }
      h.tag = tag;
      w.outputIntervalHistogram(h, (iv.startMs - base) / 1000, (iv.endMs - base) / 1000, 1e6);
    }
  }
  return text;
}

/** Reads every interval histogram of a log (with its tag, start and end in seconds since the epoch). */
export function readIntervalLog(
  text: string,
): { tag: string; startSec: number; endSec: number; histogram: hdr.Histogram }[] {
  const reader = new hdr.HistogramLogReader(text);
  const out = [];
  for (let h = reader.nextIntervalHistogram(); h; h = reader.nextIntervalHistogram()) {
    out.push({
      tag: h.tag,
      startSec: h.startTimeStampMsec / 1000,
      endSec: h.endTimeStampMsec / 1000,
      histogram: h,
    });
  }
  return out;
}

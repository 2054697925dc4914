/**
 * JSON nesting depth, measured without recursion so a hostile document cannot
 * exhaust the stack: on the raw bytes before parsing, and on a parsed value.
 */
import type { JsonValue } from "./json_patch.ts";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;

/**
 * Whether the JSON text in `bytes` nests objects and arrays deeper than
 * `maxDepth`. Brackets inside strings do not count. Stops at the first byte
 * past the limit, so the cost is bounded by the body size.
 */
export function exceedsJsonDepth(bytes: Uint8Array, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) {
      inString = true;
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (++depth > maxDepth) return true;
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

/** Nesting depth of a parsed value (a scalar is 0, `[]` is 1), walked with an explicit stack. */
export function jsonValueDepth(value: JsonValue): number {
  let max = 0;
  const stack: [JsonValue, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth]);
  }
  return max;
}

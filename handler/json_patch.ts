/**
 * JSON Patch (RFC 6902) over JSON Pointers (RFC 6901), enough for the NRF's
 * `PATCH` of an NF profile.
 */

/** A JSON value. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/** One JSON Patch operation. */
export interface JsonPatchOperation {
  /** `add`, `remove`, `replace`, `move`, `copy` or `test`. */
  op: string;
  /** JSON Pointer of the target location. */
  path: string;
  /** Value for `add`, `replace` and `test`. */
  value?: JsonValue;
  /** JSON Pointer of the source for `move` and `copy`. */
  from?: string;
}

/**
 * A patch that is well formed but cannot be applied to this document: a
 * target that does not exist or a `test` that failed.
 */
export class JsonPatchConflictError extends Error {
  /** Index of the failing operation in the patch. */
  readonly index: number;
  /** JSON Pointer the failing operation addressed. */
  readonly path: string;

  constructor(index: number, path: string, message: string) {
    super(`${message} (failed operation index= ${index})`);
    this.name = "JsonPatchConflictError";
    this.index = index;
    this.path = path;
  }
}

/**
 * Splits a JSON Pointer into unescaped reference tokens.
 *
 * @throws {SyntaxError} when the pointer is neither empty nor starts with `/`,
 * or has a `~` not followed by `0` or `1`
 */
export function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new SyntaxError(`JSON Pointer must start with "/"`);
  return pointer.slice(1).split("/").map((token) => {
    if (/~(?![01])/.test(token)) throw new SyntaxError(`Invalid escape in JSON Pointer token`);
    return token.replaceAll("~1", "/").replaceAll("~0", "~");
  });
}

const OPS = new Set(["add", "remove", "replace", "move", "copy", "test"]);

/**
 * Checks that `patch` is a JSON Patch document and returns it typed.
 *
 * @throws {SyntaxError} when it is not an array of well-formed operations
 */
export function validatePatch(patch: unknown): JsonPatchOperation[] {
  if (!Array.isArray(patch)) throw new SyntaxError("JSON Patch must be an array");
  patch.forEach((entry, index) => {
    const where = `operation ${index}`;
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
      throw new SyntaxError(`JSON Patch ${where} is not an object`);
    }
    const op = entry as Record<string, unknown>;
    if (typeof op.op !== "string" || !OPS.has(op.op)) {
      throw new SyntaxError(`JSON Patch ${where} has an unknown "op"`);
    }
    if (typeof op.path !== "string") throw new SyntaxError(`JSON Patch ${where} lacks "path"`);
    parsePointer(op.path);
    if ((op.op === "add" || op.op === "replace" || op.op === "test") && !("value" in op)) {
      throw new SyntaxError(`JSON Patch ${where} lacks "value"`);
    }
    if (op.op === "move" || op.op === "copy") {
      if (typeof op.from !== "string") throw new SyntaxError(`JSON Patch ${where} lacks "from"`);
      parsePointer(op.from);
    }
  });
  return patch as JsonPatchOperation[];
}

type Container = JsonValue[] | { [key: string]: JsonValue };

function isContainer(value: JsonValue | undefined): value is Container {
  return value !== null && typeof value === "object";
}

function clone<T extends JsonValue>(value: T): T {
  return structuredClone(value);
}

/** Deep equality of two JSON values, object key order ignored. */
export function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (!isContainer(a) || !isContainer(b)) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  const ao = a as Record<string, JsonValue>;
  const bo = b as Record<string, JsonValue>;
  const keys = Object.keys(ao);
  if (keys.length !== Object.keys(bo).length) return false;
  return keys.every((k) => Object.hasOwn(bo, k) && jsonEqual(ao[k], bo[k]));
}

/** Array index from a token; `-` means one past the end when `allowEnd`. */
function arrayIndex(token: string, length: number, allowEnd: boolean): number | undefined {
  if (token === "-") return allowEnd ? length : undefined;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
  const index = Number(token);
  return index < length || (allowEnd && index === length) ? index : undefined;
}

/** Value at a pointer, or undefined when it does not resolve. */
function resolve(doc: JsonValue, tokens: string[]): JsonValue | undefined {
  let current: JsonValue | undefined = doc;
  for (const token of tokens) {
    if (!isContainer(current)) return undefined;
    if (Array.isArray(current)) {
      const index = arrayIndex(token, current.length, false);
      current = index === undefined ? undefined : current[index];
    } else {
      current = Object.hasOwn(current, token) ? current[token] : undefined;
    }
  }
  return current;
}

/**
 * Applies a patch and returns the new document; the input is not modified.
 * Operations apply in order and the patch is atomic: on failure nothing is
 * returned.
 *
 * @throws {SyntaxError} when the patch is malformed (see {@link validatePatch})
 * @throws {JsonPatchConflictError} when an operation cannot be applied
 */
export function applyJsonPatch(document: JsonValue, patch: unknown): JsonValue {
  const ops = validatePatch(patch);
  let doc = clone(document);
  ops.forEach((op, index) => {
    const fail = (message: string): never => {
      throw new JsonPatchConflictError(index, op.path, message);
    };
    const tokens = parsePointer(op.path);

    const remove = (target: JsonValue, path: string[]): JsonValue => {
      if (path.length === 0) return fail("Cannot remove the whole document");
      const parent = resolve(target, path.slice(0, -1));
      const last = path[path.length - 1];
      if (Array.isArray(parent)) {
        const i = arrayIndex(last, parent.length, false);
        if (i === undefined) return fail("Path does not exist");
        return parent.splice(i, 1)[0];
      }
      if (isContainer(parent) && Object.hasOwn(parent, last)) {
        const old = parent[last];
        delete parent[last];
        return old;
      }
      return fail("Path does not exist");
    };

    const add = (path: string[], value: JsonValue): void => {
      if (path.length === 0) {
        doc = value;
        return;
      }
      const parent = resolve(doc, path.slice(0, -1));
      const last = path[path.length - 1];
      if (Array.isArray(parent)) {
        const i = arrayIndex(last, parent.length, true);
        if (i === undefined) return fail("Array index out of range");
        parent.splice(i, 0, value);
      } else if (isContainer(parent)) {
        parent[last] = value;
      } else {
        fail("Parent of path does not exist");
      }
    };

    switch (op.op) {
      case "add":
        add(tokens, clone(op.value as JsonValue));
        break;
      case "remove":
        remove(doc, tokens);
        break;
      case "replace":
        if (resolve(doc, tokens) === undefined) fail("Path does not exist");
        if (tokens.length === 0) doc = clone(op.value as JsonValue);
        else {
          remove(doc, tokens);
          add(tokens, clone(op.value as JsonValue));
        }
        break;
      case "move": {
        const from = parsePointer(op.from as string);
        if (op.path.startsWith(`${op.from}/`)) fail("Cannot move a value into itself");
        if (resolve(doc, from) === undefined) fail("From path does not exist");
        add(tokens, remove(doc, from));
        break;
      }
      case "copy": {
        const value = resolve(doc, parsePointer(op.from as string));
        if (value === undefined) fail("From path does not exist");
        add(tokens, clone(value as JsonValue));
        break;
      }
      case "test":
        if (!jsonEqual(resolve(doc, tokens), op.value)) fail("Test failed");
        break;
    }
  });
  return doc;
}

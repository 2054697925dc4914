import assert from "node:assert/strict";
import {
  applyJsonPatch,
  jsonEqual,
  JsonPatchConflictError,
  type JsonValue,
  parsePointer,
} from "./json_patch.ts";

const base = (): JsonValue => ({ a: 1, list: ["x", "y"], nested: { "s/l": 2, "t~l": 3 } });

Deno.test("parsePointer unescapes ~1 and ~0 and rejects bad pointers", () => {
  assert.deepEqual(parsePointer(""), []);
  assert.deepEqual(parsePointer("/a~1b/c~0d/~01"), ["a/b", "c~d", "~1"]);
  assert.throws(() => parsePointer("a"), SyntaxError);
  assert.throws(() => parsePointer("/a~2"), SyntaxError);
});

Deno.test("add inserts into objects and arrays, '-' appends", () => {
  const out = applyJsonPatch(base(), [
    { op: "add", path: "/b", value: { c: true } },
    { op: "add", path: "/list/1", value: "mid" },
    { op: "add", path: "/list/-", value: "end" },
    { op: "add", path: "/nested/s~1l", value: 20 },
  ]);
  assert.deepEqual(out, {
    a: 1,
    list: ["x", "mid", "y", "end"],
    nested: { "s/l": 20, "t~l": 3 },
    b: { c: true },
  });
});

Deno.test("remove and replace act on the addressed member only", () => {
  const out = applyJsonPatch(base(), [
    { op: "remove", path: "/list/0" },
    { op: "replace", path: "/a", value: [1] },
    { op: "remove", path: "/nested/t~0l" },
  ]);
  assert.deepEqual(out, { a: [1], list: ["y"], nested: { "s/l": 2 } });
});

Deno.test("move and copy take the value from 'from'", () => {
  const out = applyJsonPatch(base(), [
    { op: "copy", from: "/list", path: "/copy" },
    { op: "move", from: "/a", path: "/nested/a" },
    { op: "add", path: "/copy/-", value: "z" },
  ]);
  assert.deepEqual(out, {
    list: ["x", "y"],
    nested: { "s/l": 2, "t~l": 3, a: 1 },
    copy: ["x", "y", "z"],
  });
});

Deno.test("test passes on deep-equal values regardless of key order", () => {
  const doc = { o: { x: 1, y: [1, { z: null }] } };
  assert.deepEqual(
    applyJsonPatch(doc, [{ op: "test", path: "/o", value: { y: [1, { z: null }], x: 1 } }]),
    doc,
  );
});

Deno.test("a failed test reports the failing operation index and leaves the input alone", () => {
  const doc = base();
  const before = structuredClone(doc);
  assert.throws(
    () =>
      applyJsonPatch(doc, [
        { op: "replace", path: "/a", value: 2 },
        { op: "test", path: "/a", value: 1 },
      ]),
    (err: unknown) =>
      err instanceof JsonPatchConflictError && err.index === 1 && err.path === "/a" &&
      err.message.includes("index= 1"),
  );
  assert.deepEqual(doc, before);
});

Deno.test("operations on missing targets are conflicts", () => {
  for (
    const op of [
      { op: "remove", path: "/missing" },
      { op: "replace", path: "/missing", value: 1 },
      { op: "add", path: "/missing/child", value: 1 },
      { op: "add", path: "/list/5", value: 1 },
      { op: "remove", path: "/list/01" },
      { op: "move", from: "/missing", path: "/b" },
      { op: "copy", from: "/missing", path: "/b" },
      { op: "move", from: "/nested", path: "/nested/inner" },
    ]
  ) {
    assert.throws(() => applyJsonPatch(base(), [op]), JsonPatchConflictError, JSON.stringify(op));
  }
});

Deno.test("malformed patch documents are SyntaxErrors", () => {
  for (
    const patch of [
      {},
      [1],
      [{ op: "frobnicate", path: "/a" }],
      [{ op: "add", path: "/a" }],
      [{ op: "remove" }],
      [{ op: "move", path: "/a" }],
      [{ op: "remove", path: "a" }],
    ]
  ) {
    assert.throws(() => applyJsonPatch(base(), patch), SyntaxError, JSON.stringify(patch));
  }
});

Deno.test("replace at the root swaps the whole document", () => {
  assert.deepEqual(applyJsonPatch(base(), [{ op: "replace", path: "", value: [1, 2] }]), [1, 2]);
});

Deno.test("jsonEqual distinguishes arrays from objects and differing members", () => {
  assert.ok(jsonEqual({ a: [1, 2] }, { a: [1, 2] }));
  assert.ok(!jsonEqual({ 0: 1 }, [1]));
  assert.ok(!jsonEqual({ a: 1 }, { a: 1, b: 2 }));
  assert.ok(!jsonEqual([1, 2], [2, 1]));
  assert.ok(!jsonEqual(1, "1"));
});

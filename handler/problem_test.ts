import assert from "node:assert/strict";
import {
  PROBLEM_JSON,
  problemDetails,
  ProblemError,
  problemResponse,
  statusTitle,
} from "./problem.ts";

Deno.test("problemResponse encodes ProblemDetails with a fixed key order", () => {
  const res = problemResponse(400, {
    invalidParams: [{ param: "query size", reason: "missing" }, { param: "/nfType" }],
    cause: "MANDATORY_QUERY_PARAM_MISSING",
    instance: "/nbench/v1/payload",
    detail: "size is required",
  });
  assert.equal(res.status, 400);
  assert.equal(res.headers["content-type"], PROBLEM_JSON);
  assert.equal(
    new TextDecoder().decode(res.body),
    '{"title":"Bad Request","status":400,"detail":"size is required",' +
      '"instance":"/nbench/v1/payload","cause":"MANDATORY_QUERY_PARAM_MISSING",' +
      '"invalidParams":[{"param":"query size","reason":"missing"},{"param":"/nfType"}]}',
  );
});

Deno.test("problemDetails omits absent fields and empty invalidParams", () => {
  assert.deepEqual(problemDetails(504, { cause: "TIMED_OUT_REQUEST", invalidParams: [] }), {
    title: "Gateway Timeout",
    status: 504,
    cause: "TIMED_OUT_REQUEST",
  });
});

Deno.test("problemResponse keeps extra headers but always sets the problem content-type", () => {
  const res = problemResponse(405, { headers: { allow: "GET", "content-type": "text/plain" } });
  assert.equal(res.headers.allow, "GET");
  assert.equal(res.headers["content-type"], PROBLEM_JSON);
});

Deno.test("ProblemError carries its status and renders the same response", () => {
  const err = new ProblemError(415, { cause: "UNSUPPORTED_MEDIA_TYPE", detail: "json only" });
  assert.equal(err.message, "json only");
  assert.equal(err.status, 415);
  assert.deepEqual(err.toResponse(), problemResponse(415, err.init));
});

Deno.test("statusTitle names known statuses and falls back for unknown ones", () => {
  assert.equal(statusTitle(413), "Payload Too Large");
  assert.equal(statusTitle(599), "Error");
});

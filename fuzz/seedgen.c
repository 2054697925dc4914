/*
 * Writes the generated part of the seed corpora (fuzz/corpus/TARGET/gen-*): what sbilab's own
 * client and server put on the wire for the requests the tests make (GET, POSTs of several sizes,
 * many streams, a cancel), in each target's input format. Captures of other peers come from
 * scripts/fuzz_capture.ts.
 *
 * Usage: sbilab_fuzz_seedgen CORPUS_DIR
 */
#include <errno.h>
#include <sys/stat.h>

#include "../transports/h2/native/sbh2_server.h"
#include "../transports/h2/native/sbh2_tls.h"
#include "h3_common.h"
#include "testkey.h"

static const char *root;

static void save(const char *target, const char *name, const uint8_t *head, size_t hl, const uint8_t *p, size_t n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", root, target);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/%s/gen-%s", root, target, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(head, 1, hl, f) != hl || fwrite(p, 1, n, f) != n) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  fclose(f);
}

typedef struct {
  uint8_t *p;
  size_t len, cap;
} sbuf;

static void put(sbuf *b, const void *d, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2;
    b->p = realloc(b->p, b->cap);
    if (!b->p) abort();
  }
  memcpy(b->p + b->len, d, n);
  b->len += n;
}

static void put16(sbuf *b, size_t v) {
  uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  put(b, x, 2);
}

/* ---- h2: sbh2's client against sbh2's server, each direction recorded ---- */

static void h2_exchange(const char *name, const size_t *bodies, int nreq, int cancel_last) {
  sbh2_server *srv = sbh2_server_new();
  sbh2_sconn *sc = sbh2_sconn_new(srv);
  sbh2_conn *cc = sbh2_conn_new(1 << 20, 1 << 20);
  sbuf up = {0}, down = {0};
  static uint8_t out[1 << 17], poll[1 << 20], body[1 << 17];
  memset(body, 'b', sizeof body);
  uint8_t hdrs[512];
  int32_t last = 0;
  for (int i = 0; i < nreq; i++) {
    const char *post[] = {":method", "POST", ":scheme", "http", ":authority", "localhost:8080", ":path",
                          "/nudm-sdm/v2/imsi-001010000000001/am-data", "content-type", "application/json",
                          "3gpp-sbi-sender-timestamp", "Tue, 01 Dec 2026 14:00:00.000 GMT"};
    const char *get[] = {":method", "GET", ":scheme", "http", ":authority", "localhost:8080", ":path",
                         "/nnrf-disc/v1/nf-instances?target-nf-type=UDM&requester-nf-type=AMF"};
    size_t hl = bodies[i] ? fuzz_block(hdrs, post, 6) : fuzz_block(hdrs, get, 4);
    last = sbh2_conn_request(cc, hdrs, (uint32_t)hl, body, (uint32_t)bodies[i]);
  }
  if (cancel_last) sbh2_conn_cancel(cc, last);
  for (int round = 0; round < 64; round++) {
    int moved = 0, n;
    while ((n = sbh2_conn_send(cc, out, sizeof out)) > 0) {
      put(&up, out, (size_t)n);
      sbh2_sconn_recv(sc, out, (uint32_t)n);
      moved = 1;
    }
    while ((n = sbh2_sconn_poll(sc, poll, sizeof poll)) > 0) {
      for (size_t off = 0; off < (size_t)n;) {
        int64_t sid = (int64_t)fuzz_get_u64(poll + off + 8);
        uint32_t a = sbwire_get_u32(poll + off + 24), b = sbwire_get_u32(poll + off + 28);
        const char *ok[] = {":status", "200", "content-type", "application/json"};
        size_t rl = fuzz_block(hdrs, ok, 2);
        sbh2_sconn_respond(sc, (int32_t)sid, hdrs, (uint32_t)rl, body, b > 3000 ? 3000 : b + 20, 0);
        off += 32 + a + b;
      }
    }
    while ((n = sbh2_sconn_send(sc, out, sizeof out)) > 0) {
      put(&down, out, (size_t)n);
      sbh2_conn_recv(cc, out, (uint32_t)n);
      moved = 1;
    }
    while (sbh2_conn_poll(cc, poll, sizeof poll) > 0) {
    }
    if (!moved) break;
  }
  sbh2_conn_shutdown(cc);
  int n;
  while ((n = sbh2_conn_send(cc, out, sizeof out)) > 0) put(&up, out, (size_t)n);
  uint8_t h0[3] = {0, 0x11, 0x22}, h2[3] = {2, 0x11, 0x22}, h4[3] = {4 | 16, 0x33, 0x44};
  save("h2_server", name, h0, 3, up.p, up.len);
  save("h2_server", name, h0, 3, up.p, up.len);
  char n2[128];
  snprintf(n2, sizeof n2, "%s-tls", name);
  save("h2_server", n2, h2, 3, up.p, up.len);
  snprintf(n2, sizeof n2, "%s-small", name);
  save("h2_server", n2, h4, 3, up.p, up.len);
  /* the client target: mode 0, its own requests first (byte 3 = requests, sizes from the stream) */
  uint8_t c0[4] = {0, 0x11, 0x22, (uint8_t)nreq};
  save("h2_client", name, c0, 4, down.p, down.len);
  /* the load engine's response path: as many streams as requests (up to 8), with bodies */
  uint8_t l0[3] = {(uint8_t)(((nreq - 1) & 7) | 8), 0x11, 0x22};
  save("load_h2", name, l0, 3, down.p, down.len);
  uint8_t c2[4] = {2, 0x11, 0x22, (uint8_t)nreq};
  snprintf(n2, sizeof n2, "%s-tls", name);
  save("h2_client", n2, c2, 4, down.p, down.len);
  free(up.p);
  free(down.p);
  sbh2_conn_free(cc);
  sbh2_sconn_free(sc);
  sbh2_server_free(srv);
}

/* The first flight of sbh2's TLS client (a ClientHello), for the TLS-ciphertext mode. */
static void h2_client_hello(void) {
  sbh2_tls_config *cfg = sbh2_tls_config_new(0);
  sbh2_tls_config_set_verify(cfg, SBWIRE_TLS_VERIFY_NONE);
  sbh2_tls *t = sbh2_tls_new(cfg, "localhost", NULL, 0);
  static uint8_t out[1 << 16];
  int n = sbh2_tls_send(t, NULL, 0, out, sizeof out);
  uint8_t h1[3] = {1, 0x11, 0x22};
  if (n > 0) save("h2_server", "client-hello", h1, 3, out, (size_t)n);
  sbh2_tls_free(t);
  sbh2_tls_config_free(cfg);
}

/* ---- h2: frames the tests write by hand (limits, floods, odd frames) ---- */

static void frame(sbuf *b, uint8_t type, uint8_t flags, uint32_t sid, const uint8_t *p, size_t n) {
  uint8_t h[9] = {(uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n, type, flags,
                  (uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8), (uint8_t)sid};
  put(b, h, 9);
  if (n) put(b, p, n);
}

/* An HPACK block: :method (GET or POST), :scheme http, :path /, :authority localhost, then extra literals. */
static size_t hpack(uint8_t *out, int post, const char *const *extra, size_t nextra) {
  size_t n = 0;
  out[n++] = post ? 0x83 : 0x82;
  out[n++] = 0x86;
  out[n++] = 0x84;
  out[n++] = 0x01;
  out[n++] = 9;
  memcpy(out + n, "localhost", 9);
  n += 9;
  for (size_t i = 0; i < nextra; i++) {
    size_t nl = strlen(extra[2 * i]), vl = strlen(extra[2 * i + 1]);
    out[n++] = 0x00;
    out[n++] = (uint8_t)nl;
    memcpy(out + n, extra[2 * i], nl);
    n += nl;
    if (vl < 127) {
      out[n++] = (uint8_t)vl;
    } else { /* 7-bit prefix integer */
      out[n++] = 127;
      size_t v = vl - 127;
      while (v >= 128) {
        out[n++] = (uint8_t)(0x80 | (v & 127));
        v >>= 7;
      }
      out[n++] = (uint8_t)v;
    }
    memcpy(out + n, extra[2 * i + 1], vl);
    n += vl;
  }
  return n;
}

static void h2_preface(sbuf *b, const uint8_t *settings, size_t n) {
  put(b, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
  frame(b, 0x4, 0, 0, settings, n);
  frame(b, 0x4, 0x1, 0, NULL, 0); /* ACK of the server's */
}

static void h2_frames(void) {
  uint8_t hb[4096], d[8192];
  memset(d, 'd', sizeof d);
  uint8_t small[3] = {0 | 4 | 8, 0x55, 0x66}; /* h2c, small limits, small poll buffer */
  uint8_t plain[3] = {0, 0x55, 0x66};
  /* rapid reset: open and reset streams */
  {
    sbuf b = {0};
    h2_preface(&b, NULL, 0);
    uint8_t rst[4] = {0, 0, 0, 8};
    for (uint32_t sid = 1; sid < 80; sid += 2) {
      frame(&b, 0x1, 0x4, sid, hb, hpack(hb, 0, NULL, 0));
      frame(&b, 0x3, 0, sid, rst, 4);
    }
    save("h2_server", "rapid-reset", small, 3, b.p, b.len);
    free(b.p);
  }
  /* CONTINUATION flood */
  {
    sbuf b = {0};
    h2_preface(&b, NULL, 0);
    const char *x[] = {"x-a", "1"};
    size_t n = hpack(hb, 0, x, 1);
    frame(&b, 0x1, 0x1, 1, hb, 6); /* END_STREAM, no END_HEADERS */
    for (int i = 0; i < 10; i++) frame(&b, 0x9, i == 9 ? 0x4 : 0, 1, hb + 6 + (i < 1 ? 0 : n - 6), i < 1 ? n - 6 : 0);
    save("h2_server", "continuation-flood", small, 3, b.p, b.len);
    free(b.p);
  }
  /* a header list over the limit, trailers, PING, PRIORITY, WINDOW_UPDATE, GOAWAY */
  {
    sbuf b = {0};
    h2_preface(&b, NULL, 0);
    char big[800];
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = 0;
    const char *x[] = {"x-big", big};
    frame(&b, 0x1, 0x5, 1, hb, hpack(hb, 0, x, 1));
    const char *ct[] = {"content-type", "application/json"};
    frame(&b, 0x1, 0x4, 3, hb, hpack(hb, 1, ct, 1));
    frame(&b, 0x0, 0, 3, d, 100);
    const char *tr[] = {"x-trailer", "t"};
    size_t tn = hpack(hb, 0, tr, 1);
    frame(&b, 0x1, 0x5, 3, hb + 14, tn - 14); /* trailers: the extra field only */
    uint8_t ping[8] = {1, 2, 3, 4, 5, 6, 7, 8}, prio[5] = {0, 0, 0, 3, 16}, wu[4] = {0, 0, 0x10, 0};
    frame(&b, 0x6, 0, 0, ping, 8);
    frame(&b, 0x2, 0, 5, prio, 5);
    frame(&b, 0x8, 0, 0, wu, 4);
    uint8_t ga[8] = {0, 0, 0, 3, 0, 0, 0, 0};
    frame(&b, 0x7, 0, 0, ga, 8);
    save("h2_server", "odd-frames", small, 3, b.p, b.len);
    save("h2_server", "odd-frames-plain", plain, 3, b.p, b.len);
    free(b.p);
  }
  /* bodies: declared lengths over the server's buffer budget, an undeclared body over the limit */
  {
    sbuf b = {0};
    h2_preface(&b, NULL, 0);
    const char *cl[] = {"content-length", "2900"};
    for (uint32_t sid = 1; sid <= 5; sid += 2) frame(&b, 0x1, 0x4, sid, hb, hpack(hb, 1, cl, 1));
    for (uint32_t sid = 1; sid <= 5; sid += 2) frame(&b, 0x0, 0x1, sid, d, 2900);
    frame(&b, 0x1, 0x4, 7, hb, hpack(hb, 1, NULL, 0));
    frame(&b, 0x0, 0, 7, d, 2000);
    frame(&b, 0x0, 0x1, 7, d, 2000);
    save("h2_server", "bodies-over-budget", small, 3, b.p, b.len);
    free(b.p);
  }
  /* a closed window: responses queue until the client opens it */
  {
    sbuf b = {0};
    uint8_t win0[6] = {0, 4, 0, 0, 0, 0}; /* SETTINGS_INITIAL_WINDOW_SIZE 0 */
    h2_preface(&b, win0, 6);
    for (uint32_t sid = 1; sid <= 9; sid += 2) frame(&b, 0x1, 0x5, sid, hb, hpack(hb, 0, NULL, 0));
    uint8_t wu[4] = {0, 0, 0x08, 0};
    frame(&b, 0x8, 0, 3, wu, 4);
    uint8_t rst[4] = {0, 0, 0, 8};
    frame(&b, 0x3, 0, 5, rst, 4);
    save("h2_server", "window-closed", small, 3, b.p, b.len);
    uint8_t lent[3] = {0 | 4 | 16 | 64, 0x55, 0x66}; /* lent bodies, timers */
    save("h2_server", "window-closed-lent", lent, 3, b.p, b.len);
    free(b.p);
  }
}

/* What a server sends the client target: interim and final responses, an over-limit body, a reset, GOAWAY. */
static void h2_server_frames(void) {
  sbuf b = {0};
  uint8_t d[8192];
  memset(d, 'e', sizeof d);
  frame(&b, 0x4, 0, 0, NULL, 0);
  frame(&b, 0x4, 0x1, 0, NULL, 0);
  uint8_t early[] = {0x08, 3, '1', '0', '3'}; /* :status 103 (literal, indexed name) */
  frame(&b, 0x1, 0x4, 1, early, sizeof early);
  uint8_t ok[] = {0x88, 0x0f, 0x10, 16, 'a', 'p', 'p', 'l', 'i', 'c', 'a', 't', 'i', 'o', 'n', '/', 'j', 's', 'o', 'n'};
  frame(&b, 0x1, 0x4, 1, ok, sizeof ok);
  frame(&b, 0x0, 0x1, 1, d, 30);
  frame(&b, 0x1, 0x4, 3, ok, 1);
  frame(&b, 0x0, 0, 3, d, 4000);
  frame(&b, 0x0, 0x1, 3, d, 3000); /* 7000 bytes: over a 5000-byte limit */
  uint8_t rst[4] = {0, 0, 0, 2};
  frame(&b, 0x3, 0, 5, rst, 4);
  frame(&b, 0x1, 0x5, 7, ok, 1);
  uint8_t ga[8] = {0, 0, 0, 7, 0, 0, 0, 0};
  frame(&b, 0x7, 0, 0, ga, 8);
  uint8_t plain[4] = {0, 0x10, 0x20, 5}, small[4] = {2 | 32, 0x10, 0x20, 5}, tls[4] = {1 | 4, 0x10, 0x20, 5};
  save("h2_client", "frames", plain, 4, b.p, b.len);
  save("h2_client", "frames-small", small, 4, b.p, b.len);
  save("h2_client", "frames-tls", tls, 4, b.p, b.len);
  uint8_t l[3] = {4, 0x10, 0x20};
  save("load_h2", "frames", l, 3, b.p, b.len);
  free(b.p);
}

/* ---- h3 ---- */

/* QPACK-encoded requests and responses with the static table only (RFC 9204 appendix A). */
static size_t h3_headers_frame(uint8_t *out, const uint8_t *fields, size_t n) {
  out[0] = 0x01; /* HEADERS */
  out[1] = (uint8_t)(n + 2);
  out[2] = 0; /* required insert count */
  out[3] = 0; /* base */
  memcpy(out + 4, fields, n);
  return n + 4;
}

static const uint8_t REQ_GET[] = {0xd1, 0xd7, 0xc1, 0x50, 9, 'l', 'o', 'c', 'a', 'l', 'h', 'o', 's', 't'};
static const uint8_t REQ_POST[] = {0xd4, 0xd7, 0x51, 10, '/', 'n', 'u', 'd', 'm', '-', 's', 'd', 'm', '/',
                                   0x50, 9,    'l',  'o', 'c', 'a', 'l', 'h', 'o', 's', 't', 0xee};
static const uint8_t RSP_200[] = {0xd9, 0xee}; /* :status 200, content-type application/json */
static const uint8_t RSP_413[] = {0x5f, 0x09, 3, '4', '1', '3'};

/* One op of the scripted mode: write on bidi slot k (fin when asked). */
static void op_write(sbuf *b, int uni, int k, int fin, const uint8_t *d, size_t n) {
  uint8_t h[2] = {(uint8_t)(uni ? 1 : 0), (uint8_t)(k | (fin ? 0x80 : 0))};
  put(b, h, 2);
  put16(b, n);
  put(b, d, n);
}

static size_t data_frame(uint8_t *out, size_t n, uint8_t fill) {
  size_t o = 0;
  out[o++] = 0x00;
  if (n < 64) {
    out[o++] = (uint8_t)n;
  } else {
    out[o++] = (uint8_t)(0x40 | (n >> 8));
    out[o++] = (uint8_t)n;
  }
  memset(out + o, fill, n);
  return o + n;
}

static void h3_scripts(void) {
  uint8_t f[8192];
  size_t n;
  /* server target, mode 1 */
  for (int small = 0; small < 2; small++) {
    uint8_t head[3] = {(uint8_t)(1 | (small ? 2 : 0)), 7, 0};
    sbuf b = {0};
    n = h3_headers_frame(f, REQ_GET, sizeof REQ_GET);
    op_write(&b, 0, 0, 1, f, n);
    n = h3_headers_frame(f, REQ_POST, sizeof REQ_POST);
    n += data_frame(f + n, 1000, 'p');
    op_write(&b, 0, 1, 1, f, n);
    n = h3_headers_frame(f, REQ_POST, sizeof REQ_POST);
    op_write(&b, 0, 2, 0, f, n);
    n = data_frame(f, 4000, 'q');
    op_write(&b, 0, 2, 1, f, n);
    uint8_t reset[4] = {2, 3, 0x0c, 0x01};
    n = h3_headers_frame(f, REQ_POST, sizeof REQ_POST);
    op_write(&b, 0, 3, 0, f, n);
    put(&b, reset, sizeof reset);
    uint8_t timers = 4;
    put(&b, &timers, 1);
    save("h3_server", small ? "requests-small" : "requests", head, 3, b.p, b.len);
    /* a second control stream (type 0, SETTINGS): a connection error */
    uint8_t ctrl[] = {0x00, 0x04, 0x02, 0x06, 0x44, 0x00};
    op_write(&b, 1, 3, 0, ctrl, sizeof ctrl);
    save("h3_server", small ? "control-small" : "control", head, 3, b.p, b.len);
    free(b.p);
  }
  /* client target, mode 1: responses for the requests it made (byte 3: requests) */
  {
    uint8_t head[4] = {1, 7, 0, 4};
    sbuf b = {0};
    n = h3_headers_frame(f, RSP_200, sizeof RSP_200);
    n += data_frame(f + n, 20, 'r');
    op_write(&b, 0, 0, 1, f, n);
    n = h3_headers_frame(f, RSP_200, sizeof RSP_200);
    op_write(&b, 0, 1, 0, f, n);
    n = data_frame(f, 3000, 's');
    op_write(&b, 0, 1, 1, f, n);
    n = h3_headers_frame(f, RSP_413, sizeof RSP_413);
    op_write(&b, 0, 2, 1, f, n);
    n = h3_headers_frame(f, RSP_200, sizeof RSP_200);
    n += data_frame(f + n, 6000, 't'); /* over the client's limit */
    op_write(&b, 0, 3, 1, f, n);
    uint8_t goaway[] = {0x07, 0x01, 0x04}; /* GOAWAY, appended to the server's control stream */
    op_write(&b, 1, 0, 0, goaway, sizeof goaway);
    save("h3_client", "responses", head, 4, b.p, b.len);
    free(b.p);
  }
}

/* QPACK with the dynamic table: a field inserted on the encoder stream, a header block that refers to it
   (sent before the insert, so its stream waits, blocked, then after it). */
static void h3_qpack(void) {
  uint8_t f[256];
  size_t n;
  const uint8_t cap[] = {0x3f, 0xe1, 0x1f}; /* Set Dynamic Table Capacity 4096 */
  const uint8_t ins_auth[] = {0xc0, 9, 'l', 'o', 'c', 'a', 'l', 'h', 'o', 's', 't'}; /* :authority: localhost */
  const uint8_t ins_ct[] = {0xec, 24, 'a', 'p', 'p', 'l', 'i', 'c', 'a', 't', 'i', 'o', 'n', '/',
                            'p',  'r', 'o', 'b', 'l', 'e', 'm', '+', 'j', 's', 'o', 'n'};
  uint8_t enc[64];
  /* server target: the client's encoder stream is slot 1 of the unidirectional ones */
  {
    sbuf b = {0};
    const uint8_t req[] = {0x01, 0x06, 0x02, 0x00, 0xd1, 0xd7, 0xc1, 0x80};
    op_write(&b, 0, 0, 1, req, sizeof req); /* blocked until the insert */
    n = 0;
    memcpy(enc, cap, sizeof cap);
    n += sizeof cap;
    memcpy(enc + n, ins_auth, sizeof ins_auth);
    n += sizeof ins_auth;
    op_write(&b, 1, 1, 0, enc, n);
    op_write(&b, 0, 1, 1, req, sizeof req);
    uint8_t head[3] = {1, 9, 0};
    save("h3_server", "qpack-dynamic", head, 3, b.p, b.len);
    free(b.p);
  }
  /* client target: the server's encoder stream */
  {
    sbuf b = {0};
    const uint8_t rsp[] = {0x01, 0x04, 0x02, 0x00, 0xd9, 0x80};
    n = 0;
    memcpy(f, rsp, sizeof rsp);
    n = sizeof rsp;
    f[n++] = 0x00;
    f[n++] = 2;
    f[n++] = '{';
    f[n++] = '}';
    op_write(&b, 0, 0, 1, f, n);
    n = 0;
    memcpy(enc, cap, sizeof cap);
    n += sizeof cap;
    memcpy(enc + n, ins_ct, sizeof ins_ct);
    n += sizeof ins_ct;
    op_write(&b, 1, 1, 0, enc, n);
    op_write(&b, 0, 1, 1, rsp, sizeof rsp);
    uint8_t head[4] = {1, 9, 0, 2};
    save("h3_client", "qpack-dynamic", head, 4, b.p, b.len);
    free(b.p);
  }
}

/* Hand-made first datagrams: an unknown version, a short header to an unknown connection, Initials with tokens. */
static void h3_raw(void) {
  static uint8_t d[1300];
  sbuf b = {0};
  /* unknown version, 1200 bytes: Version Negotiation */
  memset(d, 0, sizeof d);
  uint8_t vn[] = {0xc0, 0x0a, 0x1a, 0x2a, 0x3a, 8, 1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9};
  memcpy(d, vn, sizeof vn);
  put16(&b, 1200);
  put(&b, d, 1200);
  /* short header, 60 bytes, unknown DCID: stateless reset */
  memset(d, 0x5c, 60);
  d[0] = 0x41;
  put16(&b, 60);
  put(&b, d, 60);
  /* Initials (v1) carrying a Retry-looking token (refused) and a NEW_TOKEN-looking one (ignored) */
  for (int k = 0; k < 2; k++) {
    size_t o = 0;
    memset(d, 0, sizeof d);
    d[o++] = 0xc3;
    d[o++] = 0; d[o++] = 0; d[o++] = 0; d[o++] = 1;
    d[o++] = 18;
    memset(d + o, 0x20 + k, 18);
    o += 18;
    d[o++] = 17;
    memset(d + o, 0x40 + k, 17);
    o += 17;
    d[o++] = 40; /* token length */
    d[o] = k == 0 ? 0xb6 : 0x36;
    memset(d + o + 1, 0x77, 39);
    o += 40;
    size_t rest = 1200 - o - 2;
    d[o++] = (uint8_t)(0x40 | (rest >> 8));
    d[o++] = (uint8_t)rest;
    memset(d + o, 0x99, rest);
    put16(&b, 1200);
    put(&b, d, 1200);
  }
  uint8_t head[3] = {0, 1, 0}, retry[3] = {4, 1, 0};
  save("h3_server", "stateless", head, 3, b.p, b.len);
  save("h3_server", "stateless-retry", retry, 3, b.p, b.len);
  free(b.p);
}

/* The datagrams of an in-memory handshake, each direction in the raw mode's format. */
static void h3_datagrams(uint16_t seed) {
  h3f_seed(seed);
  h3f_pair p;
  if (h3f_pair_new(&p, h3f_server_config(0), h3f_client_config()) != 0) abort();
  sbuf up = {0}, down = {0};
  int n;
  for (int round = 0; round < 16; round++) {
    int moved = 0;
    while ((n = sbh3_conn_send(p.cli, p.pkt, H3_PKT)) > 0) {
      put16(&up, (size_t)n);
      put(&up, p.pkt, (size_t)n);
      sbh3_server_recv(p.srv, p.pkt, (size_t)n, "127.0.0.1", H3_CLIENT_PORT);
      moved = 1;
    }
    while ((n = sbh3_server_send(p.srv, p.pkt, H3_PKT, p.meta, sizeof p.meta)) > 0) {
      put16(&down, (size_t)n);
      put(&down, p.pkt, (size_t)n);
      sbh3_conn_recv(p.cli, p.pkt, (size_t)n);
      moved = 1;
    }
    if (!moved) break;
  }
  uint8_t hs[3] = {0, (uint8_t)seed, (uint8_t)(seed >> 8)}, hc[4] = {0, (uint8_t)seed, (uint8_t)(seed >> 8), 1};
  save("h3_server", "handshake", hs, 3, up.p, up.len);
  save("h3_client", "handshake", hc, 4, down.p, down.len);
  free(up.p);
  free(down.p);
  h3f_pair_free(&p);
}

/* ---- sbwire and the plan ---- */

static void wire_and_plan(void) {
  uint8_t b[512];
  const char *f[] = {":method", "GET", ":path", "/", "user-agent", "AMF"};
  size_t n = fuzz_block(b, f, 3);
  uint8_t h = 0;
  save("sbwire", "block", &h, 1, b, n);
  /* plan: head, then host, sni, headers, body, ca */
  sbuf p = {0};
  uint8_t head[80] = {0};
  sbwire_put_u32(head, 0x504c4253u);
  sbwire_put_u32(head + 8, 2);
  sbwire_put_u32(head + 12, 4);
  sbwire_put_u32(head + 16, 1);
  sbwire_put_u32(head + 20, 8080);
  sbwire_put_u64(head + 24, 1000);
  sbwire_put_u64(head + 48, 5000000000ull);
  sbwire_put_u32(head + 72, 1 << 20);
  put(&p, head, 80);
  const char *host = "127.0.0.1", *sni = "localhost";
  uint8_t l[4];
  sbwire_put_u32(l, (uint32_t)strlen(host));
  put(&p, l, 4);
  put(&p, host, strlen(host));
  sbwire_put_u32(l, (uint32_t)strlen(sni));
  put(&p, l, 4);
  put(&p, sni, strlen(sni));
  sbwire_put_u32(l, (uint32_t)n);
  put(&p, l, 4);
  put(&p, b, n);
  sbwire_put_u32(l, 5);
  put(&p, l, 4);
  put(&p, "{\"a\":1}", 5);
  sbwire_put_u32(l, 0);
  put(&p, l, 4);
  save("load_plan", "closed-loop", NULL, 0, p.p, p.len);
  /* open loop at 1000 req/s for 1 s */
  double rate = 1000;
  memcpy(p.p + 56, &rate, 8);
  sbwire_put_u64(p.p + 24, 0);
  sbwire_put_u64(p.p + 32, 1000000000ull);
  save("load_plan", "open-loop", NULL, 0, p.p, p.len);
  free(p.p);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  root = argv[1];
  mkdir(root, 0755);
  size_t get1[] = {0}, post3[] = {0, 100, 5000}, many[20] = {0}, big[] = {70000, 1};
  for (int i = 0; i < 20; i++) many[i] = (size_t)(i * 37);
  h2_exchange("get", get1, 1, 0);
  h2_exchange("posts", post3, 3, 0);
  h2_exchange("many", many, 20, 0);
  h2_exchange("big-cancel", big, 2, 1);
  h2_client_hello();
  h2_frames();
  h2_server_frames();
  h3_scripts();
  h3_datagrams(7);
  h3_raw();
  h3_qpack();
  wire_and_plan();
  return 0;
}

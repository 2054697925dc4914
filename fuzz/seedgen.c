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
  sbh2_conn_close(cc);
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
  sbh2_tls_config_set_verify(cfg, SBH2_TLS_VERIFY_NONE);
  sbh2_tls *t = sbh2_tls_new(cfg, "localhost", NULL, 0);
  static uint8_t out[1 << 16];
  int n = sbh2_tls_send(t, NULL, 0, out, sizeof out);
  uint8_t h1[3] = {1, 0x11, 0x22};
  if (n > 0) save("h2_server", "client-hello", h1, 3, out, (size_t)n);
  sbh2_tls_free(t);
  sbh2_tls_config_free(cfg);
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
  h3_scripts();
  h3_datagrams(7);
  wire_and_plan();
  return 0;
}

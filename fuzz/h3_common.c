/* What the h3 fuzz targets share (see h3_common.h). */
#include "h3_common.h"

#include <gnutls/crypto.h>

#include "testkey.h"

static uint64_t rng_state = 1;

void h3f_seed(uint64_t seed) { rng_state = seed * 0x9e3779b97f4a7c15ull + 1; }

/* sbh3's rand_bytes lands here (linked with --wrap=gnutls_rnd): a seeded xorshift. */
int __wrap_gnutls_rnd(gnutls_rnd_level_t level, void *data, size_t len) {
  (void)level;
  uint8_t *p = data;
  for (size_t i = 0; i < len; i++) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    p[i] = (uint8_t)(rng_state >> 24);
  }
  return 0;
}

sbh3_config *h3f_server_config(int flags) {
  static sbh3_config *cfg[4];
  int k = flags & 3;
  if (cfg[k]) return cfg[k];
  cfg[k] = sbh3_config_new(1);
  if (!cfg[k] ||
      sbh3_config_set_cert(cfg[k], (const uint8_t *)FUZZ_CERT, sizeof FUZZ_CERT - 1, (const uint8_t *)FUZZ_KEY,
                           sizeof FUZZ_KEY - 1) != 0)
    abort();
  if (flags & H3F_SMALL) {
    sbh3_config_set_max_body(cfg[k], 3000);
    sbh3_config_set_send_queue(cfg[k], 4000, 6000, 1000);
  }
  if (flags & H3F_RETRY) sbh3_config_set_retry(cfg[k], 1);
  return cfg[k];
}

sbh3_config *h3f_client_config(void) {
  static sbh3_config *cfg;
  if (cfg) return cfg;
  cfg = sbh3_config_new(0);
  if (!cfg || sbh3_config_set_verify(cfg, SBWIRE_TLS_VERIFY_NONE) != 0) abort();
  sbh3_config_set_max_body(cfg, 5000);
  return cfg;
}

int h3f_pair_new(h3f_pair *p, sbh3_config *scfg, sbh3_config *ccfg) {
  memset(p, 0, sizeof *p);
  p->srv = sbh3_server_new(scfg, "127.0.0.1", H3_SERVER_PORT);
  p->cli = sbh3_conn_new_client(ccfg, "localhost", "127.0.0.1", H3_CLIENT_PORT, "127.0.0.1", H3_SERVER_PORT);
  return p->srv && p->cli ? 0 : -1;
}

void h3f_pair_free(h3f_pair *p) {
  sbh3_conn_free(p->cli);
  sbh3_server_free(p->srv);
  p->cli = NULL;
  p->srv = NULL;
}

void h3f_check_server_datagram(const h3f_pair *p, int n) {
  FUZZ_CHECK(n > 0 && n <= MAX_UDP);
  uint32_t id;
  uint16_t port;
  memcpy(&id, p->meta, 4);
  memcpy(&port, p->meta + 4, 2);
  FUZZ_CHECK(memchr(p->meta + 6, 0, sizeof p->meta - 6) != NULL); /* the IP text ends */
  FUZZ_CHECK(id == 0 || server_find_id(p->srv, id) != NULL);
  /* a QUIC packet the client can route: a long header, or a short one with its 17-byte id */
  ngtcp2_version_cid vc;
  int rv = ngtcp2_pkt_decode_version_cid(&vc, p->pkt, (size_t)n, 17);
  FUZZ_CHECK(rv == 0 || rv == NGTCP2_ERR_VERSION_NEGOTIATION);
}

void h3f_to_server(h3f_pair *p, const uint8_t *d, size_t n) {
  int rv = sbh3_server_recv(p->srv, d, n, "127.0.0.1", H3_CLIENT_PORT);
  FUZZ_CHECK(rv > 0 || rv == SBWIRE_ERR_DONE || rv == SBWIRE_ERR_PROTO || rv == SBWIRE_ERR_CLOSED ||
             rv == SBWIRE_ERR_TLS || rv == SBWIRE_ERR_NOMEM || rv == SBWIRE_ERR_IDLE);
}

void h3f_to_client(h3f_pair *p, const uint8_t *d, size_t n) {
  if (!p->cli) return;
  int rv = sbh3_conn_recv(p->cli, d, n);
  FUZZ_CHECK(rv >= 0 || rv == SBWIRE_ERR_PROTO || rv == SBWIRE_ERR_CLOSED || rv == SBWIRE_ERR_TLS ||
             rv == SBWIRE_ERR_NOMEM || rv == SBWIRE_ERR_IDLE);
}

void h3f_pump(h3f_pair *p) {
  for (int round = 0; round < 64; round++) {
    int moved = 0, n;
    for (int i = 0; p->cli && i < 64 && (n = sbh3_conn_send(p->cli, p->pkt, H3_PKT)) > 0; i++) {
      ngtcp2_version_cid vc;
      FUZZ_CHECK(n <= MAX_UDP && ngtcp2_pkt_decode_version_cid(&vc, p->pkt, (size_t)n, SCID_LEN) == 0);
      h3f_to_server(p, p->pkt, (size_t)n);
      moved = 1;
    }
    for (int i = 0; i < 64 && (n = sbh3_server_send(p->srv, p->pkt, H3_PKT, p->meta, sizeof p->meta)) > 0; i++) {
      h3f_check_server_datagram(p, n);
      h3f_to_client(p, p->pkt, (size_t)n);
      moved = 1;
    }
    if (!moved) return;
  }
}

int h3f_handshake(h3f_pair *p) {
  for (int i = 0; i < 8; i++) {
    h3f_pump(p);
    sbh3_conn *sc = p->srv->conns;
    if (sc && ngtcp2_conn_get_handshake_completed(p->cli->qc) && ngtcp2_conn_get_handshake_completed(sc->qc)) {
      p->conn_id = sc->id;
      h3f_pump(p); /* HANDSHAKE_DONE, the control streams */
      return 1;
    }
  }
  return 0;
}

size_t h3f_write_stream(sbh3_conn *conn, int64_t sid, const uint8_t *data, size_t len, int fin,
                        void (*deliver)(h3f_pair *, const uint8_t *, size_t), h3f_pair *p) {
  static uint8_t buf[MAX_PKT];
  size_t off = 0;
  if (!conn || conn->closed) return 0;
  for (int i = 0; i < 256; i++) {
    ngtcp2_vec v = {(uint8_t *)data + off, len - off};
    ngtcp2_ssize nd = -1;
    ngtcp2_pkt_info pi;
    uint32_t flags = fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0;
    ngtcp2_ssize n = ngtcp2_conn_writev_stream(conn->qc, NULL, &pi, buf, 1200, &nd, flags, sid, &v, 1, now_ns());
    if (n < 0) break; /* blocked, shut, unknown stream: the fuzzer asked for something QUIC refuses */
    if (nd > 0) off += (size_t)nd;
    if (n == 0) break;
    deliver(p, buf, (size_t)n);
    if (nd >= 0 && off == len) break;
    if (conn->closed) break;
  }
  return off;
}

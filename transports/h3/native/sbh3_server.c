/* sbh3 server: one endpoint that demultiplexes datagrams to the connections it accepts. */
#define _GNU_SOURCE
#include "sbh3_int.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

/* Writes u32 conn_id, u16 port, IP text + NUL into meta. */
static int write_meta(uint8_t *meta, size_t cap, uint32_t conn_id, const ngtcp2_sockaddr *sa) {
  char ip[INET6_ADDRSTRLEN];
  uint16_t port;
  if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
    port = ntohs(in6->sin6_port);
  } else {
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
    port = ntohs(in->sin_port);
  }
  size_t iplen = strlen(ip);
  if (cap < 6 + iplen + 1) return -1;
  memcpy(meta, &conn_id, 4);
  memcpy(meta + 4, &port, 2);
  memcpy(meta + 6, ip, iplen + 1);
  return 0;
}

sbh3_server *sbh3_server_new(sbh3_config *cfg, const char *local_ip, uint16_t local_port) {
  if (!cfg || !cfg->is_server || !cfg->has_cert) return NULL;
  sbh3_server *srv = calloc(1, sizeof(*srv));
  if (!srv) return NULL;
  if (parse_addr(&srv->local, &srv->local_len, local_ip, local_port) != 0) {
    free(srv);
    return NULL;
  }
  srv->cfg = cfg;
  cfg->refs++;
  srv->next_id = 1;
  rand_bytes(srv->secret, sizeof(srv->secret));
  rand_bytes(srv->token_keys[0], sizeof(srv->token_keys[0]));
  memcpy(srv->token_keys[1], srv->token_keys[0], sizeof(srv->token_keys[1]));
  srv->token_key_at = now_ns();
  return srv;
}

/* Removes c from the server's list (the caller frees it). */
static void server_unlink(sbh3_server *srv, sbh3_conn *c) {
  sbh3_conn **pp = &srv->conns;
  while (*pp && *pp != c) pp = &(*pp)->next;
  if (*pp) *pp = c->next;
  if (srv->cursor == c) srv->cursor = c->next;
  srv->nconns--;
}

void sbh3_server_free(sbh3_server *srv) {
  if (!srv) return;
  while (srv->conns) {
    sbh3_conn *c = srv->conns;
    srv->conns = c->next;
    conn_destroy(c);
  }
  sbhttp3_evq_clear(&srv->q);
  config_unref(srv->cfg);
  free(srv);
}

/* The connection a destination connection id routes to, or NULL. */
static sbh3_conn *server_find(sbh3_server *srv, const uint8_t *dcid, size_t dcidlen) {
  for (sbh3_conn *c = srv->conns; c; c = c->next)
    for (size_t i = 0; i < c->ncids; i++)
      if (c->cids[i].datalen == dcidlen && memcmp(c->cids[i].data, dcid, dcidlen) == 0) return c;
  return NULL;
}

sbh3_conn *server_find_id(sbh3_server *srv, uint32_t id) {
  for (sbh3_conn *c = srv->conns; c; c = c->next)
    if (c->id == id) return c;
  return NULL;
}

/* Token bucket for packets sent without a connection (version negotiation, stateless reset). */
static int stateless_allowed(sbh3_server *srv) {
  uint64_t now = now_ns();
  if (now - srv->sr_window >= NGTCP2_SECONDS) {
    srv->sr_window = now;
    srv->sr_count = 0;
  }
  if (srv->sr_count >= STATELESS_PER_SEC || srv->sq_count >= STATELESS_QUEUE) return 0;
  srv->sr_count++;
  return 1;
}

/* The next free slot of the stateless queue, addressed to `to`. */
static stateless_pkt_t *stateless_slot(sbh3_server *srv, const ngtcp2_sockaddr_union *to) {
  stateless_pkt_t *p = &srv->sq[(srv->sq_head + srv->sq_count) % STATELESS_QUEUE];
  p->addr = *to;
  return p;
}

/* Queues a Version Negotiation packet for an unsupported version. */
static void send_version_negotiation(sbh3_server *srv, const ngtcp2_version_cid *vc, const ngtcp2_sockaddr_union *to) {
  if (!stateless_allowed(srv)) return;
  stateless_pkt_t *p = stateless_slot(srv, to);
  uint32_t sv[5] = {0x1a2a3a4au};
  memcpy(sv + 1, srv->cfg->versions, srv->cfg->nversions * sizeof(uint32_t));
  uint8_t r;
  rand_bytes(&r, 1);
  ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(p->data, sizeof(p->data), r, vc->scid, vc->scidlen, vc->dcid,
                                                        vc->dcidlen, sv, 1 + srv->cfg->nversions);
  if (n <= 0) return;
  p->len = (size_t)n;
  srv->sq_count++;
}

/* Queues a stateless reset for a short-header packet of an unknown connection. */
static void send_stateless_reset(sbh3_server *srv, const uint8_t *data, size_t len, const ngtcp2_sockaddr_union *to) {
  /* Short header: 1 byte, then our DCID. Answer only with something smaller than what came in. */
  if (len < 1 + SCID_LEN + 22 || !stateless_allowed(srv)) return;
  ngtcp2_cid cid;
  ngtcp2_cid_init(&cid, data + 1, SCID_LEN);
  uint8_t token[NGTCP2_STATELESS_RESET_TOKENLEN];
  if (ngtcp2_crypto_generate_stateless_reset_token(token, srv->secret, sizeof(srv->secret), &cid) != 0) return;
  size_t total = len - 1 < 43 ? len - 1 : 43;
  size_t randlen = total - 1 - NGTCP2_STATELESS_RESET_TOKENLEN;
  uint8_t rnd[64];
  rand_bytes(rnd, randlen);
  stateless_pkt_t *p = stateless_slot(srv, to);
  ngtcp2_ssize n = ngtcp2_pkt_write_stateless_reset(p->data, sizeof(p->data), token, rnd, randlen);
  if (n <= 0) return;
  p->len = (size_t)n;
  srv->sq_count++;
}

/* Creates the server connection for a client's first Initial (odcid: the original DCID when it came back after a Retry). */
/* The key that seals new tokens, rotated every TOKEN_KEY_TTL (the previous one still opens tokens). */
static const uint8_t *token_key(sbh3_server *srv, uint64_t now) {
  if (now - srv->token_key_at >= TOKEN_KEY_TTL) {
    memcpy(srv->token_keys[1], srv->token_keys[0], sizeof(srv->token_keys[0]));
    rand_bytes(srv->token_keys[0], sizeof(srv->token_keys[0]));
    srv->token_key_at = now;
  }
  return srv->token_keys[0];
}

/* Queues a NEW_TOKEN for c's client (a token bound to its address, for a later connection). */
static void server_new_token(sbh3_conn *c) {
  uint8_t token[NGTCP2_CRYPTO_MAX_REGULAR_TOKENLEN];
  uint64_t now = now_ns();
  ngtcp2_ssize n = ngtcp2_crypto_generate_regular_token(token, token_key(c->srv, now), 32, &c->ps.remote_addrbuf.sa,
                                                        c->ps.path.remote.addrlen, now);
  if (n > 0 && ngtcp2_conn_submit_new_token(c->qc, token, (size_t)n) == 0) {
    c->st[SBH3_STAT_NEW_TOKENS]++;
    c->srv->st[SBH3_STAT_NEW_TOKENS]++;
  }
}

/* ngtcp2: the connection's handshake completed (see conn_handshake_completed); a NEW_TOKEN follows when the server validates addresses. */
static int server_handshake_completed(ngtcp2_conn *qc, void *user_data) {
  int rv = conn_handshake_completed(qc, user_data);
  sbh3_conn *c = user_data;
  if (rv == 0 && c->cfg->retry) server_new_token(c);
  return rv;
}

enum { TOKEN_NONE, TOKEN_RETRY_OK, TOKEN_REGULAR_OK, TOKEN_RETRY_BAD };

/* Checks the token of a client's first Initial with the current and the previous key; *odcid gets a Retry token's original DCID. */
static int token_check(sbh3_server *srv, const ngtcp2_pkt_hd *hd, const ngtcp2_sockaddr_union *from,
                       ngtcp2_socklen fromlen, ngtcp2_cid *odcid) {
  if (hd->token.len == 0) return TOKEN_NONE;
  uint64_t now = now_ns();
  token_key(srv, now);
  for (int k = 0; k < 2; k++) {
    const uint8_t *key = srv->token_keys[k];
    if (hd->token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY &&
        ngtcp2_crypto_verify_retry_token(odcid, hd->token.base, hd->token.len, key, 32, hd->version, &from->sa, fromlen,
                                         &hd->dcid, RETRY_TOKEN_TTL, now) == 0)
      return TOKEN_RETRY_OK;
    if (hd->token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_REGULAR &&
        ngtcp2_crypto_verify_regular_token(hd->token.base, hd->token.len, key, 32, &from->sa, fromlen,
                                           REGULAR_TOKEN_TTL, now) == 0)
      return TOKEN_REGULAR_OK;
  }
  /* A bad Retry token is an error (RFC 9000 §8.1.3); a stale NEW_TOKEN one is just no token. */
  return hd->token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY ? TOKEN_RETRY_BAD : TOKEN_NONE;
}

/*
 * Queues a Retry for a client's first Initial: a new connection id and a token bound to the client's address.
 * A Retry is far smaller than the padded Initial it answers, so it cannot amplify: only the queue bounds it,
 * not the per-second allowance of stateless resets (a flood of Initials would use that up before real clients).
 */
static void send_retry(sbh3_server *srv, const ngtcp2_pkt_hd *hd, const ngtcp2_sockaddr_union *from,
                       ngtcp2_socklen fromlen) {
  if (srv->sq_count >= STATELESS_QUEUE) return;
  uint64_t now = now_ns();
  ngtcp2_cid scid;
  scid.datalen = SCID_LEN;
  /* The Retry's connection id must differ from the one the client chose (ngtcp2 asserts it): a client
   * that guessed the next random bytes would otherwise abort the server. */
  do rand_bytes(scid.data, scid.datalen);
  while (ngtcp2_cid_eq(&scid, &hd->dcid));
  uint8_t token[NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN];
  ngtcp2_ssize tl = ngtcp2_crypto_generate_retry_token(token, token_key(srv, now), 32, hd->version, &from->sa, fromlen,
                                                       &scid, &hd->dcid, now);
  if (tl < 0) return;
  stateless_pkt_t *p = stateless_slot(srv, from);
  ngtcp2_ssize n = ngtcp2_crypto_write_retry(p->data, sizeof(p->data), hd->version, &hd->scid, &scid, &hd->dcid, token,
                                             (size_t)tl);
  if (n <= 0) return;
  p->len = (size_t)n;
  srv->sq_count++;
  srv->st[SBH3_STAT_RETRIES]++;
}

/* Queues an Initial CONNECTION_CLOSE with this transport error for a client's first Initial, keeping no state. */
static void send_initial_close(sbh3_server *srv, const ngtcp2_pkt_hd *hd, const ngtcp2_sockaddr_union *from,
                               uint64_t code) {
  if (!stateless_allowed(srv)) return;
  stateless_pkt_t *p = stateless_slot(srv, from);
  ngtcp2_ssize n =
      ngtcp2_crypto_write_connection_close(p->data, sizeof(p->data), hd->version, &hd->scid, &hd->dcid, code, NULL, 0);
  if (n <= 0) return;
  p->len = (size_t)n;
  srv->sq_count++;
}

static sbh3_conn *server_accept(sbh3_server *srv, const ngtcp2_pkt_hd *hd, const ngtcp2_sockaddr_union *from,
                                ngtcp2_socklen fromlen, const ngtcp2_cid *odcid) {
  sbh3_conn *c = conn_alloc(srv->cfg);
  if (!c) return NULL;
  c->srv = srv;
  c->q = &srv->q;
  c->id = srv->next_id++;
  if (srv->next_id == 0) srv->next_id = 1;
  memcpy(&c->ps.local_addrbuf, &srv->local, sizeof(srv->local));
  c->ps.path.local.addrlen = srv->local_len;
  memcpy(&c->ps.remote_addrbuf, from, sizeof(*from));
  c->ps.path.remote.addrlen = fromlen;
  ngtcp2_cid scid;
  scid.datalen = SCID_LEN;
  rand_bytes(scid.data, scid.datalen);
  ngtcp2_callbacks cb;
  fill_callbacks(&cb, 1);
  cb.handshake_completed = server_handshake_completed;
  ngtcp2_settings settings;
  ngtcp2_transport_params params;
  fill_settings(&settings, &params, srv->cfg);
  settings.token = hd->token;
  params.original_dcid = odcid ? *odcid : hd->dcid;
  if (odcid) {
    params.retry_scid = hd->dcid;
    params.retry_scid_present = 1;
  }
  params.stateless_reset_token_present = 1;
  if (ngtcp2_crypto_generate_stateless_reset_token(params.stateless_reset_token, srv->secret, sizeof(srv->secret),
                                                   &scid) != 0 ||
      ngtcp2_conn_server_new(&c->qc, &hd->scid, &scid, &c->ps.path, hd->version, &cb, &settings, &params, NULL, c) !=
          0 ||
      tls_init(c, NULL) != 0) {
    conn_destroy(c);
    return NULL;
  }
  cid_add(c, &scid);
  cid_add(c, &hd->dcid);
  c->next = srv->conns;
  srv->conns = c;
  srv->nconns++;
  conn_handshake_begin(c);
  return c;
}

/* Feeds one datagram from a socket address; see sbh3_server_recv. */
int server_recv_from(sbh3_server *srv, const uint8_t *data, size_t len, const ngtcp2_sockaddr_union *fromp,
                     ngtcp2_socklen fromlen, uint8_t ecn) {
  ngtcp2_sockaddr_union from = *fromp;
  if (len == 0) return SBWIRE_ERR_PROTO;
  if (len > srv->cfg->max_recv_udp_payload) {
    srv->st[SBH3_STAT_DGRAMS_OVERSIZE]++;
    return SBWIRE_ERR_DONE;
  }
  ngtcp2_version_cid vc;
  int rv = ngtcp2_pkt_decode_version_cid(&vc, data, len, SCID_LEN);
  if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
    if (len >= NGTCP2_MAX_UDP_PAYLOAD_SIZE) send_version_negotiation(srv, &vc, &from);
    return SBWIRE_ERR_DONE;
  }
  if (rv != 0) return SBWIRE_ERR_PROTO;
  sbh3_conn *c = server_find(srv, vc.dcid, vc.dcidlen);
  int fresh = 0;
  if (!c) {
    ngtcp2_pkt_hd hd;
    if (ngtcp2_accept(&hd, data, len) != 0) {
      if (!(data[0] & 0x80)) send_stateless_reset(srv, data, len, &from);
      return SBWIRE_ERR_PROTO;
    }
    if (srv->shutting_down || srv->nconns >= MAX_CONNS) return SBWIRE_ERR_CLOSED;
    ngtcp2_cid odcid;
    int token = token_check(srv, &hd, &from, fromlen, &odcid);
    if (token == TOKEN_RETRY_BAD) {
      send_initial_close(srv, &hd, &from, NGTCP2_INVALID_TOKEN);
      return SBWIRE_ERR_PROTO;
    }
    /* With Retry on, or past MAX_HANDSHAKES handshakes at once, a client without a token proves its address
       first (RFC 9000 §8.1.2): replayed or spoofed Initials then cost a Retry each, never a connection. */
    if (token == TOKEN_NONE && (srv->cfg->retry || srv->handshaking >= MAX_HANDSHAKES)) {
      send_retry(srv, &hd, &from, fromlen);
      return SBWIRE_ERR_DONE;
    }
    c = server_accept(srv, &hd, &from, fromlen, token == TOKEN_RETRY_OK ? &odcid : NULL);
    if (!c) return SBWIRE_ERR_NOMEM;
    fresh = 1;
  }
  if (c->closed) return SBWIRE_ERR_CLOSED;
  ngtcp2_path path = c->ps.path;
  path.remote.addr = (ngtcp2_sockaddr *)&from;
  path.remote.addrlen = fromlen;
  rv = conn_read(c, &path, data, len, ecn, now_ns());
  if (rv != 0) {
    if (fresh && (rv == NGTCP2_ERR_DROP_CONN || rv == NGTCP2_ERR_RETRY)) {
      /* Not a first packet to answer (undecryptable, or nothing in it): forget it without a trace. */
      server_unlink(srv, c);
      conn_destroy(c);
      return SBWIRE_ERR_PROTO;
    }
    /* Any other failure, a first packet's included (bad transport parameters), closes with its code. */
    conn_fail(c, rv);
    return map_liberr(rv);
  }
  memcpy(&c->ps.remote_addrbuf, &from, sizeof(from));
  c->ps.path.remote.addrlen = fromlen;
  return (int)c->id;
}

int sbh3_server_recv(sbh3_server *srv, const uint8_t *data, size_t len, const char *from_ip, uint16_t from_port) {
  if (!srv || !data) return SBWIRE_ERR_INVALID;
  ngtcp2_sockaddr_union from;
  ngtcp2_socklen fromlen;
  if (parse_addr(&from, &fromlen, from_ip, from_port) != 0) return SBWIRE_ERR_INVALID;
  return server_recv_from(srv, data, len, &from, fromlen, NGTCP2_ECN_NOT_ECT);
}

/* Writes the next datagram of any connection into out, its destination into *to; returns length or DONE. */
int server_write(sbh3_server *srv, uint8_t *out, size_t cap, uint64_t now, const ngtcp2_sockaddr_union **to,
                 uint32_t *conn_id, uint8_t *ecn) {
  *ecn = NGTCP2_ECN_NOT_ECT;
  if (srv->sq_count) {
    stateless_pkt_t *p = &srv->sq[srv->sq_head];
    if (cap < p->len) return SBWIRE_ERR_BUFFER_TOO_SHORT;
    memcpy(out, p->data, p->len);
    *to = &p->addr;
    *conn_id = 0;
    srv->sq_head = (srv->sq_head + 1) % STATELESS_QUEUE;
    srv->sq_count--;
    return (int)p->len;
  }
  for (size_t i = 0; i < srv->nconns; i++) {
    if (!srv->cursor) srv->cursor = srv->conns;
    sbh3_conn *c = srv->cursor;
    if (!c) break;
    int n = conn_write(c, out, cap, now, ecn);
    if (n > 0) {
      *to = &c->ps.remote_addrbuf;
      *conn_id = c->id;
      return n;
    }
    if (n != SBWIRE_ERR_DONE) return n;
    srv->cursor = c->next;
  }
  return SBWIRE_ERR_DONE;
}

int sbh3_server_send(sbh3_server *srv, uint8_t *out, size_t cap, uint8_t *meta, size_t meta_cap) {
  if (!srv || !out || !meta) return SBWIRE_ERR_INVALID;
  if (meta_cap < 6 + INET6_ADDRSTRLEN) return SBWIRE_ERR_BUFFER_TOO_SHORT;
  const ngtcp2_sockaddr_union *to;
  uint32_t id;
  uint8_t ecn;
  int n = server_write(srv, out, cap, now_ns(), &to, &id, &ecn);
  if (n < 0) return n;
  write_meta(meta, meta_cap, id, &to->sa);
  return n;
}

int sbh3_server_timeout_ms(sbh3_server *srv) {
  if (!srv) return SBWIRE_ERR_INVALID;
  uint64_t min = UINT64_MAX;
  for (sbh3_conn *c = srv->conns; c; c = c->next) {
    uint64_t d = conn_deadline(c);
    if (d < min) min = d;
  }
  return deadline_to_ms(min);
}

int sbh3_server_on_timeout(sbh3_server *srv) {
  if (!srv) return SBWIRE_ERR_INVALID;
  uint64_t now = now_ns();
  sbh3_conn *c = srv->conns;
  while (c) {
    sbh3_conn *next = c->next;
    conn_expire(c, now);
    if (c->closed && !c->close_pending && c->close_deadline <= now) {
      server_unlink(srv, c);
      conn_destroy(c);
    }
    c = next;
  }
  return 0;
}

int sbh3_server_poll(sbh3_server *srv, uint8_t *buf, size_t cap) {
  if (!srv || !buf || cap < 8) return SBWIRE_ERR_INVALID;
  return (int)sbhttp3_evq_poll(&srv->q, buf, cap);
}

int sbh3_server_respond(sbh3_server *srv, uint32_t conn_id, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len,
                        const uint8_t *body, size_t body_len) {
  if (!srv || !hdrs || (body_len && !body)) return SBWIRE_ERR_INVALID;
  sbh3_conn *c = server_find_id(srv, conn_id);
  if (!c) return SBWIRE_ERR_NOT_FOUND;
  if (c->closed) return SBWIRE_ERR_CLOSED;
  stream_t *s = sbhttp3_stream_find(&c->h3, stream_id);
  if (!s || !s->done || s->out) return SBWIRE_ERR_NOT_FOUND;
  /* Room in the send queues (one body is always let in, however large, when its queue is empty). */
  if (body_len && ((c->queued && c->queued + body_len > srv->cfg->max_conn_queued) ||
                   (srv->queued && srv->queued + body_len > srv->cfg->max_total_queued)))
    return SBWIRE_ERR_STREAM_BLOCKED;
  int rv = sbhttp3_respond(&c->h3, s, hdrs, hdrs_len, body, body_len);
  if (rv != 0) return rv;
  if (body_len) {
    if (!c->queued) {
      c->progress_at = now_ns();
      c->acked = 0;
    }
    c->queued += body_len;
    srv->queued += body_len;
  }
  return 0;
}

int sbh3_server_refuse(sbh3_server *srv, uint32_t conn_id, int64_t stream_id) {
  if (!srv) return SBWIRE_ERR_INVALID;
  sbh3_conn *c = server_find_id(srv, conn_id);
  if (!c) return SBWIRE_ERR_NOT_FOUND;
  if (c->closed) return SBWIRE_ERR_CLOSED;
  stream_t *s = sbhttp3_stream_find(&c->h3, stream_id);
  if (!s || !s->done || s->out) return SBWIRE_ERR_NOT_FOUND;
  /* no answer: reset the stream both ways; it is freed when QUIC closes it */
  if (ngtcp2_conn_shutdown_stream(c->qc, stream_id, NGHTTP3_H3_EXCESSIVE_LOAD) != 0) return SBWIRE_ERR_NOT_FOUND;
  return 0;
}

int sbh3_server_shutdown(sbh3_server *srv) {
  if (!srv) return SBWIRE_ERR_INVALID;
  srv->shutting_down = 1;
  for (sbh3_conn *c = srv->conns; c; c = c->next)
    if (c->h3.hc && !c->closed) nghttp3_conn_submit_shutdown_notice(c->h3.hc);
  return 0;
}

int sbh3_server_close_all(sbh3_server *srv) {
  if (!srv) return SBWIRE_ERR_INVALID;
  srv->shutting_down = 1;
  for (sbh3_conn *c = srv->conns; c; c = c->next) {
    if (c->closed) continue;
    close_locally(c, NGHTTP3_H3_NO_ERROR, "Server closed");
  }
  return 0;
}

int sbh3_server_open_streams(sbh3_server *srv) {
  if (!srv) return SBWIRE_ERR_INVALID;
  int n = 0;
  for (sbh3_conn *c = srv->conns; c; c = c->next)
    if (!c->closed) n += c->h3.nstreams;
  return n;
}

int sbh3_server_stats(sbh3_server *srv, uint32_t conn_id, uint64_t *out, size_t n) {
  if (!srv) return SBWIRE_ERR_INVALID;
  if (conn_id == 0) return stats_copy(srv->st, NULL, srv->queued, out, n);
  sbh3_conn *c = server_find_id(srv, conn_id);
  if (!c) return SBWIRE_ERR_NOT_FOUND;
  return stats_copy(c->st, c, c->queued, out, n);
}

int sbh3_server_conn_count(sbh3_server *srv) {
  if (!srv) return SBWIRE_ERR_INVALID;
  return (int)srv->nconns;
}

int sbh3_server_peer(sbh3_server *srv, uint32_t conn_id, uint8_t *meta, size_t meta_cap) {
  if (!srv || !meta) return SBWIRE_ERR_INVALID;
  sbh3_conn *c = server_find_id(srv, conn_id);
  if (!c) return SBWIRE_ERR_NOT_FOUND;
  if (write_meta(meta, meta_cap, conn_id, &c->ps.remote_addrbuf.sa) != 0) return SBWIRE_ERR_BUFFER_TOO_SHORT;
  return 0;
}

int sbh3_server_tls_state(sbh3_server *srv, uint32_t conn_id) {
  sbh3_conn *c = srv ? server_find_id(srv, conn_id) : NULL;
  return c ? tls_state(c) : SBWIRE_ERR_NOT_FOUND;
}

int sbh3_server_tls_info(sbh3_server *srv, uint32_t conn_id, int kind, uint8_t *buf, size_t cap) {
  sbh3_conn *c = srv ? server_find_id(srv, conn_id) : NULL;
  if (!c) return SBWIRE_ERR_NOT_FOUND;
  return buf ? tls_info(c, kind, buf, cap) : SBWIRE_ERR_INVALID;
}

int64_t sbh3_server_handshake_bytes(sbh3_server *srv, uint32_t conn_id, int sent) {
  sbh3_conn *c = srv ? server_find_id(srv, conn_id) : NULL;
  if (!c) return SBWIRE_ERR_NOT_FOUND;
  return (int64_t)(sent ? c->hs_sent : c->hs_recv);
}

int sbh3_server_export(sbh3_server *srv, uint32_t conn_id, const uint8_t *label, size_t label_len,
                       const uint8_t *context, size_t context_len, uint8_t *out, size_t out_len) {
  sbh3_conn *c = srv ? server_find_id(srv, conn_id) : NULL;
  if (!c) return SBWIRE_ERR_NOT_FOUND;
  return tls_export(c, label, label_len, context, context_len, out, out_len);
}

/* sbh3 client: starting a connection, submitting requests, reading responses. */
#define _GNU_SOURCE
#include "sbh3_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>

void (*client_params_hook)(ngtcp2_transport_params *params);

int sbh3_version(uint8_t *buf, size_t cap) {
  if (!buf) return SBWIRE_ERR_INVALID;
  int n = snprintf((char *)buf, cap, "sbh3/%s ngtcp2/%s nghttp3/%s gnutls/%s", SBH3_VERSION,
                   ngtcp2_version(0)->version_str, nghttp3_version(0)->version_str, gnutls_check_version(NULL));
  if (n < 0) return SBWIRE_ERR_INTERNAL;
  if ((size_t)n >= cap) return SBWIRE_ERR_BUFFER_TOO_SHORT;
  return n;
}

sbh3_conn *sbh3_conn_new_client(sbh3_config *cfg, const char *server_name, const char *local_ip, uint16_t local_port,
                                const char *remote_ip, uint16_t remote_port) {
  if (!cfg || cfg->is_server) return NULL;
  sbh3_conn *c = conn_alloc(cfg);
  if (!c) return NULL;
  if (parse_addr(&c->ps.local_addrbuf, &c->ps.path.local.addrlen, local_ip, local_port) != 0 ||
      parse_addr(&c->ps.remote_addrbuf, &c->ps.path.remote.addrlen, remote_ip, remote_port) != 0) {
    conn_destroy(c);
    return NULL;
  }
  ngtcp2_cid scid, dcid;
  scid.datalen = 17;
  rand_bytes(scid.data, scid.datalen);
  dcid.datalen = 18;
  rand_bytes(dcid.data, dcid.datalen);
  ngtcp2_callbacks cb;
  fill_callbacks(&cb, 0);
  ngtcp2_settings settings;
  ngtcp2_transport_params params;
  fill_settings(&settings, &params, cfg);
  if (client_params_hook) client_params_hook(&params);
  if (cfg->token.len) settings.token = (ngtcp2_vec){cfg->token.p, cfg->token.len};
  if (ngtcp2_conn_client_new(&c->qc, &dcid, &scid, &c->ps.path, NGTCP2_PROTO_VER_V1, &cb, &settings, &params, NULL,
                             c) != 0) {
    conn_destroy(c);
    return NULL;
  }
  if (tls_init(c, server_name) != 0) {
    conn_destroy(c);
    return NULL;
  }
  return c;
}

void sbh3_conn_free(sbh3_conn *conn) {
  if (!conn || conn->srv) return;
  conn_destroy(conn);
}

int sbh3_conn_recv(sbh3_conn *c, const uint8_t *data, size_t len) {
  if (!c || !data || c->srv) return SBWIRE_ERR_INVALID;
  if (c->closed) return SBWIRE_ERR_CLOSED;
  int rv = conn_read(c, &c->ps.path, data, len, NGTCP2_ECN_NOT_ECT, now_ns());
  if (rv != 0) {
    conn_fail(c, rv);
    return map_liberr(rv);
  }
  return c->q->n > INT32_MAX ? INT32_MAX : (int)c->q->n;
}

int sbh3_conn_send(sbh3_conn *c, uint8_t *out, size_t cap) {
  if (!c || !out || c->srv) return SBWIRE_ERR_INVALID;
  return conn_write(c, out, cap, now_ns(), NULL);
}

int sbh3_conn_timeout_ms(sbh3_conn *c) {
  if (!c) return SBWIRE_ERR_INVALID;
  return deadline_to_ms(conn_deadline(c));
}

int sbh3_conn_on_timeout(sbh3_conn *c) {
  if (!c || c->srv) return SBWIRE_ERR_INVALID;
  if (c->closed) return SBWIRE_ERR_CLOSED;
  conn_expire(c, now_ns());
  return c->closed ? SBWIRE_ERR_CLOSED : 0;
}

int64_t sbh3_conn_request(sbh3_conn *c, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body, size_t body_len) {
  if (!c || c->srv || !hdrs || (body_len && !body)) return SBWIRE_ERR_INVALID;
  if (c->closed || c->h3.goaway) return SBWIRE_ERR_CLOSED;
  if (!c->h3.hc) return SBWIRE_ERR_STREAM_BLOCKED;
  int64_t sid;
  int rv = ngtcp2_conn_open_bidi_stream(c->qc, &sid, NULL);
  c->want_credit = rv == NGTCP2_ERR_STREAM_ID_BLOCKED;
  if (rv != 0) return rv == NGTCP2_ERR_STREAM_ID_BLOCKED ? SBWIRE_ERR_STREAM_BLOCKED : SBWIRE_ERR_INTERNAL;
  rv = sbhttp3_request(&c->h3, sid, hdrs, hdrs_len, body, body_len);
  if (rv != 0) {
    ngtcp2_conn_shutdown_stream(c->qc, sid, NGHTTP3_H3_INTERNAL_ERROR);
    return rv;
  }
  return sid;
}

int sbh3_conn_cancel(sbh3_conn *c, int64_t stream_id) {
  if (!c) return SBWIRE_ERR_INVALID;
  if (c->closed) return SBWIRE_ERR_CLOSED;
  stream_t *s = sbhttp3_stream_find(&c->h3, stream_id);
  if (!s) return SBWIRE_ERR_NOT_FOUND;
  s->done = 1; /* the caller gave up on it: no RESET event */
  if (ngtcp2_conn_shutdown_stream(c->qc, stream_id, NGHTTP3_H3_REQUEST_CANCELLED) != 0) return SBWIRE_ERR_NOT_FOUND;
  return 0;
}

int sbh3_conn_poll(sbh3_conn *c, uint8_t *buf, size_t cap) {
  if (!c || !buf || cap < 8) return SBWIRE_ERR_INVALID;
  return (int)sbhttp3_evq_poll(c->q, buf, cap);
}


int sbh3_conn_shutdown(sbh3_conn *c) {
  if (!c) return SBWIRE_ERR_INVALID;
  if (c->closed) return 0;
  close_locally(c, NGHTTP3_H3_NO_ERROR, "Connection closed locally");
  return 0;
}

int sbh3_conn_error(sbh3_conn *c, uint8_t *buf, size_t cap) {
  if (!c || !buf || cap == 0) return SBWIRE_ERR_INVALID;
  size_t n = strlen(c->errmsg);
  if (n >= cap) n = cap - 1;
  memcpy(buf, c->errmsg, n);
  buf[n] = 0;
  return (int)n;
}

int sbh3_conn_stream_count(sbh3_conn *c) {
  if (!c) return SBWIRE_ERR_INVALID;
  return c->h3.nstreams;
}


int sbh3_conn_token(sbh3_conn *c, uint8_t *buf, size_t cap) {
  if (!c || !buf) return SBWIRE_ERR_INVALID;
  if (!c->token.len) return SBWIRE_ERR_DONE;
  if (c->token.len > cap || c->token.len > INT32_MAX) return SBWIRE_ERR_BUFFER_TOO_SHORT;
  memcpy(buf, c->token.p, c->token.len);
  return (int)c->token.len;
}

int sbh3_conn_update_key(sbh3_conn *c) {
  if (!c) return SBWIRE_ERR_INVALID;
  if (c->closed) return SBWIRE_ERR_CLOSED;
  int rv = ngtcp2_conn_initiate_key_update(c->qc, now_ns());
  if (rv == 0) {
    c->own_update = 1;
    c->st[SBH3_STAT_KEY_UPDATES]++;
  }
  return rv == 0 ? 0 : rv == NGTCP2_ERR_INVALID_STATE ? SBWIRE_ERR_STREAM_BLOCKED : SBWIRE_ERR_INTERNAL;
}

int sbh3_conn_stats(sbh3_conn *c, uint64_t *out, size_t n) {
  if (!c) return SBWIRE_ERR_INVALID;
  return stats_copy(c->st, c, c->queued, out, n);
}

int64_t sbh3_conn_first_response_ago_us(sbh3_conn *c) {
  if (!c || c->srv) return SBWIRE_ERR_INVALID;
  if (!c->h3.first_header_ns) return SBWIRE_ERR_DONE;
  return (int64_t)((now_ns() - c->h3.first_header_ns) / 1000);
}

int sbh3_conn_resume(sbh3_conn *c, const uint8_t *ticket, size_t len) {
  if (!c || c->srv) return SBWIRE_ERR_INVALID;
  ngtcp2_transport_params p;
  int rv = tls_resume(c, ticket, len, &p);
  if (rv != 0 || !c->cfg->early_data) return rv;
  ngtcp2_conn_set_early_remote_transport_params(c->qc, &p);
  if (setup_http(c) != 0) return SBWIRE_ERR_INTERNAL;
  c->early_attempt = 1;
  return 0;
}

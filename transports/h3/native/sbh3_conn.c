/*
 * sbh3 connection core: one QUIC connection with its HTTP/3 session and TLS session, shared by
 * the client and the server. Written for this project; the shape of the ngtcp2/nghttp3 glue
 * follows the libraries' documented 0.12/0.8 API.
 */
#define _GNU_SOURCE
#include "sbh3_int.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

void set_err(sbh3_conn *c, const char *fmt, const char *detail) {
  if (c->errmsg[0]) return;
  snprintf(c->errmsg, sizeof(c->errmsg), fmt, detail ? detail : "");
}

/* Counts one datagram of n bytes in the counters at `base` (SENT or RECV triple) of c and its server. */
void conn_count(sbh3_conn *c, int base, size_t n) {
  uint64_t *sets[2] = {c->st, c->srv ? c->srv->st : NULL};
  for (int i = 0; i < 2 && sets[i]; i++) {
    sets[i][base]++;
    sets[i][base + 1] += n;
    if (n > sets[i][base + 2]) sets[i][base + 2] = n;
  }
}

void cid_add(sbh3_conn *c, const ngtcp2_cid *cid) {
  if (c->ncids < MAX_CIDS) c->cids[c->ncids++] = *cid;
}

/* Forgets a connection id of c (server). */
static void cid_remove(sbh3_conn *c, const ngtcp2_cid *cid) {
  for (size_t i = 0; i < c->ncids; i++) {
    if (ngtcp2_cid_eq(&c->cids[i], cid)) {
      c->cids[i] = c->cids[--c->ncids];
      return;
    }
  }
}

int map_liberr(int rv) {
  switch (rv) {
  case NGTCP2_ERR_CRYPTO:
    return SBWIRE_ERR_TLS;
  case NGTCP2_ERR_IDLE_CLOSE:
    return SBWIRE_ERR_IDLE;
  case NGTCP2_ERR_DRAINING:
  case NGTCP2_ERR_CLOSING:
    return SBWIRE_ERR_CLOSED;
  case NGTCP2_ERR_NOMEM:
    return SBWIRE_ERR_NOMEM;
  default:
    return SBWIRE_ERR_PROTO;
  }
}

/* Describes why the peer closed the connection. */
static void describe_peer_close(sbh3_conn *c) {
  ngtcp2_connection_close_error e;
  ngtcp2_conn_get_connection_close_error(c->qc, &e);
  char detail[160];
  if (e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT && e.error_code >= 0x100 &&
      e.error_code <= 0x1ff) {
    snprintf(detail, sizeof(detail), "TLS alert %u (%s)", (unsigned)(e.error_code - 0x100),
             gnutls_alert_get_strname((gnutls_alert_description_t)(e.error_code - 0x100))
                 ? gnutls_alert_get_strname((gnutls_alert_description_t)(e.error_code - 0x100))
                 : "unknown");
  } else {
    snprintf(detail, sizeof(detail), "%s error 0x%llx",
             e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION ? "application" : "transport",
             (unsigned long long)e.error_code);
  }
  set_err(c, "Peer closed the connection: %s", detail);
}

void conn_handshake_begin(sbh3_conn *c) {
  if (c->in_handshake || !c->srv) return;
  c->in_handshake = 1;
  c->srv->handshaking++;
}

/* Takes c out of its server's handshakes, once: its handshake completed, it closed or it is being freed. */
static void conn_handshake_over(sbh3_conn *c) {
  if (!c->in_handshake) return;
  c->in_handshake = 0;
  c->srv->handshaking--;
}

/* Marks the connection closed, prepares CONNECTION_CLOSE when one is due, posts CLOSED. */
void conn_fail(sbh3_conn *c, int rv) {
  if (c->closed) return;
  c->closed = 1;
  conn_handshake_over(c);
  uint64_t now = now_ns();
  int code = rv == LOCAL_CLOSE ? SBWIRE_ERR_CLOSED : map_liberr(rv);
  if (rv == NGTCP2_ERR_DRAINING) {
    describe_peer_close(c);
    /* A peer closing during the handshake with a TLS alert is a TLS failure. */
    ngtcp2_connection_close_error e;
    ngtcp2_conn_get_connection_close_error(c->qc, &e);
    if (e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT && e.error_code >= 0x100 &&
        e.error_code <= 0x1ff)
      code = SBWIRE_ERR_TLS;
  } else if (rv == NGTCP2_ERR_IDLE_CLOSE) {
    set_err(c, "Connection idle timeout%s", "");
  } else if (rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
    set_err(c, "Handshake timed out%s", "");
  } else if (rv == NGTCP2_ERR_DROP_CONN) {
    set_err(c, "Connection dropped%s", "");
  } else {
    if (rv == NGTCP2_ERR_CRYPTO) {
      unsigned status = 0;
      if (c->tls) status = gnutls_session_get_verify_cert_status(c->tls);
      if (status) {
        gnutls_datum_t out = {0};
        if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) == 0) {
          set_err(c, "TLS handshake failed: %s", (const char *)out.data);
          gnutls_free(out.data);
        }
      }
      uint8_t alert = ngtcp2_conn_get_tls_alert(c->qc);
      set_err(c, "TLS handshake failed: %s",
              gnutls_alert_get_strname((gnutls_alert_description_t)alert)
                  ? gnutls_alert_get_strname((gnutls_alert_description_t)alert)
                  : "alert");
      if (c->ccerr.error_code == 0)
        ngtcp2_connection_close_error_set_transport_error_tls_alert(&c->ccerr, alert, NULL, 0);
    } else if (rv != LOCAL_CLOSE && c->ccerr.error_code == 0 &&
               c->ccerr.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT) {
      ngtcp2_connection_close_error_set_transport_error_liberr(&c->ccerr, rv, NULL, 0);
    }
    if (rv != LOCAL_CLOSE) set_err(c, "QUIC error: %s", ngtcp2_strerror(rv));
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->qc, NULL, &pi, c->close_pkt, sizeof(c->close_pkt),
                                                        &c->ccerr, now);
    if (n > 0) {
      c->close_len = (size_t)n;
      c->close_pending = 1;
    }
  }
  c->close_deadline = now + 3 * ngtcp2_conn_get_pto(c->qc);
  if (rv == NGTCP2_ERR_IDLE_CLOSE || rv == NGTCP2_ERR_DROP_CONN || rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT)
    c->close_deadline = now;
  sbhttp3_evq_push(c->q, SBH3_EV_CLOSED, c->id, -1, code);
}

/* ---- the HTTP/3 layer's hooks into QUIC (transports/native/sbhttp3.h) ---- */

/* Returns n consumed bytes to the stream and connection flow-control windows. */
static void consume(sbh3_conn *c, int64_t stream_id, size_t n) {
  ngtcp2_conn_extend_max_stream_offset(c->qc, stream_id, n);
  ngtcp2_conn_extend_max_offset(c->qc, n);
}

/*
 * Request streams a server credits back to its client at once. ngtcp2 sends MAX_STREAMS whenever
 * the limit grows: crediting each stream as it closes costs one ack-eliciting frame per request,
 * often in a datagram of its own that the client then acknowledges at once (its second
 * ack-eliciting packet). In batches the client still holds at least initial_max_streams_bidi − 15.
 */
#define STREAM_CREDIT_BATCH 16

/* A server's request stream closed: its credit goes back to the client with the batch. */
static void credit_request_stream(sbh3_conn *c) {
  if (++c->uncredited_streams < STREAM_CREDIT_BATCH) return;
  ngtcp2_conn_extend_max_streams_bidi(c->qc, c->uncredited_streams);
  c->uncredited_streams = 0;
}

static void hook_consumed(void *ctx, int64_t stream_id, size_t n) { consume(ctx, stream_id, n); }

static void hook_stop_reading(void *ctx, int64_t stream_id, uint64_t app_error) {
  ngtcp2_conn_shutdown_stream_read(((sbh3_conn *)ctx)->qc, stream_id, app_error);
}

static void hook_reset_writing(void *ctx, int64_t stream_id, uint64_t app_error) {
  ngtcp2_conn_shutdown_stream_write(((sbh3_conn *)ctx)->qc, stream_id, app_error);
}

static void hook_stream_closed(void *ctx, int64_t stream_id) {
  sbh3_conn *c = ctx;
  if (c->srv && ngtcp2_is_bidi_stream(stream_id)) credit_request_stream(c);
}

/* A stream goes: a response it held leaves the send queues sbh3_server_respond counted it in. */
static void hook_stream_freed(void *ctx, stream_t *s) {
  sbh3_conn *c = ctx;
  if (c->srv && s->out_len) {
    c->queued -= s->out_len;
    c->srv->queued -= s->out_len;
  }
}

static const sbhttp3_quic QUIC_HOOKS = {
    .consumed = hook_consumed,
    .stop_reading = hook_stop_reading,
    .reset_writing = hook_reset_writing,
    .stream_closed = hook_stream_closed,
    .stream_freed = hook_stream_freed,
};

/* Creates the HTTP/3 session and its control and QPACK streams (1-RTT keys, or 0-RTT on a resuming client). */
int setup_http(sbh3_conn *c) {
  if (c->h3.hc) return 0;
  if (ngtcp2_conn_get_max_local_streams_uni(c->qc) < 3) return -1;
  sbhttp3_init(&c->h3, c->srv != NULL, c->cfg->max_body, c->cfg->max_field_section, c->q, &QUIC_HOOKS, c);
  c->h3.conn_id = c->id;
  if (sbhttp3_start(&c->h3) != 0) return -1;
  if (c->srv) {
    const ngtcp2_transport_params *p = ngtcp2_conn_get_local_transport_params(c->qc);
    nghttp3_conn_set_max_client_streams_bidi(c->h3.hc, p->initial_max_streams_bidi);
  }
  int64_t ctrl, enc, dec;
  if (ngtcp2_conn_open_uni_stream(c->qc, &ctrl, NULL) != 0) return -1;
  if (nghttp3_conn_bind_control_stream(c->h3.hc, ctrl) != 0) return -1;
  if (ngtcp2_conn_open_uni_stream(c->qc, &enc, NULL) != 0) return -1;
  if (ngtcp2_conn_open_uni_stream(c->qc, &dec, NULL) != 0) return -1;
  if (nghttp3_conn_bind_qpack_streams(c->h3.hc, enc, dec) != 0) return -1;
  return 0;
}

/* ---- ngtcp2 callbacks ------------------------------------------------- */

/* ngtcp2: stream bytes, handed to nghttp3. */
static int q_recv_stream_data(ngtcp2_conn *qc, uint32_t flags, int64_t stream_id, uint64_t offset,
                              const uint8_t *data, size_t len, void *user_data, void *stream_user_data) {
  (void)qc;
  (void)offset;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  if (!c->h3.hc) return 0;
  nghttp3_ssize n = sbhttp3_read(&c->h3, stream_id, data, len, flags & NGTCP2_STREAM_DATA_FLAG_FIN,
                                 flags & NGTCP2_STREAM_DATA_FLAG_EARLY);
  if (n < 0) {
    ngtcp2_connection_close_error_set_application_error(&c->ccerr, nghttp3_err_infer_quic_app_error_code((int)n),
                                                        NULL, 0);
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  consume(c, stream_id, (size_t)n);
  return 0;
}

/* ngtcp2: the peer acknowledged stream bytes; nghttp3 may release them. */
static int q_acked_stream_data_offset(ngtcp2_conn *qc, int64_t stream_id, uint64_t offset, uint64_t len,
                                      void *user_data, void *stream_user_data) {
  (void)qc;
  (void)offset;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  c->acked += len;
  if (c->h3.hc && nghttp3_conn_add_ack_offset(c->h3.hc, stream_id, len) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

/* ngtcp2: a stream closed; tell nghttp3 (or grant a new stream when nghttp3 never knew it). */
static int q_stream_close(ngtcp2_conn *qc, uint32_t flags, int64_t stream_id, uint64_t app_error_code,
                          void *user_data, void *stream_user_data) {
  (void)qc;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) app_error_code = NGHTTP3_H3_NO_ERROR;
  if (!c->h3.hc) return 0;
  int rv = nghttp3_conn_close_stream(c->h3.hc, stream_id, app_error_code);
  if (rv == NGHTTP3_ERR_STREAM_NOT_FOUND) {
    if (c->srv && ngtcp2_is_bidi_stream(stream_id)) credit_request_stream(c);
    else if (!ngtcp2_is_bidi_stream(stream_id)) ngtcp2_conn_extend_max_streams_uni(c->qc, 1);
    return 0;
  }
  if (rv != 0) {
    ngtcp2_connection_close_error_set_application_error(&c->ccerr, nghttp3_err_infer_quic_app_error_code(rv), NULL,
                                                        0);
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

/* ngtcp2: the peer reset a stream; stop reading it. */
static int q_stream_reset(ngtcp2_conn *qc, int64_t stream_id, uint64_t final_size, uint64_t app_error_code,
                          void *user_data, void *stream_user_data) {
  (void)qc;
  (void)final_size;
  (void)app_error_code;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  if (c->h3.hc && nghttp3_conn_shutdown_stream_read(c->h3.hc, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

/* ngtcp2: we stopped reading a stream (STOP_SENDING went out); nghttp3 drops what it still has of it. */
static int q_stream_stop_sending(ngtcp2_conn *qc, int64_t stream_id, uint64_t app_error_code, void *user_data,
                                 void *stream_user_data) {
  return q_stream_reset(qc, stream_id, 0, app_error_code, user_data, stream_user_data);
}

/* ngtcp2: the peer opened a stream window; unblock nghttp3. */
static int q_extend_max_stream_data(ngtcp2_conn *qc, int64_t stream_id, uint64_t max_data, void *user_data,
                                    void *stream_user_data) {
  (void)qc;
  (void)max_data;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  if (c->h3.hc && nghttp3_conn_unblock_stream(c->h3.hc, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

/* ngtcp2: the client may open more streams; tell nghttp3. */
static int q_extend_max_remote_streams_bidi(ngtcp2_conn *qc, uint64_t max_streams, void *user_data) {
  (void)qc;
  sbh3_conn *c = user_data;
  if (c->h3.hc) nghttp3_conn_set_max_client_streams_bidi(c->h3.hc, max_streams);
  return 0;
}

/* ngtcp2: random bytes. */
static void q_rand(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx) {
  (void)ctx;
  rand_bytes(dest, len);
}

/* ngtcp2: a Retry came (client); counted, then the library's handler. */
static int q_recv_retry(ngtcp2_conn *qc, const ngtcp2_pkt_hd *hd, void *user_data) {
  ((sbh3_conn *)user_data)->st[SBH3_STAT_RETRIES]++;
  return ngtcp2_crypto_recv_retry_cb(qc, hd, user_data);
}

/* ngtcp2: a NEW_TOKEN came (client); kept (the last one) for sbh3_conn_token, and counted. */
static int q_recv_new_token(ngtcp2_conn *qc, const ngtcp2_vec *token, void *user_data) {
  (void)qc;
  sbh3_conn *c = user_data;
  c->st[SBH3_STAT_NEW_TOKENS]++;
  c->token.len = 0;
  return sbhttp3_buf_append(&c->token, token->base, token->len) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

/* ngtcp2: derive the next 1-RTT keys (once ahead at the start, then up to a PTO after each key update); counts the peer's updates. */
static int q_update_key(ngtcp2_conn *qc, uint8_t *rx_secret, uint8_t *tx_secret, ngtcp2_crypto_aead_ctx *rx_aead_ctx,
                        uint8_t *rx_iv, ngtcp2_crypto_aead_ctx *tx_aead_ctx, uint8_t *tx_iv,
                        const uint8_t *current_rx_secret, const uint8_t *current_tx_secret, size_t secretlen,
                        void *user_data) {
  sbh3_conn *c = user_data;
  if (c->key_derivations++ > 0 && !c->own_update) {
    c->st[SBH3_STAT_KEY_UPDATES]++; /* the peer's update (ours is counted when started) */
    if (c->srv) c->srv->st[SBH3_STAT_KEY_UPDATES]++;
  }
  c->own_update = 0;
  return ngtcp2_crypto_update_key_cb(qc, rx_secret, tx_secret, rx_aead_ctx, rx_iv, tx_aead_ctx, tx_iv,
                                     current_rx_secret, current_tx_secret, secretlen, user_data);
}

/* ngtcp2: a new connection id and its stateless reset token. */
static int q_get_new_connection_id(ngtcp2_conn *qc, ngtcp2_cid *cid, uint8_t *token, size_t cidlen,
                                   void *user_data) {
  (void)qc;
  sbh3_conn *c = user_data;
  rand_bytes(cid->data, cidlen);
  cid->datalen = cidlen;
  static uint8_t client_secret[32];
  const uint8_t *secret = c->srv ? c->srv->secret : client_secret;
  if (ngtcp2_crypto_generate_stateless_reset_token(token, secret, 32, cid) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  if (c->srv) cid_add(c, cid);
  return 0;
}

/* ngtcp2: a connection id retired. */
static int q_remove_connection_id(ngtcp2_conn *qc, const ngtcp2_cid *cid, void *user_data) {
  (void)qc;
  sbh3_conn *c = user_data;
  if (c->srv) cid_remove(c, cid);
  return 0;
}

/* The handshake completed: a server sends its ticket; a client whose 0-RTT was refused starts HTTP/3 again. 0 or -1. */
static int conn_handshake_done(sbh3_conn *c) {
  if (c->srv) {
    /* A ticket that cannot be sent only costs the client its next resumption. */
    if (c->cfg->ticket_lifetime) (void)gnutls_session_ticket_send(c->tls, 1, 0);
    return 0;
  }
  if (!c->early_attempt || (gnutls_session_get_flags(c->tls) & GNUTLS_SFLAGS_EARLY_DATA)) return 0;
  /* 0-RTT refused: drop what was sent early and start HTTP/3 again at 1-RTT; the caller resubmits. */
  if (ngtcp2_conn_early_data_rejected(c->qc) != 0) return -1;
  sbhttp3_stop(&c->h3);
  if (setup_http(c) != 0) return -1;
  sbhttp3_evq_push(c->q, SBH3_EV_EARLY_REJECTED, c->id, -1, 0);
  return 0;
}

int conn_handshake_completed(ngtcp2_conn *qc, void *user_data) {
  (void)qc;
  sbh3_conn *c = user_data;
  conn_handshake_over(c);
  if (conn_handshake_done(c) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  sbhttp3_evq_push(c->q, SBH3_EV_CONNECTED, c->id, -1, 0);
  return 0;
}

/* ngtcp2: new receive keys; set up HTTP/3 at the 1-RTT level. */
static int q_recv_rx_key(ngtcp2_conn *qc, ngtcp2_crypto_level level, void *user_data) {
  (void)qc;
  if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION) return 0;
  return setup_http(user_data) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

/* ngtcp2: new send keys (server); set up HTTP/3 at the 1-RTT level. */
static int q_recv_tx_key(ngtcp2_conn *qc, ngtcp2_crypto_level level, void *user_data) {
  return q_recv_rx_key(qc, level, user_data);
}

void fill_callbacks(ngtcp2_callbacks *cb, int is_server) {
  memset(cb, 0, sizeof(*cb));
  if (is_server) {
    cb->recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
    cb->recv_tx_key = q_recv_tx_key;
    cb->extend_max_remote_streams_bidi = q_extend_max_remote_streams_bidi;
    cb->remove_connection_id = q_remove_connection_id;
  } else {
    cb->client_initial = ngtcp2_crypto_client_initial_cb;
    cb->recv_retry = q_recv_retry;
    cb->recv_new_token = q_recv_new_token;
    cb->recv_rx_key = q_recv_rx_key;
  }
  cb->recv_crypto_data = tls_recv_crypto_data;
  cb->handshake_completed = conn_handshake_completed;
  cb->encrypt = ngtcp2_crypto_encrypt_cb;
  cb->decrypt = ngtcp2_crypto_decrypt_cb;
  cb->hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb->recv_stream_data = q_recv_stream_data;
  cb->acked_stream_data_offset = q_acked_stream_data_offset;
  cb->stream_close = q_stream_close;
  cb->rand = q_rand;
  cb->get_new_connection_id = q_get_new_connection_id;
  cb->update_key = q_update_key;
  cb->stream_reset = q_stream_reset;
  cb->extend_max_stream_data = q_extend_max_stream_data;
  cb->delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb->delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb->get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb->stream_stop_sending = q_stream_stop_sending;
  cb->version_negotiation = ngtcp2_crypto_version_negotiation_cb;
}

void fill_settings(ngtcp2_settings *s, ngtcp2_transport_params *p, const sbh3_config *cfg) {
  ngtcp2_settings_default(s);
  s->initial_ts = now_ns();
  s->max_window = 24u << 20;
  s->max_stream_window = 16u << 20;
  s->handshake_timeout = (uint64_t)cfg->handshake_ms * NGTCP2_MILLISECONDS;
  s->cc_algo = cc_algo(cfg->cc);
  /* Compatible version negotiation (RFC 9368): the server moves a client to a version it prefers. */
  s->preferred_versions = (uint32_t *)cfg->versions;
  s->preferred_versionslen = cfg->nversions;
  if (!cfg->is_server) {
    s->other_versions = (uint32_t *)cfg->versions;
    s->other_versionslen = cfg->nversions;
  }
  /*
   * Default (RFC 9000 §14): 1200-byte datagrams until ngtcp2's PMTUD has confirmed a larger size
   * (its probes go up to 1444 bytes), never above the peer's max_udp_payload_size. An explicit
   * size is a path MTU the caller knows: used once the peer's limit is known (see conn_write).
   */
  if (cfg->max_udp_payload) {
    s->max_tx_udp_payload_size = cfg->max_udp_payload;
    s->no_tx_udp_payload_size_shaping = 1;
    s->no_pmtud = 1;
  }
  ngtcp2_transport_params_default(p);
  /*
   * 16 MiB per request stream and per connection, as the h2 client's windows: with 1 MiB a 1 MiB
   * body (plus its framing) outgrew the stream window, and its last bytes waited a round trip for
   * MAX_STREAM_DATA (measured: +39 ms per 1 MiB GET at 50 ms RTT).
   */
  p->initial_max_stream_data_bidi_local = 16u << 20;
  p->initial_max_stream_data_bidi_remote = 16u << 20;
  p->initial_max_stream_data_uni = 1u << 20;
  p->initial_max_data = 16u << 20;
  p->initial_max_streams_bidi = 128;
  p->initial_max_streams_uni = 3;
  p->max_idle_timeout = (uint64_t)cfg->idle_ms * NGTCP2_MILLISECONDS;
  p->active_connection_id_limit = 7;
  p->max_udp_payload_size = cfg->max_recv_udp_payload;
}

void conn_destroy(sbh3_conn *c) {
  if (!c) return;
  conn_handshake_over(c);
  sbhttp3_stop(&c->h3);
  ngtcp2_conn_del(c->qc);
  if (c->tls) gnutls_deinit(c->tls);
  free(c->server_name);
  sbhttp3_buf_free(&c->ticket);
  sbhttp3_buf_free(&c->token);
  sbhttp3_evq_clear(&c->own_q);
  config_unref(c->cfg);
  free(c);
}

sbh3_conn *conn_alloc(sbh3_config *cfg) {
  sbh3_conn *c = calloc(1, sizeof(*c));
  if (!c) return NULL;
  c->cfg = cfg;
  cfg->refs++;
  c->q = &c->own_q;
  ngtcp2_path_storage_zero(&c->ps);
  ngtcp2_connection_close_error_default(&c->ccerr);
  return c;
}

/*
 * Datagrams one write pass may send: ngtcp2's send quantum (at least 10), scaled up when this
 * pass comes later than pacing asked for. The caller's timer has millisecond steps and wakes
 * 1-2 ms after a sub-millisecond deadline, so a fixed quantum per pass sent at about half the
 * pacing rate (measured: 45 datagrams every 2.15 ms against a 497 Mbit/s rate). The scale is
 * elapsed over planned interval, capped at 4, so the average rate follows ngtcp2's pacing.
 */
static size_t pass_budget(sbh3_conn *c, size_t max_payload, uint64_t now) {
  size_t quantum = ngtcp2_conn_get_send_quantum(c->qc) / max_payload;
  if (quantum < 10) quantum = 10;
  if (!c->paced_at || c->pace_due <= c->paced_at || now <= c->pace_due) return quantum;
  uint64_t planned = c->pace_due - c->paced_at, elapsed = now - c->paced_at;
  if (elapsed >= 4 * planned) return 4 * quantum;
  return (size_t)((double)quantum * (double)elapsed / (double)planned);
}

/*
 * Pacing pauses one pass may write through, in all. The caller's timer has millisecond steps, so a
 * pass that stops at its budget for a pause of microseconds resumes at the next datagram in or a
 * millisecond later: on a fast path (loopback: a budget of 10 datagrams is paced about 20 µs apart
 * once a loss halved the window) a 16 KiB answer of 12 datagrams went out as 10, then 2 after the
 * client's ACK, a round trip later. Pauses up to this sum are written through; a slower path's
 * (1 Gbit/s: 10 datagrams take 115 µs) still end the pass.
 */
#define PACE_WAIVE_NS (100 * NGTCP2_MICROSECONDS)

/*
 * Largest datagram c may write now. ngtcp2 caps it further at the peer's max_udp_payload_size and,
 * by default, at what PMTUD confirmed. An explicit size waits for the peer's limit: before it is
 * known (a client's first Initial) the datagram stays at 1200 bytes, padding included.
 */
static size_t conn_tx_cap(sbh3_conn *c) {
  if (c->cfg->max_udp_payload && !ngtcp2_conn_get_remote_transport_params(c->qc)) return NGTCP2_MAX_UDP_PAYLOAD_SIZE;
  return ngtcp2_conn_get_max_tx_udp_payload_size(c->qc);
}

/* Feeds one received datagram to c (a larger one than advertised is dropped); returns ngtcp2's result. */
int conn_read(sbh3_conn *c, const ngtcp2_path *path, const uint8_t *data, size_t len, uint8_t ecn, uint64_t now) {
  if (len > c->cfg->max_recv_udp_payload) {
    c->st[SBH3_STAT_DGRAMS_OVERSIZE]++;
    if (c->srv) c->srv->st[SBH3_STAT_DGRAMS_OVERSIZE]++;
    return 0;
  }
  conn_count(c, SBH3_STAT_DGRAMS_RECV, len);
  ngtcp2_pkt_info pi = {.ecn = c->cfg->no_ecn ? NGTCP2_ECN_NOT_ECT : ecn};
  if (pi.ecn) {
    c->st[SBH3_STAT_ECN_RECV]++;
    if (c->srv) c->srv->st[SBH3_STAT_ECN_RECV]++;
  }
  return ngtcp2_conn_read_pkt(c->qc, path, &pi, data, len, now);
}

/* Writes one datagram for c into out; returns its length, SBWIRE_ERR_DONE, or an error. */
int conn_write(sbh3_conn *c, uint8_t *out, size_t cap, uint64_t now, uint8_t *ecn) {
  if (ecn) *ecn = NGTCP2_ECN_NOT_ECT;
  if (c->close_pending) {
    c->close_pending = 0;
    if (cap < c->close_len) return SBWIRE_ERR_BUFFER_TOO_SHORT;
    memcpy(out, c->close_pkt, c->close_len);
    conn_count(c, SBH3_STAT_DGRAMS_SENT, c->close_len);
    return (int)c->close_len;
  }
  if (c->closed) return SBWIRE_ERR_DONE;
  size_t max_payload = conn_tx_cap(c);
  if (cap < max_payload) return SBWIRE_ERR_BUFFER_TOO_SHORT;
  if (c->burst == 0) c->burst_max = pass_budget(c, max_payload, now);
  if (c->burst >= c->burst_max) {
    ngtcp2_conn_update_pkt_tx_time(c->qc, now);
    uint64_t due = ngtcp2_conn_get_expiry(c->qc);
    uint64_t pause = due > now ? due - now : 0;
    c->burst = 0;
    /* A deadline already passed (a timer due now, not pacing) ends the pass, for the caller to run it. */
    if (pause == 0 || c->pace_waived + pause > PACE_WAIVE_NS) {
      c->drain_expired = 0;
      c->paced_at = now;
      c->pace_due = due;
      c->pace_waived = 0;
      return SBWIRE_ERR_DONE;
    }
    /* A pause far shorter than the caller's timer step: the next pass would come much later than due. */
    c->pace_waived += pause;
    c->burst_max = pass_budget(c, max_payload, now);
  }
  for (;;) {
    int64_t sid = -1;
    int fin = 0;
    nghttp3_vec vec[16];
    nghttp3_ssize nvec = 0;
    if (c->h3.hc && ngtcp2_conn_get_max_data_left(c->qc)) {
      nvec = nghttp3_conn_writev_stream(c->h3.hc, &sid, &fin, vec, 16);
      if (nvec < 0) {
        ngtcp2_connection_close_error_set_application_error(
            &c->ccerr, nghttp3_err_infer_quic_app_error_code((int)nvec), NULL, 0);
        conn_fail(c, NGTCP2_ERR_INTERNAL);
        return conn_write(c, out, cap, now, ecn);
      }
    }
    uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
    ngtcp2_ssize ndatalen = -1;
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n = ngtcp2_conn_writev_stream(c->qc, NULL, &pi, out, max_payload, &ndatalen, flags, sid,
                                               (const ngtcp2_vec *)vec, (size_t)nvec, now);
    if (n < 0) {
      switch (n) {
      case NGTCP2_ERR_STREAM_DATA_BLOCKED:
        nghttp3_conn_block_stream(c->h3.hc, sid);
        continue;
      case NGTCP2_ERR_STREAM_SHUT_WR:
        nghttp3_conn_shutdown_stream_write(c->h3.hc, sid);
        continue;
      case NGTCP2_ERR_WRITE_MORE:
        if (nghttp3_conn_add_write_offset(c->h3.hc, sid, (size_t)ndatalen) != 0) {
          conn_fail(c, NGTCP2_ERR_INTERNAL);
          return conn_write(c, out, cap, now, ecn);
        }
        continue;
      default:
        conn_fail(c, (int)n);
        return conn_write(c, out, cap, now, ecn);
      }
    }
    if (ndatalen >= 0 && nghttp3_conn_add_write_offset(c->h3.hc, sid, (size_t)ndatalen) != 0) {
      conn_fail(c, NGTCP2_ERR_INTERNAL);
      return conn_write(c, out, cap, now, ecn);
    }
    if (n == 0) {
      ngtcp2_conn_update_pkt_tx_time(c->qc, now);
      /*
       * A pacing time under a millisecond ahead never holds a datagram back (ngtcp2 allows that much
       * overhead) but stays the connection's expiry until the expiry handler clears it, so the
       * caller's timer would fire at once for nothing. Run the handler once per pass, then write
       * what it may have scheduled (an ACK, a probe).
       */
      if (!c->drain_expired && ngtcp2_conn_get_expiry(c->qc) <= now + NGTCP2_MILLISECONDS) {
        c->drain_expired = 1;
        int rv = ngtcp2_conn_handle_expiry(c->qc, now);
        if (rv != 0) {
          conn_fail(c, rv);
          return conn_write(c, out, cap, now, ecn);
        }
        continue;
      }
      c->drain_expired = 0;
      c->burst = 0;
      c->paced_at = 0;
      c->pace_waived = 0;
      return SBWIRE_ERR_DONE;
    }
    c->burst++;
    conn_count(c, SBH3_STAT_DGRAMS_SENT, (size_t)n);
    if (ecn && !c->cfg->no_ecn && pi.ecn) {
      *ecn = (uint8_t)pi.ecn;
      c->st[SBH3_STAT_ECN_SENT]++;
      if (c->srv) c->srv->st[SBH3_STAT_ECN_SENT]++;
    }
    return (int)n;
  }
}

/* End of c's current stall period, UINT64_MAX when nothing is queued. */
static uint64_t stall_deadline(sbh3_conn *c) {
  if (!c->queued) return UINT64_MAX;
  return c->progress_at + (uint64_t)c->cfg->stall_ms * NGTCP2_MILLISECONDS;
}

uint64_t conn_deadline(sbh3_conn *c) {
  if (c->closed) return c->srv ? c->close_deadline : UINT64_MAX;
  uint64_t d = ngtcp2_conn_get_expiry(c->qc), stall = stall_deadline(c);
  return stall < d ? stall : d;
}


void conn_expire(sbh3_conn *c, uint64_t now) {
  if (c->closed) return;
  if (stall_deadline(c) <= now && c->acked >= STALL_MIN_ACKED) {
    c->progress_at = now; /* enough progress: a new period */
    c->acked = 0;
  } else if (stall_deadline(c) <= now) {
    char why[128];
    snprintf(why, sizeof(why), "Send stalled: under %d bytes of queued responses acknowledged in %u ms",
             STALL_MIN_ACKED, (unsigned)c->cfg->stall_ms);
    close_locally(c, NGHTTP3_H3_EXCESSIVE_LOAD, why);
    return;
  }
  if (ngtcp2_conn_get_expiry(c->qc) > now) return;
  int rv = ngtcp2_conn_handle_expiry(c->qc, now);
  if (rv != 0) conn_fail(c, rv);
}


/* Closes c with an H3 error code: an established connection sends an application close, else it is just dropped. */
void close_locally(sbh3_conn *c, uint64_t app_code, const char *why) {
  ngtcp2_connection_close_error_set_application_error(&c->ccerr, app_code, NULL, 0);
  set_err(c, "%s", why);
  if (ngtcp2_conn_get_handshake_completed(c->qc)) {
    conn_fail(c, LOCAL_CLOSE);
  } else {
    c->closed = 1;
    conn_handshake_over(c);
    c->close_deadline = now_ns();
    sbhttp3_evq_push(c->q, SBH3_EV_CLOSED, c->id, -1, SBWIRE_ERR_CLOSED);
  }
}

/* Copies up to n counters of st (with c's live path fields when c is given) into out; returns how many. */
int stats_copy(const uint64_t *st, sbh3_conn *c, uint64_t queued, uint64_t *out, size_t n) {
  if (!out) return SBWIRE_ERR_INVALID;
  if (n > SBH3_STAT_COUNT) n = SBH3_STAT_COUNT;
  memcpy(out, st, n * sizeof(*out));
  if (n > SBH3_STAT_QUEUED_BYTES) out[SBH3_STAT_QUEUED_BYTES] = queued;
  if (c && n > SBH3_STAT_PATH_MAX_PAYLOAD)
    out[SBH3_STAT_PATH_MAX_PAYLOAD] = ngtcp2_conn_get_path_max_tx_udp_payload_size(c->qc);
  if (c && n > SBH3_STAT_VERSION) out[SBH3_STAT_VERSION] = ngtcp2_conn_get_negotiated_version(c->qc);
  if (c && n > SBH3_STAT_PEER_MAX_PAYLOAD) {
    const ngtcp2_transport_params *p = ngtcp2_conn_get_remote_transport_params(c->qc);
    out[SBH3_STAT_PEER_MAX_PAYLOAD] = p ? p->max_udp_payload_size : 0;
  }
  return (int)n;
}

uint64_t sbh3_conn_peer_max_streams_bidi(sbh3_conn *conn) {
  if (!conn || !conn->qc) return 0;
  const ngtcp2_transport_params *tp = ngtcp2_conn_get_remote_transport_params(conn->qc);
  return tp ? tp->initial_max_streams_bidi : 0;
}
